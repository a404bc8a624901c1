/// The head of an HTTP/1.x response (status line and header fields), parsed from bytes a server sent.
///
/// Bounded and forgiving in the ways real servers need (obsolete line folding is refused, `LF` alone
/// ends a line, header names are case-insensitive), strict where a hostile or broken server could
/// make us misread the body (conflicting lengths, a length that is not a number).
struct HTTPHead: Equatable {
    /// The most bytes a head may take; more is a broken or hostile server.
    static let maximumSize = 64 * 1024

    var version: String
    var status: Int
    /// Header fields in order, names lowercased.
    var fields: [(name: String, value: String)]

    static func == (lhs: HTTPHead, rhs: HTTPHead) -> Bool {
        lhs.version == rhs.version && lhs.status == rhs.status
            && lhs.fields.map(\.name) == rhs.fields.map(\.name) && lhs.fields.map(\.value) == rhs.fields.map(\.value)
    }

    /// Why a head could not be used.
    enum Failure: Error, Equatable {
        case tooLarge
        case malformed(String)
    }

    /// The value of the first field called `name` (lowercase).
    func value(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// How the body ends, per RFC 9112 §6.3.
    enum BodyFraming: Equatable {
        case none
        case length(Int64)
        case chunked
        /// Until the server closes the connection: a body cut short cannot be told from a whole one.
        case untilClose
    }

    /// The body's framing for a response to a GET.
    func bodyFraming() throws(Failure) -> BodyFraming {
        if (100..<200).contains(status) || status == 204 || status == 304 { return .none }
        if let encoding = value("transfer-encoding") {
            let codings = encoding.lowercased().split(separator: ",").map { $0.trimmingSpaces() }
            guard codings.last == "chunked" else { return .untilClose }
            return .chunked
        }
        let lengths = fields.filter { $0.name == "content-length" }.flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingSpaces() }
        guard let first = lengths.first else { return .untilClose }
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.allSatisfy({ (48...57).contains($0) }),
              let length = Int64(first)
        else { throw .malformed("Content-Length \(lengths.joined(separator: ", "))") }
        return .length(length)
    }

    /// Finds the end of a head in `bytes` (`CRLF CRLF` or `LF LF`); returns the offset just past it.
    static func end(in bytes: UnsafeRawBufferPointer) -> Int? {
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x0A {
                if index + 1 < bytes.count, bytes[index + 1] == 0x0A { return index + 2 }
                if index + 2 < bytes.count, bytes[index + 1] == 0x0D, bytes[index + 2] == 0x0A { return index + 3 }
            }
            index += 1
        }
        return nil
    }

    /// Parses a complete head (everything up to and including the empty line).
    init(parsing bytes: UnsafeRawBufferPointer) throws(Failure) {
        guard bytes.count <= Self.maximumSize else { throw .tooLarge }
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line -> Substring.UTF8View.SubSequence in
            let text = line.last == 0x0D ? line.dropLast() : line[...]
            return Substring(decoding: text, as: UTF8.self).utf8[...]
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let statusLine = lines.first.map({ String(decoding: $0, as: UTF8.self) }) else { throw .malformed("empty response") }
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].utf8.count == 3,
              let status = Int(parts[1]), (100...999).contains(status)
        else { throw .malformed("status line \(statusLine.prefix(80).debugDescription)") }
        version = String(parts[0])
        self.status = status
        fields = []
        for line in lines.dropFirst() {
            guard let first = line.first, first != 0x20, first != 0x09 else {
                throw .malformed("folded header line")  // obsolete line folding (RFC 9112 §5.2)
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon != line.startIndex else {
                throw .malformed("header line without a name")
            }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            guard name.utf8.allSatisfy(Self.isTokenByte) else { throw .malformed("header name \(name.prefix(40).debugDescription)") }
            let value = String(decoding: line[line.index(after: colon)...], as: UTF8.self).trimmingSpaces()
            fields.append((name.lowercased(), value))
        }
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}

extension StringProtocol {
    /// The text without spaces and tabs at either end (ASCII only, no Foundation).
    func trimmingSpaces() -> String {
        var view = Substring(self).utf8[...]
        while let first = view.first, first == 0x20 || first == 0x09 { view = view.dropFirst() }
        while let last = view.last, last == 0x20 || last == 0x09 { view = view.dropLast() }
        return String(decoding: view, as: UTF8.self)
    }
}
