import Foundation

/// A fresh folder under the system's temporary folder, deleted when the value is released, so tests
/// never write to the user's cache folder.
final class TemporaryFolder: Sendable {
    let url: URL
    var path: String { url.path }

    init(_ label: String = #function) {
        let name = "avenues-tests-" + label.filter { $0.isLetter || $0.isNumber }.prefix(40) + "-" + UUID().uuidString
        url = FileManager.default.temporaryDirectory.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
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
