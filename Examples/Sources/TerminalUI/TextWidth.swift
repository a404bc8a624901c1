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
    public static func fit(_ text: some StringProtocol, _ width: Int, alignRight: Bool = false, keepEnd: Bool = false) -> String {
        guard width > 0 else { return "" }
        var result = ""
        var used = 0
        let total = columns(text)
        if total <= width {
            result = String(text)
            used = total
        } else {
            var kept: [Character] = []
            for character in keepEnd ? Array(text.reversed()) : Array(text) {
                let next = columns(character)
                if used + next > width - 1 { break }
                kept.append(character)
                used += next
            }
            result = keepEnd ? "…" + String(kept.reversed()) : String(kept) + "…"
            used += 1
        }
        let padding = String(repeating: " ", count: max(0, width - used))
        return alignRight ? padding + result : result + padding
    }
}
