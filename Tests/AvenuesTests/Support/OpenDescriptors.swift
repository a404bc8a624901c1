import Foundation

/// Whether ``openDescriptors(in:)`` is `count` on five reads in a row (or there is no `/proc`): a
/// read can miss a descriptor while other tests open and close theirs.
func openDescriptorsSettled(in folder: String, at count: Int) -> Bool {
    (0..<5).allSatisfy { _ in openDescriptors(in: folder).map { $0 == count } ?? true }
}

/// How many of this process's descriptors are open on files in `folder` (named, deleted, or made
/// with no name, which `/proc` shows as `folder/#inode (deleted)`); `nil` where there is no `/proc`.
func openDescriptors(in folder: String) -> Int? {
    #if os(Linux)
    guard let links = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
    return links.filter { link in
        ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(link)")) ?? "").hasPrefix(folder + "/")
    }.count
    #else
    return nil
    #endif
}

