/// Text from outside the program — a file's name, a commit's subject or author, a server's answer,
/// an error's message — made safe to write to a terminal: nothing in it can move the cursor, clear
/// the screen, set the window's title or change colours.
///
/// Control characters (C0, DEL and C1, which include ESC and the 8-bit CSI) become `?`, a tab a
/// space; Unicode's bidirectional overrides and isolates (which can make text read backwards) are
/// dropped. Printable text, wide characters and combining marks stay as they are.
public enum TerminalSafe {
    /// `text`, safe to write to a terminal.
    public static func clean(_ text: some StringProtocol) -> String {
        // Most names and subjects are printable ASCII: nothing to do.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return String(text) }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x09: scalars.append(" ")
            case 0x00..<0x20, 0x7F..<0xA0: scalars.append("?")
            case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: continue
            default: scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    /// Whether `text` has anything ``clean(_:)`` would change.
    public static func needsCleaning(_ text: some StringProtocol) -> Bool {
        clean(text) != String(text)
    }
}
