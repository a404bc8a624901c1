/// When ``AsyncMedia`` gives up on a download: a server that stops sending, a body that never ends,
/// a file larger than wanted. A download stopped by a limit caches nothing and fails with
/// ``AsyncMediaError``.
///
/// Every value is checked however it is set (the initializer or a property): a time limit longer
/// than about 31,700 years is taken as that long ("never"); zero or a negative one, or a negative
/// size, is a programming error.
public struct DownloadLimits: Sendable, Hashable {
    /// The longest wait for the next byte (including connecting and the response's head); 60 seconds
    /// by default, like URLSession's request timeout.
    public var idleTimeout: Duration {
        get { _idleTimeout }
        set { _idleTimeout = Self.checked(newValue, "idleTimeout") }
    }

    /// The longest a whole download may take, or `nil` for no limit; one hour by default, so a body
    /// that never ends (a stream, a broken server) cannot hold a download slot for ever.
    public var totalTimeout: Duration? {
        get { _totalTimeout }
        set { _totalTimeout = newValue.map { Self.checked($0, "totalTimeout") } }
    }

    /// The largest body accepted in bytes, or `nil` (the default) for no limit. The transfer stops as
    /// soon as the body exceeds it (or its `Content-Length` announces more), counting the bytes
    /// written to the file, after any decoding.
    public var maximumSize: Int64? {
        get { _maximumSize }
        set {
            precondition(newValue.map { $0 >= 0 } ?? true, "DownloadLimits.maximumSize must not be negative")
            _maximumSize = newValue
        }
    }

    private var _idleTimeout: Duration
    private var _totalTimeout: Duration?
    private var _maximumSize: Int64?

    /// Creates limits; every parameter has the default described on its property.
    public init(idleTimeout: Duration = .seconds(60), totalTimeout: Duration? = .seconds(3_600), maximumSize: Int64? = nil) {
        _idleTimeout = Self.checked(idleTimeout, "idleTimeout")
        _totalTimeout = totalTimeout.map { Self.checked($0, "totalTimeout") }
        precondition(maximumSize.map { $0 >= 0 } ?? true, "DownloadLimits.maximumSize must not be negative")
        _maximumSize = maximumSize
    }

    /// 60 s idle, one hour in all, no size limit.
    public static let `default` = DownloadLimits()

    private static func checked(_ duration: Duration, _ name: String) -> Duration {
        precondition(duration > .zero, "DownloadLimits.\(name) must be positive")
        return Saturating.clamped(duration)
    }
}
