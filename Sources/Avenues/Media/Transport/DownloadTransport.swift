import Foundation

/// A header field of a request or a response, as sent (names compare case-insensitively).
public struct HTTPField: Sendable, Hashable, CustomStringConvertible {
    /// The field's name.
    public var name: String
    /// The field's value.
    public var value: String

    /// A field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `Name: value`.
    public var description: String { "\(name): \(value)" }

    /// Why the field cannot be sent as one line of a request head, if it cannot: a name that is
    /// not an HTTP token (RFC 9110 §5.6.2), or a value with a control character other than a tab (a
    /// line break in it would start a field of its own).
    var problem: String? {
        if name.isEmpty { return "the name is empty" }
        let token = name.utf8.allSatisfy { byte in
            (0x30 ... 0x39).contains(byte) || (0x41 ... 0x5A).contains(byte) || (0x61 ... 0x7A).contains(byte) || Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
        if !token { return "the name holds a character an HTTP field name cannot (a space, a colon, a control character or one beyond ASCII)" }
        if value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            return "the value holds a line break or another control character"
        }
        return nil
    }
}

/// One GET that ``AsyncMedia`` asks a ``DownloadTransport`` to make. Its headers are final: a
/// transport sends them as they are and adds only what its protocol needs (`Host`, `User-Agent`),
/// follows no redirect, and decodes no content coding unless it says it does
/// (``DownloadTransport/decodesContentCodings``).
public struct DownloadRequest: Sendable {
    /// The URL, `http` or `https`.
    public var url: URL
    /// The header fields to send.
    public var headers: [HTTPField]
    /// The limits of the download: a transport may use `idleTimeout` for connecting (``AsyncMedia``
    /// enforces every limit itself whatever the transport does).
    public var limits: DownloadLimits

    /// A request.
    public init(url: URL, headers: [HTTPField], limits: DownloadLimits) {
        self.url = url
        self.headers = headers
        self.limits = limits
    }
}

/// Where a transport delivers one response. ``AsyncMedia`` makes one per request; a transport calls
/// it from one thread at a time, in this order: ``head(status:fields:)`` once (never for a 1xx or a
/// proxy's `CONNECT` answer), ``body(_:)`` for each piece of the body, then ``end(_:)`` exactly
/// once — also when the request failed before any head, or was cancelled. A transport that breaks
/// the order fails the download with ``AsyncMediaError/malformedResponse(_:reason:)`` — body bytes
/// before the head, a second head — and never has what it sent cached; calls after ``end(_:)`` are
/// ignored. Calls from two threads at once are taken one at a time where they touch the file
/// (the order of such pieces is then the transport's guess).
public protocol DownloadSink: AnyObject, Sendable {
    /// The final response's head: its status and every header field, in order. `false` asks the
    /// transport to stop (then it calls ``end(_:)`` and nothing else).
    func head(status: Int, fields: [HTTPField]) -> Bool

    /// A piece of the body, after transfer framing (`chunked`) was removed, still in its content
    /// and transfer codings (`gzip`) unless the transport decodes them. `false` asks the transport
    /// to stop.
    func body(_ bytes: UnsafeRawBufferPointer) -> Bool

    /// The response is over: `nil` when the body ended as its framing says (a length reached, a
    /// last chunk, or the end of the connection for a body without either), else why it did not.
    func end(_ error: (any Error)?)
}

/// How ``AsyncMedia`` moves bytes: starts a request, delivers its head and body into a sink, and
/// stops when told. Everything else — what is cached, decoding and checking the body, redirects and
/// which headers cross them, resume and revalidation, limits, de-duplication and scheduling — is
/// AsyncMedia's, the same on every transport.
///
/// The rules a transport keeps: it frames bodies by RFC 9112 (a length, chunks, or the end of the
/// connection) and reports a body cut short as an error, never as an end; it follows no redirect;
/// a ``DownloadHandle/cancel()`` returns at once, from any thread, and the transport then ends the
/// sink promptly; one download never makes other traffic wait. AsyncMedia never asks a transport of
/// yours to start a request from inside one of its calls to a sink (the request that follows a
/// transfer's end is started from a task), so `start` may take a lock held around sink calls.
///
/// On Linux the default is ``CurlTransport`` (libcurl, loaded at run time); on Apple platforms,
/// `URLSessionTransport`.
public protocol DownloadTransport: Sendable {
    /// Whether bodies arrive with their content codings already removed (URLSession decodes `gzip`
    /// itself; libcurl is asked not to, so that AsyncMedia can check the stream is whole).
    var decodesContentCodings: Bool { get }

    /// Starts `request` and returns at once; the response is delivered into `sink`.
    func start(_ request: DownloadRequest, into sink: any DownloadSink) -> DownloadHandle
}

/// Stops a transfer a ``DownloadTransport`` started.
public struct DownloadHandle: Sendable {
    private let stop: @Sendable () -> Void

    /// A handle that runs `stop` when cancelled.
    public init(cancel stop: @escaping @Sendable () -> Void) {
        self.stop = stop
    }

    /// Stops the transfer: returns at once, from any thread; the transport ends the sink soon after.
    public func cancel() {
        stop()
    }
}

/// A transport that fails every request with `error`: what AsyncMedia falls back to on Linux when
/// libcurl cannot be loaded, so each download says what to install instead of trapping.
struct FailingTransport: DownloadTransport {
    let error: any Error & Sendable

    var decodesContentCodings: Bool { false }

    func start(_ request: DownloadRequest, into sink: any DownloadSink) -> DownloadHandle {
        sink.end(error)
        return DownloadHandle {}
    }
}
