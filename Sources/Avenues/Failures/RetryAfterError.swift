/// An error that says how long to wait before trying again — an HTTP 429 or 503 answer with a
/// `Retry-After` header. ``Avenue`` waits that long before loading the key again, and the
/// multiplexers do not fetch the key before then. Fetch closures can throw their own conforming
/// errors.
public protocol RetryAfterError: Error {
    /// How long to wait, if the server said.
    var retryAfter: Duration? { get }
}

extension Error {
    /// How long the error asks to wait before trying again, at most an hour.
    @usableFromInline
    var retryDelay: Duration? {
        (self as? any RetryAfterError)?.retryAfter.map { min(max($0, .zero), .seconds(3_600)) }
    }
}
