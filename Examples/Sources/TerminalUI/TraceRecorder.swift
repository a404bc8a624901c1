import Foundation
import Synchronization

/// Writes a screen's `show` calls as a trace `scroll-sim --trace` replays (JSON Lines: a first line
/// `{"rows": N, "screen": R}`, then `{"t": MILLISECONDS_SINCE_START, "first": ROW, "count": ROWS}` per
/// call; Benchmarks/README.md). Calls that show the same rows as the last one are not written.
public final class TraceRecorder: Sendable {
    private let file: FileHandle
    private let started = ContinuousClock.now
    private let last = Mutex<(rows: Range<Int>?, hints: [Int])>((nil, []))

    /// Why the trace's file cannot be written: the system's reason (a folder that does not exist,
    /// a path that is a folder, no permission). It read `Error Domain=NSCocoaErrorDomain Code=513
    /// "You don't have permission."` for a folder that does not exist.
    public struct CannotWrite: Error, CustomStringConvertible {
        /// The path given.
        public let path: String
        /// The system's reason.
        public let reason: String
        /// What happened and what to do.
        public var description: String {
            "cannot write the trace to \(path) (\(reason)); give --record-trace a file in a folder that exists and can be written"
        }
    }

    /// Creates (or empties) the file at `path`: a regular file, or a device such as `/dev/null`.
    /// - Throws: ``CannotWrite``.
    public init(path: String) throws {
        // Not blocking: a FIFO with no reader would hold the program before its first screen.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0o644)
        guard descriptor >= 0 else {
            throw CannotWrite(path: path, reason: errno == ENXIO ? "a pipe nobody reads" : String(cString: strerror(errno)))
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG || (info.st_mode & S_IFMT) == S_IFCHR else {
            close(descriptor)
            throw CannotWrite(path: path, reason: "not a regular file")
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    deinit { try? file.close() }

    /// Records that `rows` of a list of `count` rows are shown now (0: not known yet, as git still
    /// reads; the trace's rows are then bounded by the rows shown), with the model's `hints` if they
    /// changed.
    public func record(_ rows: Range<Int>, count: Int, hints: [Int] = []) {
        let change = last.withLock { last -> (isFirst: Bool, hints: [Int]?)? in
            guard last.rows != rows || last.hints != hints else { return nil }
            defer { last = (rows, hints) }
            return (last.rows == nil, last.hints != hints ? hints : nil)
        }
        guard let change else { return }
        var text = ""
        if change.isFirst { text += "{\"rows\": \(count), \"screen\": \(rows.count)}\n" }
        let hinted = change.hints.map { ", \"hints\": [" + $0.map(String.init).joined(separator: ", ") + "]" } ?? ""
        text += "{\"t\": \(milliseconds), \"first\": \(rows.lowerBound), \"count\": \(rows.count)\(hinted)}\n"
        try? file.write(contentsOf: Data(text.utf8))
    }

    /// Records the model's hints if they changed since the last line (after the first show).
    public func record(hints: [Int]) {
        let changed = last.withLock { last -> Bool in
            guard last.rows != nil, last.hints != hints else { return false }
            last.hints = hints
            return true
        }
        guard changed else { return }
        let text = "{\"t\": \(milliseconds), \"hints\": [" + hints.map(String.init).joined(separator: ", ") + "]}\n"
        try? file.write(contentsOf: Data(text.utf8))
    }

    private var milliseconds: Int { Int((ContinuousClock.now - started) / .milliseconds(1)) }
}
