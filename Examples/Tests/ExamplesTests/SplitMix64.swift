import Foundation

/// A small seeded generator, so the randomized tests replay the same inputs on every run.
///
/// The same generator as the main package's tests (a test target cannot import another package's
/// tests). `AVENUES_TEST_SEED=N` (unset: 0) moves every seed, so `.ci/soak` runs these tests on
/// other inputs, and the same `N` replays what it found.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    /// The shift `AVENUES_TEST_SEED` asks for; 0 without it (or with a value that is not a number).
    static let shift: UInt64 = ProcessInfo.processInfo.environment["AVENUES_TEST_SEED"].flatMap { UInt64($0) } ?? 0

    init(seed: UInt64) { state = seed &+ Self.shift &* 0xD1B5_4A32_D192_ED03 }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
