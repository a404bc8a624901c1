import Foundation
import FuzzDriver
@testable import RemoteCatalog

// Feeds arbitrary bytes to `browse URL`'s folder-index parser as the page a server answered for a
// folder. Whatever the page, parsing ends in time linear in its size (the fuzzer's -timeout), and
// every entry it returns is one path segment below the folder: a name that is not empty, ".", ".."
// nor holds "/", a link that resolves inside the folder, a size that is not negative, no two
// entries alike, in order — never a crash or a trap.

let folder: URL = {
    guard let url = URL(string: "http://127.0.0.1:8080/data/sub%20folder/") else { preconditionFailure("a literal URL") }
    return url
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let page = Data(bytes: start, count: count)
    guard let entries = try? DirectoryIndex.parse(page, folder: folder) else { return 0 }
    precondition(entries.count <= DirectoryIndex.maximumEntries, "more entries than the limit")
    var seen = Set<[UInt8]>()
    for entry in entries {
        precondition(!entry.name.isEmpty && entry.name != "." && entry.name != ".." && !entry.name.contains("/"), "not one segment: \(entry.name.debugDescription)")
        precondition(!entry.encoded.isEmpty, "an entry without a link")
        precondition(entry.size.map { $0 >= 0 } ?? true, "a negative size")
        precondition(seen.insert(entry.sortKey).inserted, "two entries named \(entry.name.debugDescription)")
        guard let url = DirectoryIndex.resolve(entry.encoded + (entry.isFolder ? "/" : ""), in: folder) else {
            preconditionFailure("a link that is not a URL: \(entry.encoded.debugDescription)")
        }
        precondition(IndexConnection.isInside(url, folder), "a link that leaves the folder: \(url)")
        precondition(url.deletingLastPathComponent().path(percentEncoded: true) == folder.path(percentEncoded: true), "not a direct child: \(url)")
    }
    precondition(zip(entries, entries.dropFirst()).allSatisfy { $0.sortKey.lexicographicallyPrecedes($1.sortKey) }, "out of order")
    return 0
}

@_cdecl("IndexFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, length in fuzz(start, length) }
}
