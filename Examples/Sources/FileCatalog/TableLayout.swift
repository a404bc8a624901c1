import Avenues
import TerminalUI

/// The table's columns at a given width: path and size (known at once), then lines, CRC-32 and a
/// preview (computed). Both examples print rows through this, so their output is the same.
public struct TableLayout: Sendable {
    /// The total width in columns.
    public let width: Int
    let pathWidth: Int
    let previewWidth: Int
    /// How many of size, lines and CRC-32 are shown (from the left): fewer on a narrow terminal.
    let fixedShown: Int
    /// Whether the preview column is there (an empty one still has its separator).
    let showsPreview: Bool
    static let sizeWidth = 9
    static let linesWidth = 8
    static let checksumWidth = 8
    static let separator = "  "
    /// The narrowest the path gets while another column is shown.
    static let narrowestPath = 10

    /// The widest layout: a wider one (`COLUMNS=99999999999`) would ask for terabytes of padding.
    public static let widest = 10_000

    /// A layout for `width` columns (at least 1, at most ``widest``), exactly that wide. The path
    /// gets two fifths of what the fixed columns leave, and at least 30 columns when there are 60
    /// for path and preview together, so at 80 columns a path still shows its last folder and its
    /// file name. Narrower than 43 columns the preview goes, then the CRC-32, the lines and the
    /// size, each while the path would get fewer than 10 columns (a narrow pane of a terminal).
    public init(width: Int) {
        self.width = min(Self.widest, max(1, width))
        let separator = Self.separator.count
        let fixedWidths = [Self.sizeWidth, Self.linesWidth, Self.checksumWidth]
        let allFixed = fixedWidths.reduce(0) { $0 + $1 + separator } + separator  // and the preview's separator
        if self.width >= Self.narrowestPath + allFixed {
            let flexible = self.width - allFixed
            pathWidth = max(Self.narrowestPath, min(flexible - 10, max(flexible * 2 / 5, 30)))
            previewWidth = max(0, flexible - pathWidth)
            fixedShown = fixedWidths.count
            showsPreview = true
        } else {
            var shown = fixedWidths.count
            var taken = fixedWidths.reduce(0) { $0 + $1 + separator }
            while shown > 0, self.width - taken < Self.narrowestPath {
                shown -= 1
                taken -= fixedWidths[shown] + separator
            }
            pathWidth = self.width - taken
            previewWidth = 0
            fixedShown = shown
            showsPreview = false
        }
    }

    /// The column titles.
    public func header(palette: Terminal.Palette = Terminal.Palette(on: false)) -> String {
        line(path: "PATH", size: "SIZE", lines: "LINES", checksum: "CRC32", preview: "PREVIEW", palette: palette, style: .plain)
    }

    /// The column titles, uncoloured (for plain text output).
    public var header: String { header() }

    /// A row: the entry, and what is known of its summary.
    ///
    /// - Parameter state: the row's state; `.pending` shows `placeholder`.
    public func row(_ entry: FileEntry, _ state: RowContent, placeholder: String = "…", palette: Terminal.Palette = Terminal.Palette(on: false)) -> String {
        row(path: entry.path, size: entry.isFolder ? nil : entry.size, state, placeholder: placeholder, palette: palette)
    }

    /// A row from its path and size (`nil`: not known yet, shown as "…" while the row loads; none
    /// for a folder).
    public func row(path: String, size: Int64?, _ state: RowContent, placeholder: String = "…", palette: Terminal.Palette = Terminal.Palette(on: false)) -> String {
        let sizeText = size.map(ByteSize.text) ?? (state.isSettled ? "" : "…")
        switch state {
        case .loaded(let summary):
            return line(path: path, size: sizeText, lines: String(summary.lines), checksum: Self.hex(summary.crc32), preview: summary.preview, palette: palette, style: .plain)
        case .failed(let message):
            return line(path: path, size: sizeText, lines: "✗", checksum: "", preview: message, palette: palette, style: .failed)
        case .folder:
            return line(path: path, size: "", lines: "", checksum: "", preview: "", palette: palette, style: .folder)
        case .pending:
            return line(path: path, size: sizeText, lines: placeholder, checksum: "", preview: "", palette: palette, style: .plain)
        }
    }

    /// `text` with control characters (which could move the cursor or change colours when a hostile
    /// name is printed) shown as `?`.
    public static func printable(_ text: String) -> String {
        TerminalSafe.clean(text)
    }

    enum Style { case plain, folder, failed }

    private func line(path: String, size: String, lines: String, checksum: String, preview: String, palette: Terminal.Palette, style: Style) -> String {
        let pathColor = style == .folder ? palette.folder : style == .failed ? palette.failure : ""
        let fixed = [
            palette.paint(TextWidth.fit(size, Self.sizeWidth, alignRight: true), palette.size),
            TextWidth.fit(lines, Self.linesWidth, alignRight: true),
            palette.paint(TextWidth.fit(checksum, Self.checksumWidth), palette.hash),
        ]
        var cells = [palette.paint(TextWidth.fitPath(path, pathWidth), pathColor)] + fixed.prefix(fixedShown)
        if showsPreview { cells.append(palette.paint(TextWidth.fit(preview, previewWidth), style == .failed ? palette.failure : "")) }
        return cells.joined(separator: Self.separator)
    }


    /// `value` in lowercase hexadecimal, zero-padded to `digits` digits (eight: a CRC-32).
    public static func hex(_ value: UInt32, digits: Int = 8) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}

/// What a row shows in its computed columns.
public enum RowContent: Sendable {
    case pending
    case loaded(FileSummary)
    case failed(String)
    /// A folder: nothing to compute.
    case folder

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

    /// The content of `entry`'s row `index` of `avenue`: a folder's is known at once.
    public init(_ avenue: Avenue<Int, FileRef, FileSummary>, entry: FileEntry, row index: Int) {
        if let problem = entry.problem {
            self = .failed(problem)
        } else if entry.isFolder {
            self = .folder
        } else {
            self.init(avenue, row: index)
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
