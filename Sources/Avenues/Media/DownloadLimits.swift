/// When ``AsyncMedia`` gives up on a download: a server that stops sending, a body that never ends,
/// a file larger than wanted. A download stopped by a limit caches nothing and fails with
/// ``AsyncMediaError``.
public struct DownloadLimits: Sendable, Hashable {
    /// The longest wait for the next byte (including connecting and the response's head); 60 seconds
    /// by default, like URLSession's request timeout.
    public var idleTimeout: Duration
    /// The longest a whole download may take, or `nil` for no limit; one hour by default, so a body
    /// that never ends (a stream, a broken server) cannot hold a download slot for ever.
    public var totalTimeout: Duration?
    /// The largest body accepted in bytes, or `nil` (the default) for no limit. The transfer stops as
    /// soon as the body exceeds it (or its `Content-Length` announces more).
    public var maximumSize: Int64?

    /// Creates limits; every parameter has the default described on its property.
    public init(idleTimeout: Duration = .seconds(60), totalTimeout: Duration? = .seconds(3_600), maximumSize: Int64? = nil) {
        precondition(idleTimeout > .zero, "DownloadLimits.idleTimeout must be positive")
        precondition(totalTimeout.map { $0 > .zero } ?? true, "DownloadLimits.totalTimeout must be positive")
        precondition(maximumSize.map { $0 >= 0 } ?? true, "DownloadLimits.maximumSize must not be negative")
        self.idleTimeout = idleTimeout
        self.totalTimeout = totalTimeout
        self.maximumSize = maximumSize
    }

    /// 60 s idle, one hour in all, no size limit.
    public static let `default` = DownloadLimits()
}
