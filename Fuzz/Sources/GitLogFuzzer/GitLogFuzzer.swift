import Foundation
import FuzzDriver
@testable import GitHistory

// Feeds arbitrary bytes to `history`'s parser of `git log -z` output (six NUL-separated fields a
// commit), cut into two reads at a place the first byte picks. Whatever the bytes, the commits are
// the same however the output is cut, a spool line never holds a line break (one commit, one line),
// a commit's printed line is its fields' bytes, and what a screen shows of a subject is bounded —
// never a crash or a trap.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = [UInt8](UnsafeRawBufferPointer(start: start, count: count))
    let whole = GitLog.parse(Data(bytes))
    let cut = bytes.isEmpty ? 0 : Int(bytes[0]) * bytes.count / 256
    var parser = LogParser()
    let lines = parser.take(Array(bytes[..<cut])) + parser.take(Array(bytes[cut...]))
    precondition(lines.allSatisfy { !$0.contains(0x0A) }, "a spool line with a line break")
    let commits = lines.map { GitLog.commit(fromSpooled: $0) }
    precondition(commits == whole, "cut at \(cut), the commits differ")
    // A spool line cut anywhere (as a page keeps its first bytes) is still one commit, its hash
    // whole once the line holds it.
    for line in lines.prefix(4) {
        let end = Int(bytes.last ?? 0) * line.count / 256
        let commit = GitLog.commit(fromSpooled: Array(line[..<end]))
        let hash = line.split(separator: 0, omittingEmptySubsequences: false).first ?? []
        if end > hash.count { precondition(Array(commit.hash.utf8) == Array(String(decoding: hash, as: UTF8.self).utf8), "a cut line's hash") }
    }
    for commit in commits {
        precondition(commit.line == Array(commit.shortHash.utf8) + [0x09] + Array(commit.date.utf8) + [0x09] + commit.authorBytes + [0x09] + commit.subjectBytes)
        precondition(commit.subject.unicodeScalars.count <= Commit.shownSubjectBytes, "a shown subject longer than the bound")
    }
    return 0
}

@_cdecl("GitLogFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, length in fuzz(start, length) }
}
