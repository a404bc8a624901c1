/// How an ``Avenue`` retries a key whose load failed, so a list over a failing back end does not
/// hammer it: a key that failed is not loaded again by ``Avenue/prepareItem(for:at:priority:)``
/// (which a prefetcher calls on every key press) until its wait is over.
///
/// - The wait doubles with each consecutive failure of the key, from `base` up to `cap`, with a
///   random `jitter` so rows that failed together do not retry together.
/// - An error that says when to come back (``RetryAfterError``: an HTTP 429 or 503 with
///   `Retry-After`) sets the wait instead (up to an hour).
/// - A connectivity failure (the host cannot be found or reached, the connection was lost) makes the
///   whole avenue wait as "offline": while offline, only one load at a time is tried (when the wait
///   is over), and the first one that succeeds ends it, so rows load again as soon as connectivity
///   returns — without a retry storm before.
/// - After `attempts` consecutive failures a key is only tried again by ``Avenue/retry(at:)``; after
///   a permanent one (``PermanentError``: a `404`, a URL that cannot be fetched), at once.
///
/// ``Avenue/retry(at:)`` retries at once, whatever the wait. Failures are never cached as values.
public struct RetryPolicy: Sendable, Hashable {
    /// Consecutive failures after which a key is retried only by ``Avenue/retry(at:)``; 8 by default.
    public var attempts: Int
    /// The wait after the first failure; 1 second by default.
    public var base: Duration
    /// The longest wait; 60 seconds by default.
    public var cap: Duration
    /// The random share of each wait, either way (0.2: between 80 % and 120 %); 0.2 by default.
    public var jitter: Double

    /// Creates a policy; every parameter has the default described on its property. Waits longer
    /// than about 31,700 years are taken as that long (they mean "never"); a negative wait or a
    /// `cap` below `base` is a programming error.
    public init(attempts: Int = 8, base: Duration = .seconds(1), cap: Duration = .seconds(60), jitter: Double = 0.2) {
        precondition(attempts >= 1, "RetryPolicy.attempts must be at least 1")
        precondition(base >= .zero && cap >= base, "RetryPolicy needs 0 <= base <= cap")
        precondition((0...1).contains(jitter), "RetryPolicy.jitter must be between 0 and 1")
        self.attempts = attempts
        self.base = Saturating.clamped(base)
        self.cap = Saturating.clamped(cap)
        self.jitter = jitter
    }

    /// 8 attempts, waits from 1 s doubling up to 60 s, ±20 % jitter.
    public static let `default` = RetryPolicy()

    /// No waiting: every prepare of a failed row tries again (no protection for the back end).
    public static let immediately = RetryPolicy(attempts: .max, base: .zero, cap: .zero, jitter: 0)

    /// The wait after the `failures`-th consecutive failure; `random` in 0...1 picks the jitter.
    @usableFromInline
    func wait(afterFailure failures: Int, random: Double) -> Duration {
        let exponent = Double(min(max(failures - 1, 0), 62))
        // Fields set after init may hold anything: the arithmetic is done on doubles and clamped.
        let seconds = min(Saturating.seconds(cap), Saturating.seconds(base) * _exp2(exponent))
        return Saturating.duration(seconds: seconds * (1 + jitter * (2 * random - 1)))
    }
}

@usableFromInline
func _exp2(_ exponent: Double) -> Double {
    var result = 1.0
    for _ in 0..<Int(exponent) { result *= 2 }
    return result
}
