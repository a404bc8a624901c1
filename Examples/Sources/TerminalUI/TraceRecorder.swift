import Foundation
import Synchronization

/// Writes a screen's `show` calls as a trace `scroll-sim --trace` replays (JSON Lines: a first line
/// `{"rows": N, "screen": R}`, then `{"t": MILLISECONDS_SINCE_START, "first": ROW, "count": ROWS}` per
/// call; Benchmarks/README.md). Calls that show the same rows as the last one are not written.
public final class TraceRecorder: Sendable {
    private let file: FileHandle
    private let started = ContinuousClock.now
    private let last = Mutex<Range<Int>?>(nil)

    /// Creates (or empties) the file at `path`.
    public init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
        }
        self.file = file
    }

    deinit { try? file.close() }

    /// Records that `rows` of a list of `count` rows are shown now.
    public func record(_ rows: Range<Int>, count: Int) {
        let isFirst = last.withLock { last -> Bool? in
            guard last != rows else { return nil }
            defer { last = rows }
            return last == nil
        }
        guard let isFirst else { return }
        var text = ""
        if isFirst { text += "{\"rows\": \(count), \"screen\": \(rows.count)}\n" }
        let milliseconds = (ContinuousClock.now - started) / .milliseconds(1)
        text += "{\"t\": \(Int(milliseconds)), \"first\": \(rows.lowerBound), \"count\": \(rows.count)}\n"
        try? file.write(contentsOf: Data(text.utf8))
    }
}
