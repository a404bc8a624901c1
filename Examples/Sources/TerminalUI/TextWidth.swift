/// How many terminal columns text takes, so columns line up with wide (CJK, emoji) and zero-width
/// (combining) characters. An approximation of `wcwidth` that covers what file names and first
/// lines of files contain.
public enum TextWidth {
    /// Columns taken by `character`: 2 for an emoji shown as a picture (one that starts with an
    /// emoji and holds one shown as a picture: 🦊, 👍🏾, a flag), else the sum of its scalars'
    /// columns, as a terminal draws them (a base and its combining marks: the base's; a spacing
    /// mark such as U+093E adds one; a prepended mark such as U+0605 adds none to the scalar it
    /// joins; a skin-tone modifier on a base that is no emoji, such as ◌🏾, adds its own two, as
    /// tmux draws it).
    public static func columns(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        if let first = scalars.first, !first.isASCII, first.properties.isEmoji,
           scalars.contains(where: { $0.properties.isEmojiPresentation }) {
            return 2
        }
        return scalars.reduce(0) { $0 + columns($1) }
    }

    static func columns(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value == 0 || (value < 0x20) || (0x7F..<0xA0).contains(value) { return 0 }
        // Hangul's medial vowels and final consonants join the initial consonant's two columns.
        if (0x1160...0x11FF).contains(value) || (0xD7B0...0xD7FF).contains(value) { return 0 }
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
        // Most of the rest (status lines: │ – · …) is simple scalars: one column each.
        if text.unicodeScalars.allSatisfy(isSimple) { return text.unicodeScalars.count }
        return text.reduce(0) { $0 + columns($1) }
    }

