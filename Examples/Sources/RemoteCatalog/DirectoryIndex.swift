import Foundation

/// One entry of an HTTP folder index.
public struct IndexEntry: Sendable, Hashable, Codable {
    /// The name, percent-decoded, as shown: one path segment, never `.` or `..`, never containing
    /// `/` (bytes that are not UTF-8 appear as replacement characters).
    public var name: String
    /// The name as the index's link had it (percent-encoded): what the entry's URL is made of.
    public var encoded: String
    /// Whether it is a folder.
    public var isFolder: Bool
    /// The size in bytes, when the index gives it exactly (nginx; not Apache's "1.2K", not Python).
    public var size: Int64?

    /// An entry; `encoded` defaults to `name` percent-encoded.
    public init(name: String, encoded: String? = nil, isFolder: Bool, size: Int64?) {
        self.name = name
        // ":" too: a first segment with a colon would read as a URL scheme ("http:elsewhere").
        self.encoded = encoded ?? (name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#;:"))) ?? name)
        self.isFolder = isFolder
        self.size = size
    }

    /// The key entries sort by: a folder as `name/`, so a crawl in this order lists files in the
    /// order of their paths (what `browse` does for a local folder). Compared by UTF-8 bytes.
    var sortKey: [UInt8] { Array(name.utf8) + (isFolder ? [0x2F] : []) }
}

/// Reads the folder index pages of the common servers: nginx `autoindex` (HTML, and JSON with
/// `autoindex_format json`), Apache `mod_autoindex` (table or `<pre>`), lighttpd, and Python's
/// `http.server`.
///
/// A page is an index only if it says so — a title or heading "Index of …" or "Directory listing
/// for …", or nginx's JSON — so an ordinary page (or a placeholder `index.html`) is never taken for
/// one. Only links to direct children of the folder are entries: a link that leaves the folder
/// (`..`, `../../etc`, an absolute path elsewhere, another host), a query (Apache's sort links) or a
/// fragment is ignored, whatever the page says. Parsing is one pass over the bytes (linear however
/// the page is broken), and takes at most ``maximumEntries`` entries.
public enum DirectoryIndex {
    /// The most entries read from one page.
    public static let maximumEntries = 100_000

    /// Why a page is not a folder index.
    public struct NotAnIndex: Error, CustomStringConvertible {
        /// The folder asked for.
        public let url: URL
        /// What to do.
        public var description: String { "\(RemoteTable.shown(url)) is not a folder index (no \"Index of\" page, nor nginx's JSON); give the URL of a folder listing" }
    }

    /// The entries of `folder`'s index page `body`, sorted so a crawl lists files in path order.
    /// Throws ``NotAnIndex`` when the page does not say it is an index.
    public static func parse(_ body: Data, folder: URL) throws -> [IndexEntry] {
        let bytes = [UInt8](body)
        let start = bytes.firstIndex { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) } ?? bytes.count
        let entries: [IndexEntry]
        if start < bytes.count, bytes[start] == UInt8(ascii: "[") {
            entries = try parseJSON(body, folder: folder)
        } else if isIndexPage(bytes) {
            entries = parseHTML(bytes, folder: folder)
        } else {
            throw NotAnIndex(url: folder)
        }
        var seen = Set<[UInt8]>()
        return entries
            .filter { seen.insert($0.sortKey).inserted }
            .sorted { $0.sortKey.lexicographicallyPrecedes($1.sortKey) }
    }

    /// The URL of `encodedPath` (segments as index links spell them, joined by "/") under `root`:
    /// always a relative reference, so a first segment such as `a:b` is a name, not a scheme.
    public static func resolve(_ encodedPath: String, in root: URL) -> URL? {
        URL(string: "./" + encodedPath, relativeTo: root)?.absoluteURL
    }

    /// Whether the page's title or first heading names it an index (looked for in its first 64 KiB).
    static func isIndexPage(_ bytes: [UInt8]) -> Bool {
        let head = String(decoding: bytes.prefix(64 * 1024), as: UTF8.self).lowercased()
        for tag in ["<title>", "<h1>", "<h1 "] {
            guard let range = head.range(of: tag) else { continue }
            let text = head[range.upperBound...].prefix(200)
            if text.contains("index of") || text.contains("directory listing") { return true }
        }
        return false
    }

