import Foundation

/// Everything one download decides about the answer it gets, as a pure value: whether a head is a
/// file to read (whole, or the rest of one being resumed), a redirect, a "not modified", or an
/// error; whether the body stays within its limits; and whether the end is a whole file. No socket,
/// file or thread: ``Transfer`` feeds it events and carries out what it says.
///
/// Phases: `waiting` for a head → `body` (reading) → `ended`; any event after the end is ignored,
/// and a failure ends it at once.
struct TransferStateMachine: Sendable {
    /// What was asked, which decides what an answer may be.
    struct Request: Sendable {
        var url: URL
        /// The first byte asked for with `Range` (resuming), if any.
        var resumingFrom: Int64?
        /// The validator sent with `If-Range` (resuming): a `206` of another version is refused.
        var resumeValidator: String? = nil
        /// Whether `If-None-Match`/`If-Modified-Since` was sent (a 304 is then an answer).
        var conditional: Bool
        /// The entity tag sent with `If-None-Match`: a `304` naming another is not an answer.
        var revalidatedETag: String? = nil
        /// The most bytes the file may have, decoded; `nil` for no limit.
        var maximumSize: Int64?
        /// Whether the limit is the media folder's size limit (the error says which to raise).
        var limitIsFolderSize = false
        /// Whether the transport removes content codings itself (then the sink never decodes them).
        var transportDecodes: Bool
    }

    /// How to read the body of a head taken.
    struct BodyPlan: Sendable, Equatable {
        /// Codings to undo, as applied by the server.
        var codings: [ResponseHead.Coding]
        /// Write after the bytes already in the file (a 206 continuing a resume), or from the start.
        var append: Bool
        /// The file's whole length when it is known (an unencoded length, or a range's total).
        var expectedTotal: Int64?
        /// The validator to resume with if this body is cut short: an identity body with a strong
        /// `ETag` or a `Last-Modified`.
        var resumeValidator: String?
        /// `ETag` and `Last-Modified`, kept to revalidate the file later.
        var etag: String?
        var lastModified: String?
    }

    /// What a head means.
    enum HeadDecision: Sendable {
        case readBody(BodyPlan)
        case notModified
        case redirect(location: String)
        case failed(any Error)
    }

    /// How the download ended.
    enum Outcome: Sendable, Equatable {
        /// The file is whole: its length.
        case file(size: Int64)
        case notModified
        case redirect(location: String)
    }

    enum Phase: Sendable {
        case waiting
        case body(BodyPlan, status: Int, rawLength: Int64?)
        case ended
    }

    let request: Request
    private(set) var phase = Phase.waiting
    /// Bytes the transport delivered (still encoded).
    private(set) var rawReceived: Int64 = 0
    /// Bytes of the file, decoded, including those already there when resuming.
    private(set) var fileSize: Int64 = 0
    private var result: Result<Outcome, any Error>?

    init(request: Request) {
        self.request = request
    }

    /// The final outcome once decided (a failure may be decided before the transport ends).
    var decided: Result<Outcome, any Error>? { result }

    // MARK: Events

    /// The response head.
    mutating func head(status: Int, fields: [HTTPField]) -> HeadDecision {
        guard case .waiting = phase else { return .failed(AsyncMediaError.malformedResponse(request.url, reason: "a second head")) }
        let (decision, head) = decide(status: status, fields: fields)
        switch decision {
        case .readBody(let plan):
            // A transport that decodes hands over decoded bytes: a coded body's length is not theirs.
            let rawLength = request.transportDecodes && head?.codings.isEmpty == false ? nil : head?.contentLength
            phase = .body(plan, status: status, rawLength: rawLength)
            fileSize = plan.append ? (request.resumingFrom ?? 0) : 0
        case .notModified:
            phase = .ended
            result = .success(.notModified)
        case .redirect(let location):
            phase = .ended
            result = .success(.redirect(location: location))
        case .failed(let error):
            fail(error)
        }
        return decision
    }

