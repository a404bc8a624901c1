/// Text from outside the program — a file's name, a commit's subject or author, a server's answer,
/// an error's message — made safe to write to a terminal: nothing in it can move the cursor, clear
/// the screen, set the window's title or change colours.
///
/// Control characters (C0, DEL and C1, which include ESC and the 8-bit CSI) become `?`, a tab a
/// space. So do Unicode's bidirectional controls (which can make text read backwards) and its
/// invisible characters (a zero-width space, a word joiner, a byte order mark): each is a `?` where
/// it was, so that `a\u{200B}b` is not shown as `ab` and a name cannot pass for another one.
/// Printable text, wide characters, combining marks and the joiners that emoji and some scripts
/// need (U+200C, U+200D) stay as they are.
public enum TerminalSafe {
    /// `text`, safe to write to a terminal.
    public static func clean(_ text: some StringProtocol) -> String {
        // Most names and subjects are printable ASCII: nothing to do.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return String(text) }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch shown(scalar) {
            case .asIs: scalars.append(scalar)
            case .space: scalars.append(" ")
            case .marked: scalars.append("?")
            }
        }
        return String(scalars)
    }

    /// How ``clean(_:)`` shows one scalar.
    public enum Shown: Sendable {
        /// As it is.
        case asIs
        /// As a space (a tab).
        case space
        /// As `?`: a control, a bidirectional control or an invisible character.
        case marked
    }

    /// How `scalar` is shown.
    public static func shown(_ scalar: Unicode.Scalar) -> Shown {
        switch scalar.value {
        case 0x09: return .space
        case 0x00 ..< 0x20, 0x7F ..< 0xA0: return .marked
        // Bidirectional embeddings, overrides, isolates and marks.
        case 0x202A ... 0x202E, 0x2066 ... 0x2069, 0x200E, 0x200F, 0x061C: return .marked
        // Invisible: zero-width space, word joiner and invisible operators, zero-width no-break
        // space (a byte order mark), Mongolian vowel separator.
        case 0x200B, 0x2060 ... 0x2064, 0xFEFF, 0x180E: return .marked
        default: return .asIs
        }
    }

    /// Whether `text` has anything ``clean(_:)`` would change.
    public static func needsCleaning(_ text: some StringProtocol) -> Bool {
        clean(text) != String(text)
    }
}
