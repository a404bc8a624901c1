import Avenues
@testable import FilePager
import FuzzDriver
@testable import TerminalUI

// Feeds arbitrary bytes to what the examples draw outside text with and read keys with: a name, a
// subject or a server's message fitted into a column (`TextWidth.fit`, `fitPath`), cleaned for the
// terminal (`TerminalSafe.clean`), and terminal input decoded into keys (`KeyDecoder`). The first
// byte picks the column's width (0–63) and the fit's options; the second, where the input is cut
// in two reads for the key decoder (and, as `pages FILE` draws the bytes as a line, the column the
// view starts at). Checked: nothing shown holds a control character, a bidirectional control or an
// invisible character (a zero-width space, a word joiner, U+FEFF); a
// fitted text and a drawn line take exactly their width in columns, and a painted line cut to the
// screen at most that; a drawn line joins nothing drawn before it; keys are the same however the
// input is cut, and fewer bytes than a key's longest wait; and a byte of printable ASCII after a
// complete key is never swallowed.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count >= 2 else { return 0 }
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let width = Int(input[0] & 0x3F)
    let alignRight = input[0] & 0x40 != 0
    let keepEnd = input[0] & 0x80 != 0
    let bytes = Array(input[2...])
    let text = String(decoding: bytes, as: UTF8.self)

    func checkShown(_ shown: String, _ what: String) {
        for scalar in shown.unicodeScalars {
            switch scalar.value {
            case 0x00..<0x20, 0x7F..<0xA0, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C, 0x200B, 0x2060...0x2064, 0xFEFF, 0x180E:
                preconditionFailure("\(what) shows U+\(String(scalar.value, radix: 16))")
            default: continue
            }
        }
    }
    let cleaned = TerminalSafe.clean(text)
    checkShown(cleaned, "clean")
    precondition(TerminalSafe.needsCleaning(text) == (cleaned != text), "needsCleaning")
    let fitted = TextWidth.fit(text, width, alignRight: alignRight, keepEnd: keepEnd)
    checkShown(fitted, "fit")
    precondition(TextWidth.columns(fitted) == width, "fit: \(TextWidth.columns(fitted)) columns for \(width)")
    let path = TextWidth.fitPath(text, width)
    checkShown(path, "fitPath")
    precondition(TextWidth.columns(path) == width, "fitPath: \(TextWidth.columns(path)) columns for \(width)")

    // A painted line wider than the screen, cut to it as the screen cuts every line.
    let painted = Terminal.ANSI.red + TextWidth.fit(text, 2 * width + 1) + Terminal.ANSI.reset
    let clipped = TextWidth.clip(painted, width)
    checkShown(ListScreen.stripped(clipped), "clip")
    precondition(TextWidth.columns(ListScreen.stripped(clipped)) <= width, "clip: more than \(width) columns")

    // The bytes as a line of a file the pager draws after its gutter, from column `input[1] & 0x3F`.
    let line = Line(number: 0, offset: 0, length: Int64(bytes.count) + (keepEnd ? 100 : 0), bytes: bytes)
    let column = Int(input[1] & 0x3F)
    let drawn = LineText.visible(line, from: column, width: width)
    checkShown(drawn, "visible")
    precondition(TextWidth.columns(drawn) == width, "visible: \(TextWidth.columns(drawn)) columns for \(width) from \(column)")
    precondition(("│" + drawn).count == 1 + drawn.count, "visible: joins the gutter")
    precondition(drawn == LineText.visible(line, from: column, width: width, asciiFastPath: false), "visible: the ASCII path differs")

    // Keys: the same whether the bytes come at once or in two reads.
    let cut = min(Int(input[1]), bytes.count)
    var whole = KeyDecoder()
    let once = whole.decode(bytes) + whole.flush()
    var split = KeyDecoder()
    var twice = split.decode(bytes[..<cut])
    precondition(split.pendingCount < KeyDecoder.longestSequence, "\(split.pendingCount) bytes kept waiting")
    twice += split.decode(bytes[cut...])
    precondition(split.pendingCount < KeyDecoder.longestSequence, "\(split.pendingCount) bytes kept waiting")
    twice += split.flush()
    precondition(once == twice, "keys differ when the input is cut at \(cut)")
    // A byte that starts a UTF-8 character, followed by printable ASCII: the ASCII is typed.
    if let lead = bytes.first, lead >= 0xC0, bytes.count >= 2, (0x21..<0x7F).contains(bytes[1]) {
        var decoder = KeyDecoder()
        let keys = decoder.decode(bytes.prefix(2)) + decoder.flush()
        precondition(keys.last == .character(Character(Unicode.Scalar(bytes[1]))), "\(bytes[1]) after \(lead) swallowed: \(keys)")
    }
    return 0
}

@_cdecl("ScreenTextFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, length in fuzz(start, length) }
}
