import Avenues
import Foundation
import Synchronization

// The references each benchmark is compared with, measured in the same run. Small on purpose: the
// figure that matters is the ratio between a library path and the simplest code doing the same job.

/// Reference (a) for waiters: a continuation list in 30 lines.
final class ContinuationListReference: Sendable {
    private let state = Mutex<(running: Bool, waiters: [CheckedContinuation<Int, Never>])>((false, []))

    func value(_ work: @escaping @Sendable () async -> Int) async -> Int {
        await withCheckedContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.waiters.append(continuation)
                if state.running { return false }
                state.running = true
                return true
            }
            guard start else { return }
            Task {
                let value = await work()
                let waiters = state.withLock { state in
                    defer { state = (false, []) }
                    return state.waiters
                }
                for waiter in waiters { waiter.resume(returning: value) }
            }
        }
    }
}

/// Reference (b) for waiters: the common "actor + await task.value" pattern.
actor TaskValueReference {
    private var task: Task<Int, Never>?

    func value(_ work: @escaping @Sendable () async -> Int) async -> Int {
        if let task { return await task.value }
        let task = Task { await work() }
        self.task = task
        return await task.value
    }
}

/// The reference for `item(at:)`: a dictionary behind a mutex.
final class LockedDictionaryReference: Sendable {
    private let table: Mutex<[Int: Int]>

    init(count: Int) {
        table = Mutex(Dictionary(uniqueKeysWithValues: (0..<count).map { ($0, $0 * 2) }))
    }

    func value(at index: Int) -> Int? {
        table.withLock { $0[index] }
    }
}

/// The reference for the multiplexers' cache hits: AsyncMux's hit path as its `MultiplexerMap`
/// has it — an actor holding a dictionary of entries, each with a `Date` expiry, asked with `await`
/// (the actor hop, the dictionary lookup and a wall-clock read per request).
actor AsyncMuxHitReference {
    struct Entry {
        var value: Int
        var expiresAt: Date
    }

    private var entries: [Int: Entry] = [:]

    init(count: Int) {
        let expiry = Date().addingTimeInterval(30 * 60)
        for key in 0..<count { entries[key] = Entry(value: key, expiresAt: expiry) }
    }

    func request(key: Int) -> Int? {
        guard let entry = entries[key], entry.expiresAt > Date() else { return nil }
        return entry.value
    }
}

/// The second reference for the multiplexers: AsyncMux's `MultiplexerMap` as it is built, not
/// only what its hit reads. An actor keeps one fetcher object per key; `request(key:)` finds (or
/// makes) the key's fetcher and awaits its non-isolated `request`, passing the fetch as an escaping
/// closure (allocated per call); the fetcher checks a refresh flag and a `Date`-based expiry, and
/// on a miss starts a `Task` for the fetch that later callers of the key await. The hit costs
/// AsyncMux pays: a hop onto the actor and one off it to the non-isolated method (SE-0338), a
/// closure context, a wall-clock read. Memory is unbounded, as in AsyncMux. Our own code, written
/// from the structure of AsyncMux 1.x (Sources/Multiplexer.swift).
actor AsyncMuxStructureReference {
    // Unchecked as in AsyncMux, whose fetcher runs off its actor: two tasks asking for one key at
    // once race on these fields. Safe here because each benchmark asks from a single task.
    final class Fetcher: @unchecked Sendable {
        var storedValue: Int?
        var refreshFlag = false
        var completionTime: TimeInterval = 0
        var task: Task<Int, any Error>?

        func request(timeToLive: TimeInterval, fetch: @escaping @Sendable () async throws -> Int) async throws -> Int {
            if !refreshFlag, Date().timeIntervalSinceReferenceDate <= completionTime + timeToLive, let storedValue {
                return storedValue
            }
            refreshFlag = false
            let task = self.task ?? Task { try await fetch() }
            self.task = task
            do {
                let value = try await task.value
                (self.task, storedValue, completionTime) = (nil, value, Date().timeIntervalSinceReferenceDate)
                return value
            } catch {
                (self.task, storedValue, completionTime) = (nil, nil, 0)
                throw error
            }
        }
    }

    private let timeToLive: TimeInterval = 30 * 60
    private let onFetch: @Sendable (Int) async throws -> Int
    private var fetchers: [Int: Fetcher] = [:]

    init(onFetch: @escaping @Sendable (Int) async throws -> Int) {
        self.onFetch = onFetch
    }

    func request(key: Int) async throws -> Int {
        let fetcher = fetchers[key] ?? Fetcher()
        fetchers[key] = fetcher
        let onFetch = self.onFetch
        return try await fetcher.request(timeToLive: timeToLive) { try await onFetch(key) }
    }
}

/// The reference for DiskStorage: a temporary file written with `open`/`write`/`close` and renamed into
/// place, then `Data(contentsOf:)`. POSIX calls, because Foundation's `Data.write(to:)` calls `fsync` on
/// Linux, which DiskStorage deliberately does not (see its crash-safety note) and would make the
/// reference ~50x slower than the job it stands for.
enum RawFiles {
    struct Failure: Error { let call: String }

    static func write(_ data: Data, to folder: URL, name: String) throws {
        let temporary = folder.appendingPathComponent(".tmp-" + name).path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw Failure(call: "open") }
        let written = data.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == data.count else { throw Failure(call: "write") }
        guard rename(temporary, folder.appendingPathComponent(name).path) == 0 else { throw Failure(call: "rename") }
    }

    static func read(from folder: URL, name: String) throws -> Data {
        try Data(contentsOf: folder.appendingPathComponent(name))
    }
}

/// The path of `name` in a folder of `$PATH`, or `nil`; `/usr/bin/env` is not assumed to exist.
func executable(named name: String) -> URL? {
    let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
    return folders.lazy
        .map { URL(fileURLWithPath: String($0)).appendingPathComponent(name) }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

/// The AsyncMedia tests' HTTP server, started for the download benchmarks.
final class LocalServer: Sendable {
    let port: Int
    private let process: Process
    private let input: Pipe

    init() throws {
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/AvenuesTests/Media/media_test_server.py")
        guard let python = executable(named: "python3") else {
            print("AsyncMedia benchmarks skipped: python3 is not on PATH (it runs their HTTP server)")
            throw CocoaError(.executableNotLoadable)
        }
        let process = Process()
        process.executableURL = python
        process.arguments = [script.path]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw CocoaError(.fileReadUnknown) }
            text += String(decoding: chunk, as: UTF8.self)
        }
        port = Int(text.split(separator: "\n")[0].replacingOccurrences(of: "PORT ", with: "")) ?? 0
        self.process = process
        self.input = input
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.terminate()
    }

    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)") ?? URL(fileURLWithPath: "/")
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif

/// A list of `count` integers, any page at once: the source for `PagedRows`' read benchmark.
struct CountingSource: OffsetPageSource {
    typealias Cursor = Int
    typealias Item = Int
    let count: Int

    func page(at offset: Int, size: Int) async throws -> Page<Int, Int> {
        let end = min(count, offset + size)
        return Page(items: Array(offset..<max(offset, end)), cursorAfter: end < count ? end : nil, itemsAfter: count - end)
    }
}
