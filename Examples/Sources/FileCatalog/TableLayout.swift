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
        switch state {
        case .loaded(let summary):
            return line(
                path: entry.path, size: Self.formatSize(entry.size), lines: String(summary.lines),
                checksum: Self.hex(summary.crc32), preview: summary.preview
            )
        case .failed(let message):
            return line(path: entry.path, size: Self.formatSize(entry.size), lines: "✗", checksum: "", preview: message)
        case .pending:
            return line(path: entry.path, size: Self.formatSize(entry.size), lines: placeholder, checksum: "", preview: "")
        }
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

    /// `false` while the row still waits for its summary.
    public var isSettled: Bool {
        if case .pending = self { return false }
        return true
    }
}
