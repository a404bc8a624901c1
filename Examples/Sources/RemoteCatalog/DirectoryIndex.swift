import Foundation

/// One entry of an HTTP folder index.
public struct IndexEntry: Sendable, Hashable, Codable {
    /// The name, percent-decoded: one path segment, never `.` or `..`, never containing `/`.
    public var name: String
    /// Whether it is a folder.
    public var isFolder: Bool
    /// The size in bytes, when the index gives it exactly (nginx; not Apache's "1.2K", not Python).
    public var size: Int64?

    /// An entry.
    public init(name: String, isFolder: Bool, size: Int64?) {
        self.name = name
        self.isFolder = isFolder
        self.size = size
    }

    /// The key entries sort by: a folder as `name/`, so a crawl in this order lists files in the
    /// order of their paths (what `browse` does for a local folder).
    var sortKey: String { isFolder ? name + "/" : name }
}

/// Reads the folder index pages of the common servers: nginx `autoindex` (HTML, and JSON with
/// `autoindex_format json`), Apache `mod_autoindex` (table or `<pre>`), and Python's `http.server`.
///
/// Only links to direct children of the folder are entries: a link that leaves the folder (`..`,
/// `../../etc`, an absolute path elsewhere, another host), a query (Apache's sort links) or a
/// fragment is ignored, whatever the page says.
public enum DirectoryIndex {
    /// Why a page is not a folder index.
    public struct NotAnIndex: Error, CustomStringConvertible {
        /// The folder asked for.
        public let url: URL
        /// What to do.
        public var description: String { "\(url) is not a folder index (no links to files or folders in it); give the URL of a folder listing." }
    }

    /// The entries of `folder`'s index page `body`, sorted so a crawl lists files in path order.
    /// Throws ``NotAnIndex`` when the page is neither an HTML page nor nginx's JSON.
    public static func parse(_ body: Data, folder: URL) throws -> [IndexEntry] {
        let text = String(decoding: body, as: UTF8.self)
        let trimmed = text.drop { $0.isWhitespace }
        let entries: [IndexEntry]
        if trimmed.first == "[" {
            entries = try parseJSON(body, folder: folder)
        } else if trimmed.range(of: "<a ", options: .caseInsensitive) != nil || trimmed.range(of: "<html", options: .caseInsensitive) != nil {
            entries = parseHTML(text, folder: folder)
        } else {
            throw NotAnIndex(url: folder)
        }
        var seen = Set<String>()
        return entries
            .filter { seen.insert($0.sortKey).inserted }
            .sorted { $0.sortKey < $1.sortKey }
    }

    /// nginx's `autoindex_format json`: `[{"name": …, "type": "file"|"directory", "size": …}, …]`.
    static func parseJSON(_ body: Data, folder: URL) throws -> [IndexEntry] {
        struct Item: Decodable {
            var name: String
            var type: String
            var size: Int64?
        }
        guard let items = try? JSONDecoder().decode([Item].self, from: body) else { throw NotAnIndex(url: folder) }
        return items.compactMap { item in
            guard isChildName(item.name), item.type == "file" || item.type == "directory" else { return nil }
            return IndexEntry(name: item.name, isFolder: item.type == "directory", size: item.type == "file" ? item.size.map { max(0, $0) } : nil)
        }
    }

    /// Every `<a href="…">` whose target is a direct child of `folder`, with the size nginx prints
    /// after the link (a number of bytes ending the text that follows it on its line).
    static func parseHTML(_ text: String, folder: URL) -> [IndexEntry] {
        var entries: [IndexEntry] = []
        var rest = text[...]
        while let open = rest.range(of: "<a ", options: .caseInsensitive) {
            rest = rest[open.upperBound...]
            guard let tagEnd = rest.firstIndex(of: ">") else { break }
            let attributes = rest[..<tagEnd]
            rest = rest[rest.index(after: tagEnd)...]
            guard let href = attribute("href", in: attributes), let child = childName(href, folder: folder) else { continue }
            // The text after `</a>` up to the end of its line or the next tag: nginx puts the date and
            // the size there; Apache's table has none, its <pre> has a rounded size ("1.2K").
            var size: Int64?
            if let close = rest.range(of: "</a>", options: .caseInsensitive) {
                // (`isNewline`: nginx ends lines with "\r\n", which is one Character.)
                let after = rest[close.upperBound...].prefix { !$0.isNewline && $0 != "<" }
                if let last = after.split(whereSeparator: \.isWhitespace).last,
                   last.allSatisfy(\.isASCII), last.allSatisfy(\.isNumber), last.count <= 18 {
                    size = Int64(last)
                }
                rest = rest[close.upperBound...]
            }
            entries.append(IndexEntry(name: child.name, isFolder: child.isFolder, size: child.isFolder ? nil : size))
        }
        return entries
    }

    /// The value of attribute `name` (quoted with `"` or `'`), HTML entities decoded.
    static func attribute(_ name: String, in attributes: Substring) -> String? {
        var search = attributes[...]
        while let found = search.range(of: name, options: .caseInsensitive) {
            var index = found.upperBound
            search = attributes[index...]
            // The name must stand alone: preceded by a space, followed by `=`.
            if found.lowerBound > attributes.startIndex, !attributes[attributes.index(before: found.lowerBound)].isWhitespace { continue }
            while index < attributes.endIndex, attributes[index].isWhitespace { index = attributes.index(after: index) }
            guard index < attributes.endIndex, attributes[index] == "=" else { continue }
            index = attributes.index(after: index)
            while index < attributes.endIndex, attributes[index].isWhitespace { index = attributes.index(after: index) }
            guard index < attributes.endIndex else { return nil }
            let quote = attributes[index]
            if quote == "\"" || quote == "'" {
                let start = attributes.index(after: index)
                guard let end = attributes[start...].firstIndex(of: quote) else { return nil }
                return decodeEntities(attributes[start..<end])
            }
            return decodeEntities(attributes[index...].prefix { !$0.isWhitespace })
        }
        return nil
    }

    /// `href` resolved against `folder`, if it names a direct child of it (same scheme, host and
    /// port; the folder's path and one more segment).
    static func childName(_ href: String, folder: URL) -> (name: String, isFolder: Bool)? {
        guard !href.isEmpty, !href.contains("?"), !href.hasPrefix("#"),
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
        guard !segment.contains("/"), let name = String(segment).removingPercentEncoding, isChildName(name) else { return nil }
        return (name, isFolder)
    }

    /// A name that stays one segment inside its folder.
    static func isChildName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0") && name.utf8.count <= 1_024
    }

    /// The five XML entities and numeric references (`&#39;`, `&#x27;`).
    static func decodeEntities(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
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
