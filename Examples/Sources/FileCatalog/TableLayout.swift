import Avenues
import TerminalUI

/// The table's columns at a given width: path and size (known at once), then lines, CRC-32 and a
/// preview (computed). Both examples print rows through this, so their output is the same.
public struct TableLayout: Sendable {
    /// The total width in columns.
    public let width: Int
    let pathWidth: Int
    let previewWidth: Int
    static let sizeWidth = 9
    static let linesWidth = 8
    static let checksumWidth = 8
    static let separator = "  "

    /// A layout for `width` columns (at least 40).
    public init(width: Int) {
        self.width = max(40, width)
        let fixed = Self.sizeWidth + Self.linesWidth + Self.checksumWidth + 4 * Self.separator.count
        let flexible = self.width - fixed
        pathWidth = max(10, flexible * 2 / 5)
        previewWidth = max(0, flexible - pathWidth)
    }

    /// The column titles.
    public var header: String {
        line(path: "PATH", size: "SIZE", lines: "LINES", checksum: "CRC32", preview: "PREVIEW")
    }

    /// A row: the file, and what is known of its summary.
    ///
    /// - Parameter state: the row's state; `.loading` and `.empty` show `placeholder`.
    public func row(_ entry: FileEntry, _ state: RowContent, placeholder: String = "…") -> String {
        row(path: entry.path, size: entry.size, state, placeholder: placeholder)
    }

    /// A row from its path and size (`nil`: not known yet, shown as "…" while the row loads).
    public func row(path: String, size: Int64?, _ state: RowContent, placeholder: String = "…") -> String {
        let path = Self.printable(path)
        let size = size.map(Self.formatSize) ?? (state.isSettled ? "" : "…")
        switch state {
        case .loaded(let summary):
            return line(path: path, size: size, lines: String(summary.lines), checksum: Self.hex(summary.crc32), preview: summary.preview)
        case .failed(let message):
            return line(path: path, size: size, lines: "✗", checksum: "", preview: Self.printable(message))
        case .pending:
            return line(path: path, size: size, lines: placeholder, checksum: "", preview: "")
        }
    }

    /// `text` with control characters (which could move the cursor or change colours when a hostile
    /// name is printed) shown as `?`.
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { isControl($0) ? "?" : $0 }))
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value)
    }

    private func line(path: String, size: String, lines: String, checksum: String, preview: String) -> String {
        [
            TextWidth.fit(path, pathWidth, keepEnd: true),
            TextWidth.fit(size, Self.sizeWidth, alignRight: true),
            TextWidth.fit(lines, Self.linesWidth, alignRight: true),
            TextWidth.fit(checksum, Self.checksumWidth),
            TextWidth.fit(preview, previewWidth),
        ].joined(separator: Self.separator)
    }

    /// `999 B`, `12.3 KiB`, `4.0 MiB`…
    public static func formatSize(_ bytes: Int64) -> String {
        guard bytes >= 1024 else { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }

    /// Eight lowercase hexadecimal digits.
    public static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}

/// What a row shows in its computed columns.
public enum RowContent: Sendable {
    case pending
    case loaded(FileSummary)
    case failed(String)

    /// The content of row `index` of `avenue` now.
    public init(_ avenue: Avenue<Int, FileRef, FileSummary>, row index: Int) {
        if let summary = avenue.item(at: index) {
            self = .loaded(summary)
        } else if let error = avenue.state(at: index).error {
            self = .failed(String(describing: error))
        } else {
            self = .pending
        }
    }

    /// Whether the summary is there.
    public var isLoaded: Bool {
        if case .loaded = self { return true }
        return false
    }

    /// `false` while the row still waits for its summary.
    public var isSettled: Bool {
        if case .pending = self { return false }
        return true
    }
}
