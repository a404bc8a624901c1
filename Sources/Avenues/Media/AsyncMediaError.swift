import Foundation

/// Why ``AsyncMedia`` could not provide a file. Nothing is cached when this is thrown.
public enum AsyncMediaError: Error, Hashable, CustomStringConvertible {
    /// Only `http`, `https` and `file` URLs can be requested.
    case unsupportedScheme(URL)
    /// The server answered with a status outside 200–299.
    case httpStatus(Int, url: URL)
    /// The body ended before the length the server announced (`Content-Length`).
    case incompleteBody(received: Int64, expected: Int64, url: URL)
    /// The transfer ended without an HTTP response.
    case noResponse(URL)

    /// What happened and what to do.
    public var description: String {
        switch self {
        case .unsupportedScheme(let url):
            "Cannot download \(url): only http, https and file URLs are supported."
        case .httpStatus(let status, let url):
            "The server answered \(status) for \(url); nothing was cached. Check the URL, or try again later for a 5xx status."
        case .incompleteBody(let received, let expected, let url):
            "The download of \(url) ended after \(received) of \(expected) bytes; nothing was cached. Try again."
        case .noResponse(let url):
            "No HTTP response for \(url); nothing was cached. Try again."
        }
    }
}

/// How far a download has come.
public struct DownloadProgress: Sendable, Hashable, CustomStringConvertible {
    /// Bytes received so far.
    public var received: Int64
    /// Bytes expected in all (the `Content-Length`), if the server said.
    public var expected: Int64?
    /// Whether the file is complete and in the cache.
    public var isComplete: Bool

    /// Creates a progress value.
    public init(received: Int64, expected: Int64?, isComplete: Bool) {
        self.received = received
        self.expected = expected
        self.isComplete = isComplete
    }

    /// `received / expected`, when the size is known.
    public var fractionCompleted: Double? {
        guard let expected, expected > 0 else { return isComplete ? 1 : nil }
        return Double(received) / Double(expected)
    }

    /// "12345 of 67890 bytes".
    public var description: String {
        "\(received) of \(expected.map(String.init) ?? "?") bytes\(isComplete ? ", complete" : "")"
    }
}
