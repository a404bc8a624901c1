import Avenues
import TerminalUI

/// A file's line as a terminal shows it: what `pages FILE` draws for one row.
public enum LineText {
    /// Columns a tab stop is apart.
    public static let tabWidth = 8

    /// Line `line`'s text from column `column` (0: its start), exactly `width` columns: bytes that
    /// are not UTF-8 as replacement characters, a CRLF's `\r` dropped, tabs expanded to the next stop,
    /// control characters (escape sequences included) as `?`, a mark with nothing to
    /// sit on (at the start, after a tab) on a dotted circle, a wide character cut by an edge as a
    /// space, and `…` in the last column when more of the line follows (or the line was cut to what a
    /// ``Line`` keeps). Reads only the bytes that can reach the screen, however long the line.
    public static func visible(_ line: Line, from column: Int, width: Int) -> String {
        visible(line, from: column, width: width, asciiFastPath: true)
    }

    /// `asciiFastPath` off: every line a character at a time (the tests compare both).
    static func visible(_ line: Line, from column: Int, width: Int, asciiFastPath: Bool) -> String {
        guard width > 0 else { return "" }
        let column = max(0, column)
        // A character takes at least one byte and, but for marks, one column: this many bytes hold
        // every character that can show (and a little more, to know whether more follows).
        let reach = min(line.bytes.count, Int(clamping: (Int64(column) + Int64(width)) * 8 + 64))
        // More of the line follows the bytes read: cut by the reach, or by what the line keeps.
        let cut = reach < line.bytes.count || line.isCut
        var end = reach
        if !cut, end > 0, line.bytes[end - 1] == 0x0D { end -= 1 }
        // Cut inside a character, the bytes would end with a replacement character the file does
        // not have: seen after 330 combining marks.
        if cut { end = Line.wholeScalarsEnd(line.bytes, before: end) }
        if asciiFastPath, let text = printableASCII(line.bytes, end: end, from: column, width: width, more: cut) {
            return text
        }
        return characters(line, end: end, reach: reach, from: column, width: width)
    }

    /// ``visible(_:from:width:)`` for any bytes, a character at a time.
    static func characters(_ line: Line, end: Int, reach: Int, from column: Int, width: Int) -> String {
        let text = String(decoding: line.bytes[0 ..< end], as: UTF8.self)
        var pieces: [(text: String, columns: Int)] = []
        var at = 0  // the column the next character starts at
        var shown = 0  // columns kept
        var more = line.isCut || reach < line.bytes.count
        for character in text {
            var piece: String
            var columns: Int
            if character == "\t" {
                columns = tabWidth - at % tabWidth
                piece = TextWidth.spaces(columns)
            } else {
                piece = TerminalSafe.clean(String(character))
                // A mark that starts the line (or follows a tab or a control) has no base of its
                // own: drawn as it is, it would sit on the gutter's last cell or a tab's space.
                if piece.count == 1, let first = piece.first, let based = TextWidth.onItsOwnBase(first) { piece = String(based) }
                columns = TextWidth.columns(piece)
            }
            if at + columns <= column {
                at += columns
                continue
            }
            if at < column {  // cut by the left edge
                columns = at + columns - column
                piece = TextWidth.spaces(columns)
                at = column
            }
            if shown + columns > width {
                more = true
                break
            }
            pieces.append((piece, columns))
            shown += columns
            at += columns
        }
        return padded(pieces, to: width, more: more)
    }

    /// `pieces` in exactly `width` columns: padded with spaces, and with `…` in the last column
    /// when `more` (pieces dropped to make room for it). Measured as one string: pieces that were
    /// apart can join into one character once a bidirectional control between them is dropped
    /// (two regional indicators into a flag: 2 columns, not 4), which left the row short.
    static func padded(_ pieces: [(text: String, columns: Int)], to width: Int, more: Bool) -> String {
        var pieces = pieces
        let room = more ? width - 1 : width
        var text = pieces.map(\.text).joined()
        var shown = TextWidth.columns(text)
        while shown > room, !pieces.isEmpty {
            pieces.removeLast()
            text = pieces.map(\.text).joined()
            shown = TextWidth.columns(text)
        }
        let result = text + TextWidth.spaces(room - shown) + (more ? "…" : "")
        // A last piece that joins what follows it (a prepended concatenation mark joins the
        // padding's first space): measured again, the padding makes up the difference.
        let measured = TextWidth.columns(result)
        return measured == width ? result : text + TextWidth.spaces(max(0, room - shown + width - measured)) + (more ? "…" : "")
    }

    /// The same for a line whose first `end` bytes are printable ASCII (most lines of most logs):
    /// a byte is a column, so the text is a slice of the bytes. `nil` for any other line.
    static func printableASCII(_ bytes: [UInt8], end: Int, from column: Int, width: Int, more: Bool) -> String? {
        var index = 0
        while index < end {
            guard bytes[index] >= 0x20, bytes[index] < 0x7F else { return nil }
            index += 1
        }
        let start = min(column, end)
        let fits = end - start <= width && !more
        let shown = fits ? end - start : min(end - start, width - 1)
        let text = String(decoding: bytes[start ..< start + shown], as: UTF8.self)
        return text + TextWidth.spaces(width - shown - (fits ? 0 : 1)) + (fits ? "" : "…")
    }
}
