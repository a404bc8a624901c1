import Avenues
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
    private let process: Process?
    private let completion: Completion

    /// Whether git finished, and the pages waiting for it.
    final class Completion: Sendable {
        let state = Mutex<(finished: Bool, failure: String?, waiters: [UUID: CheckedContinuation<Void, Never>])>((false, nil, [:]))

        func finish(status: Int32) {
            let waiting = state.withLock { state in
                state.finished = true
                if status != 0 { state.failure = "git show failed (status \(status))" }
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
        guard let executable = Git.executable, let output = FileHandle(forWritingAtPath: path.path) else { throw Git.Failure.notInstalled }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-C", repository, "show", "--stat", "--patch", "--format=fuller", "--color=never", hash, "--"]
        process.environment = ProcessInfo.processInfo.environment.merging(["LC_ALL": "C", "GIT_PAGER": "cat"]) { $1 }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let completion = Completion()
        let file = file
        process.terminationHandler = { finished in
            try? output.close()
            _ = file.checkForChanges()
            completion.finish(status: finished.terminationStatus)
        }
        self.completion = completion
        try process.run()
        self.process = process
    }

    deinit {
        if let process, process.isRunning { process.terminate() }
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
