import Foundation

/// The two clocks a multiplexer reads: a monotonic one for the age of memory copies (immune to the
/// wall clock being changed) and the wall clock for disk copies (whose age must survive a restart).
/// Replace them in tests to control time.
public struct MuxClock: Sendable {
    /// Reads the clock that ages memory copies: it never jumps when the wall clock is set, and it
    /// counts time the machine sleeps (`ContinuousClock`). A test returns instants it moves by hand.
    public var monotonic: @Sendable () -> ContinuousClock.Instant
    /// Reads the clock that dates disk copies: the only one whose readings mean the same after a
    /// restart. A test returns dates it moves by hand.
    public var wall: @Sendable () -> Date

    /// A clock from two time sources; use ``system`` unless a test needs to control time.
    public init(monotonic: @escaping @Sendable () -> ContinuousClock.Instant, wall: @escaping @Sendable () -> Date) {
        self.monotonic = monotonic
        self.wall = wall
    }

    /// The system's clocks: `ContinuousClock` and `Date()`.
    public static let system = MuxClock(monotonic: { .now }, wall: { Date() })
}
