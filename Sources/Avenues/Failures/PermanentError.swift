import Foundation

/// An error that trying again the same way cannot mend — a `404`, a URL that cannot be requested, a
/// body over the size limit. An ``Avenue`` does not load a key again by itself after such a failure
/// (its row is `.failed` with no `retryAt`); ``Avenue/retry(at:)`` still does, at once.
///
/// ``AsyncMediaError`` conforms: a `4xx` status other than 408, 421, 425 and 429 is permanent, as
/// are a URL that cannot be fetched, too many redirects, a refused redirect, a body over the limit
/// and an invalid header. Fetch closures can throw their own conforming errors:
///
/// ```swift
/// struct APIError: PermanentError {
///     let status: Int
///     var isPermanent: Bool { (400..<500).contains(status) && status != 429 }
/// }
/// ```
public protocol PermanentError: Error {
    /// Whether this failure is permanent (a type may have failures of both kinds).
    var isPermanent: Bool { get }
}

extension Error {
    /// `true` for failures that trying again the same way cannot mend: a ``PermanentError`` that
    /// says so, and a `URLError` for a URL that cannot be requested (bad or unsupported, a file that
    /// does not exist or is a folder). A connectivity failure, a timeout or a `5xx` never is.
    public var isPermanentFailure: Bool {
        if let permanent = self as? any PermanentError { return permanent.isPermanent }
        guard let urlError = self as? URLError else { return false }
        switch urlError.code {
        case .badURL, .unsupportedURL, .fileDoesNotExist, .fileIsDirectory:
            return true
        default:
            return false
        }
    }
}
