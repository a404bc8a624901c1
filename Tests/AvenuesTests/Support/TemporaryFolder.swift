import Foundation
@testable import Avenues

/// A fresh folder under the system's temporary folder, deleted when the value is released and
/// again when the process exits, so tests never write to the user's cache folder and leave nothing
/// behind. (Swift may release the value after its last use, mid-test: a storage writing there
/// later made the folder again, and every run left a few behind.)
final class TemporaryFolder: Sendable {
    let url: URL
    var path: String { url.path }

    init(_ label: String = #function) {
        let name = "avenues-tests-" + label.filter { $0.isLetter || $0.isNumber }.prefix(40) + "-" + UUID().uuidString
        url = FileManager.default.temporaryDirectory.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        TemporaryFolders.made(url)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    func child(_ name: String) -> URL {
        url.appendingPathComponent(name, isDirectory: true)
    }

    /// Every file name under the folder, recursively, relative to it.
    func allFiles() -> [String] {
        (FileManager.default.subpaths(atPath: path) ?? []).sorted()
    }
}

/// Every folder a test made, removed at exit (after the storages' own exit handlers, registered
/// later, have written what they kept).
enum TemporaryFolders {
    private static let folders: Locked<Set<URL>> = {
        atexit { TemporaryFolders.removeAll() }
        return Locked([])
    }()

    static func made(_ url: URL) {
        _ = folders.withLock { $0.insert(url) }
    }

    private static func removeAll() {
        for url in folders.withLock({ Array($0) }) { try? FileManager.default.removeItem(at: url) }
    }
}