    /// `count` bytes arrived from the transport (before decoding); an error when there are more
    /// than the head announced, or when no head came first. (The size limit is checked on the
    /// decoded bytes, ``willWrite(_:)``.)
    mutating func received(raw count: Int) -> (any Error)? {
        if case .waiting = phase {
            // A transport of one's own that breaks DownloadSink's order: such bytes belong to no
            // body, and written they would become the start of the file.
            let error = AsyncMediaError.malformedResponse(request.url, reason: "a body before its head (the transport broke DownloadSink's order)")
            fail(error)
            return error
        }
        guard case .body(_, _, let rawLength) = phase else { return nil }
        rawReceived = Saturating.add(rawReceived, Int64(count))
        if let rawLength, rawReceived > rawLength {
            let error = AsyncMediaError.malformedResponse(request.url, reason: "a body longer than its Content-Length \(rawLength)")
            fail(error)
            return error
        }
        return nil
    }

    /// `count` decoded bytes are about to be written; an error when the file would exceed its limit.
    mutating func willWrite(_ count: Int) -> (any Error)? {
        // Nothing is written outside a body: before its head, or after the transfer was decided.
        guard case .body = phase else {
            if case .failure(let error) = result { return error }
            return AsyncMediaError.malformedResponse(request.url, reason: "bytes to write outside a body")
        }
        let next = Saturating.add(fileSize, Int64(count))
        if let error = checkSize(next) { return error }
        fileSize = next
        return nil
    }

    /// The transport ended: `transportError` is how, `decodingError` whether the decoder found its
    /// streams whole. Returns the outcome.
    mutating func end(transportError: (any Error)?, decodingError: (any Error)?) -> Result<Outcome, any Error> {
        if let result { return result }
        defer { phase = .ended }
        if let transportError {
            return finish(.failure(transportError))
        }
        guard case .body(let plan, _, let rawLength) = phase else {
            return finish(.failure(AsyncMediaError.noResponse(request.url)))
        }
        if let decodingError {
            return finish(.failure(decodingError))
        }
        if let rawLength, rawReceived != rawLength {
            return finish(.failure(AsyncMediaError.incompleteBody(received: rawReceived, expected: rawLength, url: request.url)))
        }
        if let expected = plan.expectedTotal, fileSize != expected {
            return finish(.failure(AsyncMediaError.incompleteBody(received: fileSize, expected: expected, url: request.url)))
        }
        return finish(.success(.file(size: fileSize)))
    }

    /// Fails now (a limit, a disk error, a cancel); later events change nothing.
    mutating func fail(_ error: any Error) {
        guard result == nil else { return }
        result = .failure(error)
        phase = .ended
    }

    /// The plan of the body being read, if one is.
    var plan: BodyPlan? {
        if case .body(let plan, _, _) = phase { return plan }
        return nil
    }

    // MARK: Deciding

    /// What the head means, and the head as read (`nil` if it could not be).
    private func decide(status: Int, fields: [HTTPField]) -> (HeadDecision, ResponseHead?) {
        let url = request.url
        let head: ResponseHead
        do {
            head = try ResponseHead(status: status, fields: fields)
        } catch {
            switch error {
            case .unsupportedCoding: return (.failed(AsyncMediaError.malformedResponse(url, reason: error.description)), nil)
            case .malformed(let reason): return (.failed(AsyncMediaError.malformedResponse(url, reason: reason)), nil)
            }
        }
        return (decide(status: status, head: head), head)
    }