    /// nginx's `autoindex_format json`: `[{"name": …, "type": "file"|"directory", "size": …}, …]`.
    static func parseJSON(_ body: Data, folder: URL) throws -> [IndexEntry] {
        struct Item: Decodable {
            var name: String
            var type: String
            var size: Int64?
        }
        guard let items = try? JSONDecoder().decode([Item].self, from: body) else { throw NotAnIndex(url: folder) }
        return items.prefix(maximumEntries).compactMap { item in
            guard isChildName(item.name), item.type == "file" || item.type == "directory" else { return nil }
            return IndexEntry(name: item.name, isFolder: item.type == "directory", size: item.type == "file" ? item.size.map { max(0, $0) } : nil)
        }
    }

    /// Every `<a href="…">` whose target is a direct child of `folder`, with the size nginx prints
    /// after the link (a number of bytes ending the text that follows `</a>` on its line).
    static func parseHTML(_ bytes: [UInt8], folder: URL) -> [IndexEntry] {
        var entries: [IndexEntry] = []
        /// The last link, waiting for the text after its `</a>` (where nginx puts the size).
        var pending: (name: String, encoded: String, isFolder: Bool)?
        func flush(size: Int64?) {
            guard let link = pending, entries.count < maximumEntries else { return }
            entries.append(IndexEntry(name: link.name, encoded: link.encoded, isFolder: link.isFolder, size: link.isFolder ? nil : size))
            pending = nil
        }
        var index = 0
        while index < bytes.count, entries.count < maximumEntries {
            guard let open = bytes[index...].firstIndex(of: UInt8(ascii: "<")) else { break }
            if matches(bytes, at: open, "</a"), open + 3 < bytes.count, bytes[open + 3] == UInt8(ascii: ">") || isSpace(bytes[open + 3]) {
                guard let close = bytes[(open + 3)...].firstIndex(of: UInt8(ascii: ">")) else { break }
                // The text after `</a>` up to the end of its line or the next tag.
                var end = close + 1
                while end < bytes.count, bytes[end] != 0x0A, bytes[end] != 0x0D, bytes[end] != UInt8(ascii: "<") { end += 1 }
                flush(size: trailingNumber(bytes[(close + 1)..<end]))
                index = close + 1
                continue
            }
            if matches(bytes, at: open, "<a"), open + 2 < bytes.count, isSpace(bytes[open + 2]) {
                flush(size: nil)  // a link whose </a> never came
                guard let tagEnd = endOfTag(bytes, from: open + 2) else { break }  // the rest is one broken tag
                if let href = attribute("href", in: bytes[(open + 2)..<tagEnd]), let child = childName(href, folder: folder) {
                    pending = child
                }
                index = tagEnd + 1
                continue
            }
            index = open + 1
        }
        flush(size: nil)
        return entries
    }

    /// Whether `bytes` at `offset` start with `prefix` (ASCII, any case).
    static func matches(_ bytes: [UInt8], at offset: Int, _ prefix: String) -> Bool {
        let expected = Array(prefix.utf8)
        guard offset + expected.count <= bytes.count else { return false }
        for (position, byte) in expected.enumerated() where lowercase(bytes[offset + position]) != byte { return false }
        return true
    }

