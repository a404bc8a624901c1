/// How many runs an ``AutoProcessor`` may start per second: a token bucket for back ends with
/// quotas (an API allowing 10 requests a second, say).
///
/// The bucket holds up to `burst` starts and refills at `runsPerSecond`. A worker that picks up a
/// job when the bucket is empty waits for its turn before the work starts; turns are handed out in
/// the order jobs are picked, and jobs are picked by priority, so visible work still goes first
/// (a prefetch that already has its turn keeps it). A job cancelled while it waits never starts
/// and uses no turn after it. The limit is per processor: two processors with the same limit
/// may together start twice as many runs.
///
/// ```swift
/// let api = AutoProcessor(maxConcurrent: 4, rateLimit: RateLimit(runsPerSecond: 10)) { (id: Int) in
///     try await fetchItem(id)
/// }
/// ```
public struct RateLimit: Sendable {
    /// Starts per second, once the burst is spent.
    public let runsPerSecond: Double
    /// Starts allowed at once after a quiet spell; at least 1.
    public let burst: Int
    /// Makes the bucket a processor keeps, on the clock given to ``init(runsPerSecond:burst:clock:)``.
    @usableFromInline let makeBucket: @Sendable () -> any RunStartGate

    /// A limit of `runsPerSecond` starts, allowing `burst` at once.
    ///
    /// - Parameters:
    ///   - runsPerSecond: at least 0.000001 (one start in about 11 days) and finite; 0.5 is one start
    ///     every 2 seconds.
    ///   - burst: starts allowed at once when the bucket is full; 1 by default, at most 1,000,000.
    ///   - clock: the clock of the waits; the continuous clock by default (tests pass one they
    ///     move by hand).
    public init<C: Clock<Duration>>(runsPerSecond: Double, burst: Int = 1, clock: C = ContinuousClock()) {
        precondition(runsPerSecond >= 0.000_001 && runsPerSecond.isFinite, "RateLimit.runsPerSecond must be finite and at least 0.000001")
        precondition((1...1_000_000).contains(burst), "RateLimit.burst must be between 1 and 1,000,000")
        self.runsPerSecond = runsPerSecond
        self.burst = burst
        let interval = Duration.seconds(1 / runsPerSecond)
        makeBucket = { TokenBucket(clock: clock, interval: interval, burst: burst) }
    }
}

/// What a worker awaits before starting a job's work.
@usableFromInline
protocol RunStartGate: Sendable {
    /// Returns when the next run may start; throws `CancellationError` if the task is cancelled
    /// while waiting (the turn is then given back when nobody took a later one).
    func waitForTurn() async throws
}

/// A token bucket as a "theoretical arrival time" (GCRA): each start moves `due` one interval on;
/// a start may go once `due` is no further ahead than the burst allows. Taking a turn is one
/// locked step, so turns are handed out in the order they are asked.
final class TokenBucket<C: Clock<Duration>>: RunStartGate {
    private let clock: C
    private let interval: Duration
    /// How far `due` may run ahead of now with starts still going at once.
    private let tolerance: Duration
    private let due: Locked<C.Instant?> = Locked(nil)

    init(clock: C, interval: Duration, burst: Int) {
        self.clock = clock
        self.interval = interval
        self.tolerance = interval * (burst - 1)
    }

    func waitForTurn() async throws {
        try Task.checkCancellation()
        let now = clock.now
        let (start, taken) = due.withLock { due -> (C.Instant, C.Instant) in
            let from = max(due ?? now, now)
            let start = max(now, from.advanced(by: .zero - tolerance))
            due = from.advanced(by: interval)
            return (start, from)
        }
        guard start > now else { return }
        do {
            try await Saturating.sleep(until: start, on: clock)
        } catch {
            // Give the turn back if it is still the last one handed out.
            due.withLock { due in
                if due == taken.advanced(by: interval) { due = taken }
            }
            throw error
        }
    }
}
