import Avenues
import CSystemIO
import Foundation
import Synchronization

/// What `git show` prints for one commit — its message, `--stat` and the diff — as a page source of
/// lines: git writes into a file, and the lines are read from it as they are written, through a
/// ``LineFile`` (so a diff of any size is paged in bounded memory, like the log).
public final class CommitShow: OffsetPageSource {
    public typealias Cursor = Int
    public typealias Item = Line

    /// The commit.
    public let hash: String
    private let file: LineFile
    private let path: URL
    /// git while it runs (it is started again once, for a date it cannot show).
    private let process = Mutex<Process?>(nil)
    private let completion: Completion

    /// Whether git finished, and the pages waiting for it.
    final class Completion: Sendable {
        let state = Mutex<(finished: Bool, waiters: [UUID: CheckedContinuation<Void, Never>])>((false, [:]))

        func finish() {
            let waiting = state.withLock { state in
                state.finished = true
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    /// Starts `git show --stat --patch <hash>` in `repository`, writing into `folder`.
    public init(hash: String, repository: String, folder: URL) throws {
        self.hash = hash
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        path = folder.appendingPathComponent("show-\(getpid())-\(UUID().uuidString).txt")
        guard FileManager.default.createFile(atPath: path.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path.path])
        }
        file = try LineFile(path: path.path, checkpointInterval: 500)
        completion = Completion()
        try start(repository: repository, rawDates: false)
    }

    /// Runs git into the file (emptied first). When it fails, its message ends the file: what it
    /// wrote before is shown, then why it stopped (its message went nowhere, and the view showed
    /// a commit's first line alone). A date git cannot show (`@0 -1200`: "Timestamp before Unix
    /// epoch") is shown raw instead, by a second run.
    private func start(repository: String, rawDates: Bool) throws {
        guard let executable = Git.executable, let output = FileHandle(forWritingAtPath: path.path) else { throw Git.Failure.notInstalled }
        try output.truncate(atOffset: 0)
        let arguments = ["show", "--stat", "--patch", "--format=fuller", "--color=never"] + (rawDates ? ["--date=raw"] : []) + [hash, "--"]
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-C", repository] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["LC_ALL": "C", "GIT_PAGER": "cat"]) { $1 }
        process.standardOutput = output
        let errors = Pipe()
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        let messages = PipeReader(errors.fileHandleForReading)
        let (file, completion, path) = (file, completion, path)
        process.terminationHandler = { [weak self] finished in
            let message = String(decoding: messages.wait(), as: UTF8.self)
            let status = finished.terminationStatus
            if status != 0, !rawDates, message.contains("before Unix epoch"), let self,
               (try? self.start(repository: repository, rawDates: true)) != nil {
                try? output.close()  // the second run writes through a handle of its own
                return
            }
            if status != 0 {
                let failure = Git.Failure.failed(arguments: ["show"], status: status, message: message)
                // After what git wrote (at the file's end: a second run that could not start may
                // have emptied it), on a line of its own.
                let ending = (CommitShow.endsInsideALine(path) ? "\n" : "") + "[\(failure)]\n"
                _ = try? output.seekToEnd()
                _ = Array(ending.utf8).withUnsafeBytes { avenues_examples_write_all(output.fileDescriptor, $0.baseAddress, $0.count) }
            }
            try? output.close()
            _ = file.checkForChanges()
            completion.finish()
        }
        self.process.withLock { $0 = process }
        do {
            try process.run()
        } catch {
            try? output.close()
            throw error
        }
    }

    /// Whether the file at `path` ends with a line that has no line break.
    private static func endsInsideALine(_ path: URL) -> Bool {
        let descriptor = open(path.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let size = lseek(descriptor, 0, SEEK_END)
        var last: UInt8 = 0x0A
        return size > 0 && pread(descriptor, &last, 1, size - 1) == 1 && last != 0x0A
    }

    deinit {
        if let process = process.withLock({ $0 }), process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: path)
    }

    /// Whether git finished writing.
    public var isFinished: Bool { completion.state.withLock { $0.finished } }

    public func page(at offset: Int, size: Int) async throws -> Page<Int, Line> {
        // Lines are read once git is done: a diff is written in a moment (and a line read while git
        // writes it could be cut in two).
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = completion.state.withLock { state -> Bool in
                    if state.finished || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            completion.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
        try Task.checkCancellation()
        _ = file.checkForChanges()
        return try await file.page(at: offset, size: size)
    }
}