    static func lowercase(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }
    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0C }

    /// The `>` ending a tag whose attributes start at `offset`, skipping quoted values; `nil` if the
    /// page ends first.
    static func endOfTag(_ bytes: [UInt8], from offset: Int) -> Int? {
        var quote: UInt8?
        var index = offset
        while index < bytes.count {
            let byte = bytes[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                return index
            }
            index += 1
        }
        return nil
    }

    /// The number that ends `text` (the last word, all digits, at most 18 of them), if it does.
    static func trailingNumber(_ text: ArraySlice<UInt8>) -> Int64? {
        var end = text.endIndex
        while end > text.startIndex, isSpace(text[end - 1]) { end -= 1 }
        var start = end
        while start > text.startIndex, (0x30...0x39).contains(text[start - 1]) { start -= 1 }
        guard start < end, end - start <= 18, start == text.startIndex || isSpace(text[start - 1]) else { return nil }
        return Int64(String(decoding: text[start..<end], as: UTF8.self))
    }

    /// The value of attribute `name` in a tag's attributes (quoted with `"` or `'`, or bare), HTML
    /// entities decoded; the name matches in any case and must stand alone.
    static func attribute(_ name: String, in attributes: ArraySlice<UInt8>) -> String? {
        let wanted = Array(name.utf8)
        var index = attributes.startIndex
        while index < attributes.endIndex {
            // Skip to the start of the next attribute name.
            while index < attributes.endIndex, isSpace(attributes[index]) { index += 1 }
            let nameStart = index
            while index < attributes.endIndex, !isSpace(attributes[index]), attributes[index] != UInt8(ascii: "=") { index += 1 }
            let found = attributes[nameStart..<index].map(lowercase)
            while index < attributes.endIndex, isSpace(attributes[index]) { index += 1 }
            guard index < attributes.endIndex, attributes[index] == UInt8(ascii: "=") else {
                if index == nameStart { index += 1 }
                continue
            }
            index += 1
            while index < attributes.endIndex, isSpace(attributes[index]) { index += 1 }
            guard index < attributes.endIndex else { return nil }
            let value: ArraySlice<UInt8>
            let quote = attributes[index]
            if quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
                let start = index + 1
                guard let end = attributes[start...].firstIndex(of: quote) else { return nil }
                value = attributes[start..<end]
                index = end + 1
            } else {
                let start = index
                while index < attributes.endIndex, !isSpace(attributes[index]) { index += 1 }
                value = attributes[start..<index]
            }
            if found == wanted { return decodeEntities(String(decoding: value, as: UTF8.self)[...]) }
        }
        return nil
    }

    /// `href` resolved against `folder`, if it names a direct child of it (same scheme, host and
    /// port; the folder's path and one more segment): the decoded name, the segment as encoded, and
    /// whether it is a folder.
    static func childName(_ href: String, folder: URL) -> (name: String, encoded: String, isFolder: Bool)? {
        // A name is at most `longestName` bytes, three times that percent-encoded: a link longer than
        // that past the folder's own URL names nothing that is kept, and is refused before it is
        // resolved and decoded (a page of 100 KB links cost both for each).
        guard href.utf8.count <= folder.absoluteString.utf8.count + 4 * longestName else { return nil }
        guard !href.isEmpty, !href.utf8.contains(UInt8(ascii: "?")), !href.hasPrefix("#"),
              let resolved = URL(string: href, relativeTo: folder)?.absoluteURL,
              resolved.scheme?.lowercased() == folder.scheme?.lowercased(),
              resolved.host?.lowercased() == folder.host?.lowercased(), resolved.port == folder.port
        else { return nil }
        let base = folder.path(percentEncoded: true)
        let basePath = base.hasSuffix("/") ? base : base + "/"
        let path = resolved.path(percentEncoded: true)
        guard path.hasPrefix(basePath) else { return nil }
        var segment = path.dropFirst(basePath.count)
        let isFolder = segment.hasSuffix("/")
        if isFolder { segment = segment.dropLast() }
        guard !segment.utf8.contains(UInt8(ascii: "/")) else { return nil }
        let name = String(decoding: percentDecoded(segment), as: UTF8.self)
        guard isChildName(name) else { return nil }
        return (name, String(segment), isFolder)
    }

    /// The bytes `text` percent-encodes (a `%` not followed by two hex digits stays as it is).
    static func percentDecoded(_ text: Substring) -> [UInt8] {
        let input = Array(text.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "%"), index + 2 < input.count, let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2]) {
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(byte)
                index += 1
            }
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// A name that stays one segment inside its folder.
    static func isChildName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains { $0 == UInt8(ascii: "/") || $0 == 0 } && name.utf8.count <= longestName
    }

    /// The longest name taken, in bytes (file systems keep 255; some servers list longer ones).
    static let longestName = 1_024

    /// The five XML entities and numeric references (`&#39;`, `&#x27;`).
    static func decodeEntities(_ text: Substring) -> String {
        guard text.utf8.contains(UInt8(ascii: "&")) else { return String(text) }
        var result = ""
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            rest = rest[amp...]
            guard let semicolon = rest.prefix(12).firstIndex(of: ";") else {
                result += "&"
                rest = rest.dropFirst()
                continue
            }
            let entity = rest[rest.index(after: rest.startIndex)..<semicolon]
            let named = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'"]
            if let value = named[String(entity)] {
                result += value
            } else if entity.hasPrefix("#"), let scalar = numericEntity(entity.dropFirst()) {
                result.unicodeScalars.append(scalar)
            } else {
                result += rest[...semicolon]
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return result + rest
    }

    private static func numericEntity(_ digits: Substring) -> Unicode.Scalar? {
        let value = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
        return value.flatMap(Unicode.Scalar.init)
    }
}
