import Avenues
import FilePager
import Foundation
import FuzzDriver

// Feeds arbitrary bytes to `pages FILE --filter`'s line filter as a file read in chunks. The first
// byte picks the query, the second the chunk size; the rest is the file. Whatever the bytes, the
// output is the lines that contain the query, each with a line break — exactly what splitting the
// whole file into lines gives — never a crash or a trap.

let queries = ["a", "ab", "AB", "é", "a b", "x\ny", "\u{0}", "aaaa"].map { TextQuery($0) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count >= 2 else { return 0 }
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let query = queries[Int(input[0]) % queries.count]
    let chunk = Int(input[1]) + 1
    let file: [UInt8] = Array(input[2...])
    var filter = LineFilter(query)
    var output = Data()
    var position = 0
    while position < file.count {
        output += filter.take(Data(file[position ..< min(file.count, position + chunk)]))
        position += chunk
    }
    output += filter.finish()
    var lines = file.split(separator: 0x0A, omittingEmptySubsequences: false)
    if file.last == 0x0A || file.isEmpty { lines.removeLast() }
    let expected: [UInt8] = lines.filter { Array($0).withUnsafeBytes { query.matches(bytes: $0) } }.flatMap { Array($0) + [0x0A] }
    precondition(Array(output) == expected, "the filter gave \(output.count) bytes, the lines that match \(expected.count)")
    return 0
}

@_cdecl("LineFilterFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, length in fuzz(start, length) }
}
