import Foundation

/// The two clocks a multiplexer reads: a monotonic one for the age of memory copies (immune to the
/// wall clock being changed) and the wall clock for disk copies (whose age must survive a restart).
/// Replace them in tests to control time.
public struct MuxClock: Sendable {
    /// The monotonic clock.
    public var monotonic: @Sendable () -> ContinuousClock.Instant
    /// The wall clock.
    public var wall: @Sendable () -> Date

    /// A clock from two time sources.
    public init(monotonic: @escaping @Sendable () -> ContinuousClock.Instant, wall: @escaping @Sendable () -> Date) {
        self.monotonic = monotonic
        self.wall = wall
    }

    /// The system's clocks: `ContinuousClock` and `Date()`.
    public static let system = MuxClock(monotonic: { .now }, wall: { Date() })
}