    private func decide(status: Int, head: ResponseHead) -> HeadDecision {
        let url = request.url
        switch status {
        case 200, 203:
            return readBody(head, append: false)
        case 206:
            guard let from = request.resumingFrom, let range = head.contentRange, range.first == from else {
                return .failed(AsyncMediaError.httpStatus(206, url: url))  // a part nobody asked for
            }
            // A server that ignores `If-Range` (some caches do) sends the rest of another version:
            // appended to the part kept, it would be cached as whole. Told by its validator.
            // The same for a part of an encoded body, which cannot be decoded from its middle: the
            // part kept is of the file's bytes as they are (only such a body is resumed).
            if let sent = request.resumeValidator, !Self.isSameVersion(sent: sent, head: head) || !head.codings.isEmpty {
                return .failed(AnotherVersion(url: url))
            }
            return readBody(head, append: true)
        case 304 where request.conditional:
            // RFC 9111 §4.3.4: a 304 whose validator is not the stored one must not renew it (a
            // server that says "not modified" to everything after its file changed).
            if let sent = request.revalidatedETag, let named = head.value("etag"), !Self.isWeaklyEqual(sent, named) {
                return .failed(AnotherVersion(url: url))
            }
            return .notModified
        case 301, 302, 303, 307, 308:
            guard let location = head.value("location"), !location.isEmpty else { return .failed(AsyncMediaError.httpStatus(status, url: url)) }
            return .redirect(location: location)
        case 429, 503:
            let delay = head.value("retry-after").flatMap { Transfer.delay(retryAfter: $0) }
            return .failed(AsyncMediaError.unavailable(status: status, url: url, retryAfter: delay))
        default:
            return .failed(AsyncMediaError.httpStatus(status, url: url))
        }
    }

    /// An answer about a version other than the one asked about: a `206` continuing another file
    /// than the part kept (the download starts over), or a `304` naming another `ETag` than the
    /// file kept (it is fetched again, unconditionally).
    struct AnotherVersion: Error, CustomStringConvertible {
        let url: URL
        var description: String { "the server answered about another version of \(RedactedURL.shown(url))" }
    }

    /// Whether a `206` is of the version `sent` with `If-Range` named: its entity tag, or its
    /// `Last-Modified` date. One it does not name is taken: the server honoured `If-Range`, as it must.
    static func isSameVersion(sent: String, head: ResponseHead) -> Bool {
        if sent.hasPrefix("\"") {
            return head.value("etag").map { $0 == sent } ?? true
        }
        guard let date = head.value("last-modified"), date != sent else { return true }
        guard let sentDate = HTTPDate.parse(sent), let headDate = HTTPDate.parse(date) else { return false }
        return sentDate == headDate
    }

    /// Whether two entity tags are weakly equal (RFC 9110 §8.8.3.2): the same but for `W/`.
    static func isWeaklyEqual(_ one: String, _ other: String) -> Bool {
        func opaque(_ tag: String) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag) }
        return opaque(one) == opaque(other)
    }

    private func readBody(_ head: ResponseHead, append: Bool) -> HeadDecision {
        let codings = request.transportDecodes ? [] : head.codings
        let identity = head.codings.isEmpty
        var expected: Int64?
        if append, let range = head.contentRange {
            expected = range.total ?? Saturating.add(range.last, 1)
        } else if identity, !head.hasTransferEncoding {
            expected = head.contentLength
        }
        if let expected, let error = checkSize(expected) { return .failed(error) }
        let etag = head.value("etag")
        let lastModified = head.value("last-modified")
        // If-Range needs a strong validator; a weak ETag cannot resume.
        let strongETag = etag.flatMap { $0.hasPrefix("W/") ? nil : $0 }
        let validator = identity ? (strongETag ?? lastModified) : nil
        return .readBody(BodyPlan(
            codings: codings, append: append, expectedTotal: expected, resumeValidator: validator, etag: etag, lastModified: lastModified
        ))
    }

    private func checkSize(_ size: Int64) -> (any Error)? {
        guard let maximum = request.maximumSize, size > maximum else { return nil }
        return AsyncMediaError.tooLarge(request.url, limit: maximum)
    }

    private mutating func finish(_ outcome: Result<Outcome, any Error>) -> Result<Outcome, any Error> {
        result = outcome
        return outcome
    }
}
