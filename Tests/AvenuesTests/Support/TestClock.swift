/// A monotonic clock the test moves by hand, as `ContinuousClock.Instant`s.
final class TestClock: Sendable {
    private let offset = Shared(Duration.zero)
    private let start = ContinuousClock.now

    var now: ContinuousClock.Instant { start + offset.value }

    func advance(by duration: Duration) { offset.withLock { $0 += duration } }
}
