@testable import FilePager
import FuzzDriver

// Feeds arbitrary bytes to `pages FILE`'s opening lines: a file's first bytes, split into the lines
// the first screen shows before any page loads. The first byte says whether the rest is the whole
// file (its low bit) and how much of a line is kept (the other seven, 1–128 bytes). Checked against
// splitting the bytes at their line breaks: the same lines, numbers, offsets, lengths and kept
// bytes, at most `linesKept` of them, a last line without a break only at the end of the file or
// when it runs past what a row keeps (shown cut, its end not known), and "the whole file" exactly
// when every line of it was found.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count >= 1 else { return 0 }
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let atEnd = input[0] & 1 == 1
    let keep = Int(input[0] >> 1) + 1
    let bytes = Array(input[1...])
    let opening = OpeningLines(bytes, atEnd: atEnd, bytesKeptPerLine: keep)

    var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { Array($0) }
    // What follows the last line break is a line at the end of the file (if not empty), or when
    // it runs past what a row keeps.
    let rest = lines.removeLast()
    if atEnd ? !rest.isEmpty : rest.count > keep { lines.append(rest) }
    let expected = lines.prefix(OpeningLines.linesKept)
    precondition(opening.count == expected.count, "\(opening.count) lines found, \(expected.count) expected")
    var offset = 0
    for (row, line) in expected.enumerated() {
        guard let found = opening.line(row) else { preconditionFailure("line \(row) missing") }
        precondition(found.number == row && found.offset == Int64(offset) && found.length == Int64(line.count), "line \(row): where or how long")
        precondition(found.bytes == Array(line.prefix(keep)), "line \(row): bytes kept")
        offset += line.count + 1
    }
    precondition(opening.line(-1) == nil && opening.line(expected.count) == nil, "a line outside those found")
    precondition(opening.isWholeFile == (atEnd && lines.count <= OpeningLines.linesKept), "whole file: \(opening.isWholeFile)")
    return 0
}

@_cdecl("OpeningLinesFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, length in fuzz(start, length) }
}
