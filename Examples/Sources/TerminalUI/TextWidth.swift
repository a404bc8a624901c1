/// How many terminal columns text takes, so columns line up with wide (CJK, emoji) and zero-width
/// (combining) characters. An approximation of `wcwidth` that covers what file names and first
/// lines of files contain.
public enum TextWidth {
    /// Columns taken by `character`: 0, 1 or 2.
    public static func columns(_ character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        if character.unicodeScalars.contains(where: { $0.properties.isEmojiPresentation }) { return 2 }
        return columns(first)
    }

    static func columns(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value == 0 || (value < 0x20) || (0x7F..<0xA0).contains(value) { return 0 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        let wide: [ClosedRange<UInt32>] = [
            0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
            0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
            0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD,
        ]
        return wide.contains { $0.contains(value) } ? 2 : 1
    }

    /// Columns taken by `text`.
    public static func columns(_ text: some StringProtocol) -> Int {
        // Most paths and first lines are printable ASCII: one column per byte.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text.utf8.count }
        return text.reduce(0) { $0 + columns($1) }
    }

    /// `text` cut to at most `width` columns and padded with spaces to exactly `width` (on the right,
    /// or on the left when `alignRight`). A cut is marked "…": at the end, or at the start when
    /// `keepEnd` (for paths, whose file name is at the end).
    ///
    /// What it shows is made safe for a terminal (``TerminalSafe``): control characters become `?`.
    /// It reads at most about `width` characters of `text`, however long `text` is, so a huge
    /// string costs a screen's width per frame, not its length.
    public static func fit(_ text: some StringProtocol, _ width: Int, alignRight: Bool = false, keepEnd: Bool = false) -> String {
        guard width > 0 else { return "" }
        var kept: [Character] = []
        var used = 0
        var cut = false
        func take<Characters: Sequence<Character>>(_ characters: Characters) {
            for character in characters {
                guard let shown = safe(character) else { continue }
                let next = columns(shown)
                if used + next > width {
                    cut = true
                    return
                }
                kept.append(shown)
                used += next
            }
        }
        if keepEnd { take(text.reversed()) } else { take(text) }
        if cut {
            while used + 1 > width, let last = kept.popLast() { used -= columns(last) }
            kept.append("…")
            used += 1
        }
        let result = keepEnd ? String(kept.reversed()) : String(kept)
        let padding = String(repeating: " ", count: max(0, width - used))
        return alignRight ? padding + result : result + padding
    }

    /// A character as it may be shown: a control character (or a cluster holding one, like `\r\n`)
    /// is `?`, a tab a space; a bidirectional control is dropped (`nil`).
    static func safe(_ character: Character) -> Character? {
        if character.isASCII, let byte = character.asciiValue, byte >= 0x20, byte < 0x7F { return character }
        var replaced = false
        for scalar in character.unicodeScalars {
            switch scalar.value {
            case 0x09 where character.unicodeScalars.count == 1: return " "
            case 0x00..<0x20, 0x7F..<0xA0: replaced = true
            case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: return nil
            default: continue
            }
        }
        return replaced ? "?" : character
    }

    /// `path` in `width` columns, keeping its end: the whole path if it fits, else `…/` with the
    /// last folder and the file name, else `…/` and the file name, else the end of the file name.
    public static func fitPath(_ path: some StringProtocol, _ width: Int) -> String {
        if columns(path) <= width { return fit(path, width) }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        let trailing = path.hasSuffix("/") ? 1 : 0
        for kept in [2, 1] where parts.count - trailing > kept {
            let end = parts.suffix(kept + trailing).joined(separator: "/")
            if columns(end) + 2 <= width { return fit("…/" + end, width) }
        }
        return fit(path, width, keepEnd: true)
    }
}
