import Foundation

/// An error a fetch throws to say "serve the cached copy instead": a multiplexer that has a copy in
/// memory or on disk returns it, of any age, and the caller never sees the error.
///
/// Connectivity failures (`URLError` not connected, cannot find or connect to host, connection lost,
/// timed out, secure connection failed) are treated the same way without wrapping.
///
/// ```swift
/// let profile = Multiplexer<Profile>(cacheKey: "profile") {
///     guard reachable else { throw SilenceableError() }
///     return try await api.profile()
/// }
/// ```
public struct SilenceableError: Error, CustomStringConvertible {
    /// The error behind this one, thrown to the caller when there is no cached copy to serve.
    public let underlying: (any Error)?

    /// Wraps `underlying`, if any.
    public init(_ underlying: (any Error)? = nil) {
        self.underlying = underlying
    }

    /// A description of the underlying error.
    public var description: String {
        underlying.map { "silenceable: \($0)" } ?? "silenceable error"
    }
}

extension Error {
    /// `true` for errors after which a multiplexer serves its cached copy: ``SilenceableError`` and
    /// connectivity `URLError`s.
    public var isSilenceable: Bool {
        if self is SilenceableError { return true }
        guard let urlError = self as? URLError else { return false }
        switch urlError.code {
        case .notConnectedToInternet, .cannotFindHost, .cannotConnectToHost, .networkConnectionLost,
             .timedOut, .secureConnectionFailed, .dnsLookupFailed:
            return true
        default:
            return false
        }
    }

    /// What to throw when a silenceable error has no cached copy to fall back on: the wrapped error.
    @usableFromInline
    var unwrappingSilenceable: any Error {
        (self as? SilenceableError)?.underlying ?? self
    }
}