    /// Whether `scalar` is a character of its own (it joins no neighbour into one character) that
    /// takes one column and is shown as it is: printable ASCII, and a few blocks of punctuation,
    /// arrows, mathematical operators (≥), box drawing and Braille (spinners) that status lines use, none of them a mark, a
    /// format or bidirectional control, a separator or an emoji shown as a picture.
    static func isSimple(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x20 ..< 0x7F, 0xA0 ... 0xAC, 0xAE ... 0xFF, 0x2010 ... 0x2027, 0x2030 ... 0x205E, 0x2190 ... 0x21FF,
             0x2200 ... 0x22FF, 0x2500 ... 0x259F, 0x2800 ... 0x28FF:
            return true
        default:
            return false
        }
    }

    /// `text` cut to at most `width` columns and padded with spaces to exactly `width` (on the right,
    /// or on the left when `alignRight`). A cut is marked "…": at the end, or at the start when
    /// `keepEnd` (for paths, whose file name is at the end).
    ///
    /// What it shows is made safe for a terminal (``TerminalSafe``): control characters become `?`,
    /// and a mark with nothing to sit on (at the start, or after a control) is shown on a dotted
    /// circle so that it joins nothing before it.
    /// It reads at most about `width` characters of `text`, however long `text` is, so a huge
    /// string costs a screen's width per frame, not its length.
    public static func fit(_ text: some StringProtocol, _ width: Int, alignRight: Bool = false, keepEnd: Bool = false) -> String {
        guard width > 0 else { return "" }
        if let ascii = fitASCII(text, width, alignRight: alignRight, keepEnd: keepEnd) { return ascii }
        if let (shown, used) = fitSimple(text, width, keepEnd: keepEnd) {
            let padding = spaces(width - used)
            return alignRight ? padding + shown : shown + padding
        }
        return fitCharacters(text, width, alignRight: alignRight, keepEnd: keepEnd)
    }

    /// ``fit(_:_:alignRight:keepEnd:)`` from the bytes of text whose shown part is printable ASCII
    /// (a byte is a character and a column); `nil` for any other text, and for text not stored
    /// contiguously. A screen is mostly such text, and a character at a time it was a third of
    /// the first frame's instructions (callgrind, 2026-11-25).
    static func fitASCII(_ text: some StringProtocol, _ width: Int, alignRight: Bool, keepEnd: Bool) -> String? {
        guard let fitted = text.utf8.withContiguousStorageIfAvailable({ fitASCII($0, width, keepEnd: keepEnd) }), let (shown, used) = fitted else {
            return nil
        }
        let padding = spaces(width - used)
        return alignRight ? padding + shown : shown + padding
    }

    /// The shown text and its columns, as ``fitCharacters(_:_:alignRight:keepEnd:)`` makes them,
    /// if every byte that decides them is printable ASCII. Only about `width` bytes are read: those
    /// shown, the first one cut (a printable character there is what makes the cut) and, with
    /// `keepEnd`, the one before it (a prepended mark would join it into one character).
    static func fitASCII(_ bytes: UnsafeBufferPointer<UInt8>, _ width: Int, keepEnd: Bool) -> (String, Int)? {
        let count = bytes.count
        func printable(_ range: Range<Int>) -> Bool {
            for index in range where bytes[index] < 0x20 || bytes[index] >= 0x7F { return false }
            return true
        }
        if count <= width {
            return printable(0 ..< count) ? (String(decoding: bytes, as: UTF8.self), count) : nil
        }
        if keepEnd {
            guard printable(max(0, count - width - 2) ..< count) else { return nil }
            return ("…" + String(decoding: UnsafeBufferPointer(rebasing: bytes[(count - width + 1)...]), as: UTF8.self), width)
        }
        guard printable(0 ..< width + 1) else { return nil }
        return (String(decoding: UnsafeBufferPointer(rebasing: bytes[..<(width - 1)]), as: UTF8.self) + "…", width)
    }

    /// The shown text and its columns, as ``fitCharacters(_:_:alignRight:keepEnd:)`` makes them, if
    /// every scalar that decides them ``isSimple(_:)`` (a scalar is then a character and a column);
    /// the same scalars are read as ``fitASCII(_:_:keepEnd:)`` reads bytes.
    static func fitSimple(_ text: some StringProtocol, _ width: Int, keepEnd: Bool) -> (String, Int)? {
        var kept = String.UnicodeScalarView()
        var count = 0
        if keepEnd {
            for scalar in text.unicodeScalars.reversed() {
                guard isSimple(scalar) else { return nil }
                count += 1
                if count <= width { kept.append(scalar) }
                if count == width + 2 { break }
            }
            guard count > width else { return (String(String.UnicodeScalarView(kept.reversed())), count) }
            kept.removeLast()
            return ("…" + String(String.UnicodeScalarView(kept.reversed())), width)
        }
        for scalar in text.unicodeScalars {
            guard isSimple(scalar) else { return nil }
            count += 1
            if count > width {
                kept.removeLast()
                kept.append("…")
                return (String(kept), width)
            }
            kept.append(scalar)
        }
        return (String(kept), count)
    }

    /// `text` in lines of at most `width` columns, broken at spaces (a word wider than a line is
    /// a line of its own, for ``fit(_:_:alignRight:keepEnd:)`` to cut). At least one line.
    public static func wrap(_ text: String, _ width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        var lineColumns = 0
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            let wordColumns = columns(word)
            if !line.isEmpty, lineColumns + 1 + wordColumns > width {
                lines.append(line)
                line = ""
                lineColumns = 0
            }
            if !line.isEmpty {
                line += " "
                lineColumns += 1
            }
            line += word
            lineColumns += wordColumns
        }
        lines.append(line)
        return lines
    }

    /// `count` spaces (none for a count below 1), written as bytes: `String(repeating:count:)` appends
    /// them one at a time.
    public static func spaces(_ count: Int) -> String {
        guard count > 0 else { return "" }
        return String(unsafeUninitializedCapacity: count) { buffer in
            buffer.initialize(repeating: 0x20)
            return count
        }
    }

    /// ``fit(_:_:alignRight:keepEnd:)`` a character at a time: any text.
    static func fitCharacters(_ text: some StringProtocol, _ width: Int, alignRight: Bool, keepEnd: Bool) -> String {
        guard width > 0 else { return "" }
        var kept: [Character] = []
        var used = 0
        var cut = false
        func take<Characters: Sequence<Character>>(_ characters: Characters) {
            for character in characters {
                var shown = safe(character)
                if shown == character, let based = onItsOwnBase(character) { shown = based }
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
        }
        // Measured again as one string: characters that were apart in `text` (a control dropped
        // between them) can join into one, such as two regional indicators into a flag.
        func joined() -> String { keepEnd ? String(kept.reversed()) : String(kept) }
        var result = joined()
        used = columns(result)
        while used > width, !kept.isEmpty {  // never seen: a join takes no more columns than its parts
            if cut, kept.count >= 2 { kept.remove(at: kept.count - 2) } else { kept.removeLast() }
            result = joined()
            used = columns(result)
        }
        let padding = spaces(width - used)
        return alignRight ? padding + result : result + padding
    }

    /// A character as it may be shown (``TerminalSafe``): one holding a control character (like
    /// `\r\n`), a bidirectional control or an invisible character is `?`, a tab a space.
    static func safe(_ character: Character) -> Character {
        if character.isASCII, let byte = character.asciiValue, byte >= 0x20, byte < 0x7F { return character }
        let scalars = character.unicodeScalars
        for scalar in scalars {
            switch TerminalSafe.shown(scalar) {
            case .asIs: continue
            case .space: if scalars.count == 1 { return " " } else { return "?" }
            case .marked: return "?"
            }
        }
        return character
    }

    /// `character` on a dotted circle (U+25CC, Unicode's base for a mark shown alone) if it starts
    /// with a mark: a combining or spacing mark, an emoji modifier or a joiner. Such a character
    /// starts a text, or follows a control; shown as it is, it would join whatever is before it on
    /// the screen (the padding, the column to its left) and its row would lose a column.
    /// `nil` for any other character.
    public static func onItsOwnBase(_ character: Character) -> Character? {
        guard let first = character.unicodeScalars.first, first.value >= 0x300 else { return nil }
        let properties = first.properties
        guard properties.isGraphemeExtend || properties.isEmojiModifier || first.value == 0x200D
            || properties.generalCategory == .spacingMark else { return nil }
        // Swift's own segmentation decides: a mark joins the circle into one character.
        let based = "\u{25CC}" + String(character)
        guard based.count == 1, let joined = based.first else { return nil }
        return joined
    }

    /// `line` cut to at most `width` columns, its escape sequences (the colours a palette paints)
    /// kept and taking none; a colour cut short is ended (`ESC[0m`). A line wider than the terminal
    /// wraps onto the next row and pushes the whole screen up: the screen cuts every line it is
    /// given with this, whatever drew it. Cuts between characters, never inside one.
    public static func clip(_ line: String, _ width: Int) -> String {
        // A character takes at least one byte per column it takes.
        if line.utf8.count <= max(0, width) { return line }
        var kept = ""
        var used = 0
        var inEscape = false
        var escapes = false
        for character in line {
            if inEscape {
                // CSI: ESC [ then parameters and intermediates, ended by a byte in 0x40–0x7E.
                if let byte = character.asciiValue, (0x40 ... 0x7E).contains(byte), character != "[" { inEscape = false }
                kept.append(character)
                continue
            }
            if character == "\u{1B}" {
                inEscape = true
                escapes = true
                kept.append(character)
                continue
            }
            let next = columns(character)
            if used + next > width { return kept + (escapes ? Terminal.ANSI.reset : "") }
            used += next
            kept.append(character)
        }
        return kept
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
