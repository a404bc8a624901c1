import CSystemIO
import Foundation
import Synchronization

/// Runs `git` as a child process, reading its output off the calling thread; cancelling the calling
/// task terminates the process (a page or a diff stat nobody wants any more stops costing CPU).
public enum Git {
    /// Why git could not answer.
    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// No `git` on `PATH`.
        case notInstalled
        /// The path is not a folder.
        case notAFolder(String)
        /// The folder is not inside a git repository.
        case notARepository(String)
        /// git ran and failed.
        case failed(arguments: [String], status: Int32, message: String)
        /// git does not take the paths given after `--` (a path outside the repository, a bad
        /// pathspec): its message.
        case badPaths(message: String)
        /// git's log could not be copied into the spool file at `path` (a full disk, a file size
        /// limit): the system's reason.
        case spoolNotWritten(path: String, reason: String)

        /// One line for the user.
        public var description: String {
            switch self {
            case .notInstalled:
                "git was not found on PATH; install git and run again."
            case .notAFolder(let path):
                "\(path) is not a folder; give the path of a repository (history PATH)."
            case .notARepository(let path):
                "\(path) is not in a git repository; give the path of one (history PATH)."
            case .badPaths(let message):
                "git log does not take the paths after --: \(Self.oneLine(message)); give paths inside the repository, or pathspecs git log takes."
            case .spoolNotWritten(let path, let reason):
                "git log's output could not be written to \(path) (\(reason)); free some space, or give another folder with --cache (or --no-cache)."
            case .failed(let arguments, let status, let message):
                "git \(arguments.joined(separator: " ")) failed (status \(status)): \(Self.oneLine(message))"
            }
        }

        /// git's message of several lines (`error: …` then `fatal: …`) as one.
        private static func oneLine(_ message: String) -> String {
            message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: "; ")
        }
    }

    /// The `git` executable on `PATH`, if any.
    public static let executable: URL? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("git") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// The standard output of `git -C repository arguments…`.
    public static func run(_ arguments: [String], in repository: String) async throws -> Data {
        guard let executable else { throw Failure.notInstalled }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-C", repository] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["LC_ALL": "C", "GIT_PAGER": "cat"]) { $1 }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try Task.checkCancellation()
        try process.run()
        // Both pipes drain on threads of their own, so a chatty stderr cannot stall stdout.
        let stdout = PipeReader(output.fileHandleForReading), stderr = PipeReader(errors.fileHandleForReading)
        let outcome = Outcome()
        let (data, message) = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, Data), any Error>) in
                outcome.wait(with: continuation)
                Thread.detachNewThread {
                    let data = stdout.wait(), message = stderr.wait()
                    process.waitUntilExit()
                    outcome.finish(.success((data, message)))
                }
            }
        } onCancel: {
            // Answer at once: a child git started (a hook, an alias) may hold the pipes open after
            // git itself is gone; the reading thread ends when they close.
            process.terminate()
            outcome.finish(.failure(CancellationError()))
        }
        guard process.terminationStatus == 0 else {
            let text = String(decoding: message, as: UTF8.self)
            if text.contains("not a git repository") { throw Failure.notARepository(repository) }
            throw Failure.failed(arguments: arguments, status: process.terminationStatus, message: text)
        }
        return data
    }
}

/// Reads a pipe to its end on a thread of its own.
final class PipeReader: @unchecked Sendable {
    // Safe: `data` is written once, by the reading thread, before it signals `done`; it is read
    // only after waiting on `done`, which orders the two.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            // read(2), not readDataToEndOfFile(): Foundation's reads trap on an error (a signal's
            // EINTR crashed `history`).
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { avenues_examples_read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                data.append(contentsOf: buffer[..<count])
            }
            done.signal()
        }
    }

    /// Everything the pipe carried, once it closed.
    func wait() -> Data {
        done.wait()
        return data
    }
}

/// The one answer of a `Git.run`: the output, or the cancellation that came first.
final class Outcome: Sendable {
    private enum State {
        case waiting(CheckedContinuation<(Data, Data), any Error>?)
        case finished(Result<(Data, Data), any Error>)
        case resumed
    }

    private let state = Mutex<State>(.waiting(nil))

    /// Hands over the continuation, resuming it at once if the answer came first.
    func wait(with continuation: CheckedContinuation<(Data, Data), any Error>) {
        let early = state.withLock { state -> Result<(Data, Data), any Error>? in
            guard case .finished(let result) = state else {
                state = .waiting(continuation)
                return nil
            }
            state = .resumed
            return result
        }
        if let early { continuation.resume(with: early) }
    }

    /// The answer, if none came before.
    func finish(_ result: Result<(Data, Data), any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<(Data, Data), any Error>? in
            switch state {
            case .waiting(let continuation?):
                state = .resumed
                return continuation
            case .waiting(nil):
                state = .finished(result)
                return nil
            case .finished, .resumed:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}

