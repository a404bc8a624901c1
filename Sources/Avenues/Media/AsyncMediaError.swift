import Foundation

/// Why ``AsyncMedia`` could not provide a file. Nothing is cached when this is thrown.
///
/// Network failures below HTTP (the host cannot be found or reached, the connection drops, no byte
/// arrives within ``DownloadLimits/idleTimeout``) are `URLError`s, as from URLSession, so
/// `Error.isSilenceable` treats them as "offline".
public enum AsyncMediaError: Error, Hashable, CustomStringConvertible {
    /// Only `http`, `https` and `file` URLs can be requested.
    case unsupportedScheme(URL)
    /// The server did not answer with the whole file: a status other than 200 or 203 (a 206 partial
    /// or 204 empty answer is never the file).
    case httpStatus(Int, url: URL)
    /// The body ended before the length the server announced (`Content-Length`, a range's total),
    /// or before its compressed stream did (`expected` `nil`).
    case incompleteBody(received: Int64, expected: Int64?, url: URL)
    /// The transfer ended without an HTTP response.
    case noResponse(URL)
    /// The server's answer could not be read as HTTP (a malformed head, chunk or length).
    case malformedResponse(URL, reason: String)
    /// The download took longer than ``DownloadLimits/totalTimeout``.
    case tookTooLong(URL, limit: Duration)
    /// The body is larger than ``DownloadLimits/maximumSize``.
    case tooLarge(URL, limit: Int64)
    /// The file could not be written into the media folder (disk full, no permission, the folder
    /// unusable); `reason` says which.
    case cannotStore(URL, reason: DiskStorageError)
    /// The server is busy or rate-limiting (429 or 503) and said when to come back, if it did
    /// (`Retry-After`, at most a day). Until then, requests for the URL fail with this error
    /// without asking it.
    case unavailable(status: Int, url: URL, retryAfter: Duration?)
    /// The URL cannot be fetched as it is (a port outside 1–65535, no host); `reason` says why.
    case invalidURL(URL, reason: String)
    /// The server redirected more than ``AsyncMedia/maximumRedirects`` times in a row.
    case tooManyRedirects(URL, count: Int)
    /// A redirect that AsyncMedia's `allowsRedirect` refused (it leaves what may be fetched).
    case redirectRefused(from: URL, to: URL)
    /// A header given to `AsyncMedia(headers:)` is not one HTTP field (a name that is not a token, a
    /// value with a line break or another control character); no download is started until it is
    /// mended, so it can never write a field of its own into a request.
    case invalidHeader(name: String, reason: String)

    /// What happened and what to do.
    public var description: String {
        switch self {
        case .unsupportedScheme(let url):
            "Cannot download \(RedactedURL.shown(url)): only http, https and file URLs are supported."
        case .httpStatus(206, let url):
            "The server answered 206 (part of the file) for \(RedactedURL.shown(url)); a partial answer is never cached. Check that the request sends no Range header."
        case .httpStatus(204, let url):
            "The server answered 204 (no content) for \(RedactedURL.shown(url)): there is no file to cache."
        case .httpStatus(let status, let url):
            "The server answered \(status) for \(RedactedURL.shown(url)); nothing was cached. Check the URL, or try again later for a 5xx status."
        case .incompleteBody(let received, let expected?, let url):
            "The download of \(RedactedURL.shown(url)) ended after \(received) of \(expected) bytes; nothing was cached. Try again."
        case .incompleteBody(let received, nil, let url):
            "The download of \(RedactedURL.shown(url)) ended after \(received) bytes, before its compressed stream did; nothing was cached. Try again."
        case .noResponse(let url):
            "No HTTP response for \(RedactedURL.shown(url)); nothing was cached. Try again."
        case .malformedResponse(let url, let reason):
            "The server's answer for \(RedactedURL.shown(url)) is not valid HTTP (\(reason)); nothing was cached."
        case .tookTooLong(let url, let limit):
            "The download of \(RedactedURL.shown(url)) took longer than \(limit) and was stopped; raise DownloadLimits.totalTimeout for larger files."
        case .tooLarge(let url, let limit):
            "The body of \(RedactedURL.shown(url)) is larger than \(limit) bytes and was not downloaded; raise DownloadLimits.maximumSize (or AsyncMedia's sizeLimit, which also bounds one file) if it is expected."
        case .invalidURL(let url, let reason):
            "Cannot download \(RedactedURL.shown(url)): \(reason). Check the URL."
        case .invalidHeader(let name, let reason):
            "The header \(name.debugDescription) given to AsyncMedia(headers:) cannot be sent: \(reason). Give names that are HTTP tokens and values without line breaks or control characters."
        case .redirectRefused(let from, let to):
            "\(RedactedURL.shown(from)) redirects to \(RedactedURL.shown(to)), which is not followed here; nothing was cached. Give the URL it should be read from."
        case .tooManyRedirects(let url, let count):
            "\(RedactedURL.shown(url)) redirected \(count) times without reaching a file; nothing was cached. Check the URL, or the server's redirects."
        case .cannotStore(let url, let reason):
            "\(RedactedURL.shown(url)) could not be stored in the media folder: " + reason.mediaAdvice
        case .unavailable(let status, let url, let retryAfter):
            "The server answered \(status) for \(RedactedURL.shown(url)) (busy or rate-limited); "
                + (retryAfter.map { "it asked to wait \($0) before trying again." } ?? "try again later.")
        }
    }
}

extension AsyncMediaError: RetryAfterError {
    /// How long the server asked to wait (`.unavailable` with a `Retry-After`).
    public var retryAfter: Duration? {
        if case .unavailable(_, _, let retryAfter) = self { return retryAfter }
        return nil
    }
}

extension AsyncMediaError: PermanentError {
    /// Whether asking again cannot give the file: a `4xx` status but 408 (timeout), 421 (another
    /// connection), 425 (too early) and 429 (rate limit); a URL that cannot be fetched; too many or a
    /// refused redirect; a body over the limit; an invalid header. Statuses `5xx`, short or malformed
    /// bodies, timeouts and a folder that cannot store are not.
    public var isPermanent: Bool {
        switch self {
        case .httpStatus(let status, _):
            return (400 ..< 500).contains(status) && ![408, 421, 425, 429].contains(status)
        case .unsupportedScheme, .invalidURL, .tooManyRedirects, .redirectRefused, .tooLarge, .invalidHeader:
            return true
        case .incompleteBody, .noResponse, .malformedResponse, .tookTooLong, .cannotStore, .unavailable:
            return false
        }
    }
}

extension DiskStorageError {
    /// What to do, phrased for ``AsyncMedia``'s folder.
    var mediaAdvice: String {
        let cause = code.map { " (\(call ?? "system call"): \(FileSystem.message(for: $0)))" } ?? ""
        switch reason {
        case .diskFull: return "no space left on \(path)\(cause). Free some space or lower AsyncMedia's sizeLimit."
        case .permissionDenied: return "permission denied for \(path)\(cause). Choose a folder you can write to with AsyncMedia(directory:)."
        case .folderUnavailable, .unsafeFolder:
            // `cause` is already " (call: message)"; it was wrapped in a second pair: "( (lstat: …))".
            let why = detail.map { " (\($0))" } ?? cause
            return "the folder \(path) cannot be used\(why). Choose another with AsyncMedia(directory:)."
        default: return "\(description)"
        }
    }
}
