/// What a response head says, read strictly where a misreading would cache wrong bytes: every
/// `Transfer-Encoding` and `Content-Encoding` field (not only the first), lengths that must agree,
/// a `Content-Length` that must be a number.
struct ResponseHead: Sendable, Equatable {
    /// A coding ``AsyncMedia`` decodes (with zlib); any other is refused rather than cached encoded.
    enum Coding: Sendable, Equatable {
        case gzip
        case deflate
    }

    /// Why a head cannot be used.
    enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case unsupportedCoding(String)

        var description: String {
            switch self {
            case .malformed(let reason): reason
            case .unsupportedCoding(let coding): "a body in the coding \(coding.prefix(40).debugDescription), which cannot be decoded here"
            }
        }
    }

    var status: Int
    var fields: [HTTPField]
    /// The codings applied to the body, in the order the server applied them (content codings,
    /// then transfer codings), without `identity` and `chunked`.
    var codings: [Coding] = []
    /// Whether a `Transfer-Encoding` field was sent (then `Content-Length` is ignored, RFC 9112 §6.3).
    var hasTransferEncoding = false
    /// The body's length on the wire, when `Content-Length` says it and no transfer coding does.
    var contentLength: Int64?
    /// For a 206 with a usable `Content-Range`: the first byte, the last byte and the whole length
    /// (`nil` for `*`).
    var contentRange: (first: Int64, last: Int64, total: Int64?)?

    static func == (lhs: ResponseHead, rhs: ResponseHead) -> Bool {
        lhs.status == rhs.status && lhs.fields == rhs.fields
    }

    init(status: Int, fields: [HTTPField]) throws(Failure) {
        self.status = status
        self.fields = fields
        var content: [Coding] = []
        var transfer: [Coding] = []
        var chunked = 0
        for element in Self.elements("transfer-encoding", in: fields) {
            hasTransferEncoding = true
            guard chunked == 0 else { throw .malformed("Transfer-Encoding has a coding after chunked") }
            switch element {
            case "chunked": chunked += 1
            case "identity": continue
            default: transfer.append(try Self.coding(element))
            }
        }
        for element in Self.elements("content-encoding", in: fields) where element != "identity" {
            content.append(try Self.coding(element))
        }
        codings = content + transfer
        let lengths = Self.elements("content-length", in: fields, keepEmpty: true)
        if let first = lengths.first, !hasTransferEncoding {
            guard lengths.allSatisfy({ $0 == first }) else {
                throw .malformed("Content-Length \(lengths.prefix(4).joined(separator: ", ")) (conflicting lengths)")
            }
            guard let length = Self.number(first) else { throw .malformed("Content-Length \(first.prefix(40).debugDescription)") }
            contentLength = length
        }
        if status == 206 { contentRange = value("content-range").flatMap(Self.contentRange) }
    }

    /// The first field called `name` (any case), trimmed.
    func value(_ name: String) -> String? {
        fields.first { Self.isNamed($0.name, name) }?.value.trimmingSpaces()
    }

    /// Whether a field's `name` is `lowercased` in any case, without lowercasing a copy (every
    /// lookup of every head did: about fifty allocations per response).
    static func isNamed(_ name: String, _ lowercased: String) -> Bool {
        guard name.utf8.count == lowercased.utf8.count else { return false }
        func equal(_ byte: UInt8, _ lower: UInt8) -> Bool { (0x41...0x5A).contains(byte) ? byte | 0x20 == lower : byte == lower }
        // Both in place where they can be (native strings always): zipping the two views was the
        // head's costliest step.
        let inPlace = name.utf8.withContiguousStorageIfAvailable { bytes in
            lowercased.utf8.withContiguousStorageIfAvailable { lowers in
                for index in 0..<bytes.count where !equal(bytes[index], lowers[index]) { return false }
                return true
            }
        }
        if let inPlace = inPlace ?? nil { return inPlace }
        return zip(name.utf8, lowercased.utf8).allSatisfy(equal)
    }

    /// The elements of every field called `name`, comma-separated, trimmed and lowercased; empty
    /// ones are dropped unless `keepEmpty` (an empty `Content-Length` is an error, not an absence).
    static func elements(_ name: String, in fields: [HTTPField], keepEmpty: Bool = false) -> [String] {
        var elements: [String] = []
        for field in fields where isNamed(field.name, name) {
            // Most values are one element already trimmed and lowercase (`Content-Length: 1234`):
            // taken as they are, without splitting and copying.
            if !field.value.utf8.contains(where: { $0 == UInt8(ascii: ",") || $0 == 0x20 || $0 == 0x09 || (0x41...0x5A).contains($0) }) {
                if keepEmpty || !field.value.isEmpty { elements.append(field.value) }
                continue
            }
            for element in field.value.split(separator: ",", omittingEmptySubsequences: false) {
                let element = element.trimmingSpaces().asciiLowercased()
                if keepEmpty || !element.isEmpty { elements.append(element) }
            }
        }
        return elements
    }

    static func coding(_ name: String) throws(Failure) -> Coding {
        switch name {
        case "gzip", "x-gzip": .gzip
        case "deflate": .deflate
        default: throw .unsupportedCoding(name)
        }
    }

    /// A decimal number of at most 18 digits (never traps, never reads a sign or a space).
    static func number(_ text: String) -> Int64? {
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// `bytes first-last/total` (or `/*`), with first ≤ last < total.
    static func contentRange(_ text: String) -> (first: Int64, last: Int64, total: Int64?)? {
        let lowered = text.asciiLowercased()
        guard lowered.hasPrefix("bytes ") else { return nil }
        let rest = lowered.dropFirst(6).trimmingSpaces()
        let halves = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = number(String(bounds[0])), let last = number(String(bounds[1])), first <= last else { return nil }
        if halves[1] == "*" { return (first, last, nil) }
        guard let total = number(String(halves[1])), last < total else { return nil }
        return (first, last, total)
    }
}

