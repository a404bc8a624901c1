import Foundation

/// A small seeded generator, so randomized tests replay the same operations on every run. One
/// copy for the package's test targets (the Examples and the Benchmarks, other packages, keep their own).
///
/// `AVENUES_TEST_SEED=N` (unset: 0) moves every seed, so that a loop over `N` runs each randomized
/// test on other operations — a soak, outside CI — and the same `N` replays what it found.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    /// The shift `AVENUES_TEST_SEED` asks for; 0 without it (or with a value that is not a number).
    public static let shift: UInt64 = ProcessInfo.processInfo.environment["AVENUES_TEST_SEED"].flatMap { UInt64($0) } ?? 0

    public init(seed: UInt64) { state = seed &+ Self.shift &* 0xD1B5_4A32_D192_ED03 }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