/// The header lines of one response as libcurl hands them over, a line at a time: informational
/// (1xx) heads are skipped, the final head is returned once, and trailer fields after it are
/// ignored. Strict where a server could make the head mean two things (folded lines, a name that is
/// not a token), bounded in size.
struct HeaderBlockParser {
    /// The most bytes of header lines taken, all heads together; more is a broken or hostile server.
    static let maximumSize = 64 * 1024

    private var status: Int?
    private var fields: [HTTPField] = []
    private var size = 0
    private(set) var isComplete = false

    /// Takes one line (with or without its line break); returns the final head when `line` ends it.
    mutating func take(_ line: UnsafeRawBufferPointer) throws(ResponseHead.Failure) -> (status: Int, fields: [HTTPField])? {
        if isComplete { return nil }  // trailer fields of a chunked body
        size += line.count
        guard size <= Self.maximumSize else { throw .malformed("response heads over \(Self.maximumSize / 1024) KiB") }
        var end = line.count
        if end > 0, line[end - 1] == 0x0A { end -= 1 }
        if end > 0, line[end - 1] == 0x0D { end -= 1 }
        let text = UnsafeRawBufferPointer(rebasing: line[0..<end])
        guard let status else {
            if text.isEmpty { return nil }  // stray blank line before a status line
            self.status = try Self.statusCode(text)
            fields.reserveCapacity(16)  // grown from empty, a usual head of 8 fields was 4 allocations
            return nil
        }
        if text.isEmpty {
            if (100..<200).contains(status) {
                self.status = nil  // 100 Continue, 103 Early Hints: the final head follows
                fields = []
                return nil
            }
            isComplete = true
            return (status, fields)
        }
        guard let first = text.first, first != 0x20, first != 0x09 else {
            throw .malformed("a folded header line")  // obsolete line folding (RFC 9112 §5.2)
        }
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { throw .malformed("a header line without a name") }
        let name = UnsafeRawBufferPointer(rebasing: text[0..<colon])
        guard name.allSatisfy(Self.isTokenByte) else {
            throw .malformed("the header name \(String(decoding: name, as: UTF8.self).prefix(40).debugDescription)")
        }
        var valueStart = colon + 1
        var valueEnd = text.count
        while valueStart < valueEnd, text[valueStart] == 0x20 || text[valueStart] == 0x09 { valueStart += 1 }
        while valueEnd > valueStart, text[valueEnd - 1] == 0x20 || text[valueEnd - 1] == 0x09 { valueEnd -= 1 }
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: text[valueStart..<valueEnd]), as: UTF8.self)
        fields.append(HTTPField(name: String(decoding: name, as: UTF8.self), value: value))
        return nil
    }

    /// The code of `HTTP/1.1 200 OK`, `HTTP/2 200`.
    static func statusCode(_ line: UnsafeRawBufferPointer) throws(ResponseHead.Failure) -> Int {
        // `HTTP/…`, one space, three digits, then the end or a space; read from the bytes.
        let space = line.firstIndex(of: 0x20) ?? line.count
        let digits = space + 1
        let isDigit = { (byte: UInt8) in (0x30...0x39).contains(byte) }
        if line.starts(with: "HTTP/".utf8), digits + 3 <= line.count, isDigit(line[digits]), isDigit(line[digits + 1]),
           isDigit(line[digits + 2]), digits + 3 == line.count || line[digits + 3] == 0x20 {
            let code = Int(line[digits] - 0x30) * 100 + Int(line[digits + 1] - 0x30) * 10 + Int(line[digits + 2] - 0x30)
            if (100...599).contains(code) { return code }
        }
        throw .malformed("the status line \(String(decoding: line, as: UTF8.self).prefix(80).debugDescription)")
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        // !#$%&'*+-.^_`|~ (an array literal here allocated once per byte of every header name)
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: return true
        default: return false
        }
    }
}

extension StringProtocol {
    /// The text with A–Z lowercased and nothing else: HTTP compares tokens in ASCII case only
    /// (Unicode lowercasing turns the Kelvin sign U+212A into `k`).
    func asciiLowercased() -> String {
        String(decoding: Substring(self).utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// The text without spaces and tabs at either end (ASCII only, no Foundation).
    func trimmingSpaces() -> String {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        var view = Substring(self).utf8[...]
        if let first = view.first, let last = view.last, !isSpace(first), !isSpace(last) { return String(self) }  // no copy of a String
        while let first = view.first, isSpace(first) { view = view.dropFirst() }
        while let last = view.last, isSpace(last) { view = view.dropLast() }
        return String(decoding: view, as: UTF8.self)
    }
}
