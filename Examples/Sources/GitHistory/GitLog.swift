import Avenues
import Foundation
import Synchronization

/// A commit as a row of the log.
public struct Commit: Sendable, Hashable, Codable {
    /// The full hash: the commit's identity (a diff stat is cached by it).
    public var hash: String
    /// The abbreviated hash, as `git log` prints it (`%h`).
    public var shortHash: String
    /// The author date, `YYYY-MM-DD`.
    public var date: String
    /// The author's name.
    public var author: String
    /// The subject line.
    public var subject: String

    /// A commit.
    public init(hash: String, shortHash: String, date: String, author: String, subject: String) {
        (self.hash, self.shortHash, self.date, self.author, self.subject) = (hash, shortHash, date, author, subject)
    }

    /// The line `history` prints when its output is not a terminal: `git log`'s
    /// `--format=%h%x09%ad%x09%an%x09%s --date=short`.
    public var line: String { [shortHash, date, author, subject].joined(separator: "\t") }
}

/// `git log` of a repository as an offset page source. Pages near the front of one `git log`
/// process (scrolling down, streaming, searching) are read from it — its pipe keeps git a few pages
/// ahead, and the last pages read are kept, so pages asked out of order or twice are not asked
/// again — so reading the whole log costs what `git log` costs. Any other page is `git log
/// --skip=offset --max-count=size`, so a jump to the root commit asks git for one page. The number
/// of commits (`git rev-list --count HEAD`, seconds on a million commits) is counted when ``total()``
/// is first asked — `history` asks once the first screen is drawn — and given with every page once
/// known; pages never wait for it.
public final class GitLog: OffsetPageSource {
    public typealias Cursor = Int
    public typealias Item = Commit

    /// The repository (any folder inside it).
    public let repository: String
    /// The count: its task once started, and its value once known.
    private let counting = Mutex<(task: Task<Int?, Never>?, value: Int?)>((nil, nil))
    /// The `git log` read in order, once the first page near the front is asked.
    private let stream = Mutex<LogStream?>(nil)
    /// How far past the stream's position a page may start and still be read from it: further
    /// out, `--skip` costs less than reading (and parsing) every commit in between.
    static let streamReach = 2_000
    /// One NUL-terminated record per commit (`-z`), fields split by 0x1F; the subject comes last, so
    /// whatever bytes it holds stay in it.
    static let format = ["-z", "--date=short", "--format=%H%x1f%h%x1f%ad%x1f%an%x1f%s"]

    /// The log of the repository at `repository`.
    public init(repository: String) {
        self.repository = repository
    }

    deinit {
        counting.withLock { $0.task?.cancel() }
        stream.withLock { $0?.close() }
    }

    /// Checks that git runs and `repository` is a repository; throws ``Git/Failure`` otherwise.
    public func check() async throws {
        _ = try await Git.run(["rev-parse", "--git-dir"], in: repository)
    }

    /// The number of commits, counting them if nobody asked yet; `nil` if git could not say.
    public func total() async -> Int? {
        await countingTask().value
    }

    /// The number of commits if already counted.
    public var knownTotal: Int? {
        counting.withLock { $0.value }
    }

    private func countingTask() -> Task<Int?, Never> {
        counting.withLock { counting in
            if let task = counting.task { return task }
            let repository = repository
            let task = Task { [weak self] () -> Int? in
                guard let data = try? await Git.run(["rev-list", "--count", "HEAD"], in: repository),
                      let count = Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
                else { return nil }
                self?.counting.withLock { $0.value = count }
                return count
            }
            counting.task = task
            return task
        }
    }

    /// `size` commits from `offset`, newest first.
    public func page(at offset: Int, size: Int) async throws -> Page<Int, Commit> {
        let commits: [Commit]
        if let streamed = await readFromStream(at: offset, count: size) {
            commits = streamed
        } else {
            do {
                commits = Self.parse(try await Git.run(["log", "--skip=\(offset)", "--max-count=\(size)"] + Self.format, in: repository))
            } catch Git.Failure.failed(_, _, let message) where message.contains("does not have any commits") {
                return Page(items: [], cursorAfter: nil, itemsAfter: 0)  // a new, empty repository
            }
        }
        let count = knownTotal  // pages never wait for, nor start, the count
        let end = offset + commits.count
        let more = commits.count == size && (count.map { end < $0 } ?? true)
        return Page(items: commits, cursorAfter: more ? end : nil, itemsAfter: count.map { max(0, $0 - end) })
    }

    /// The commits from the in-order stream (starting it for a page near the front); `nil` when the
    /// page must be asked with `--skip`.
    private func readFromStream(at offset: Int, count: Int) async -> [Commit]? {
        let current = stream.withLock { stream -> LogStream? in
            if stream == nil, offset <= Self.streamReach, let executable = Git.executable {
                stream = LogStream(executable: executable, repository: repository, arguments: ["log"] + Self.format)
            }
            return stream
        }
        return await current?.commits(at: offset, count: count, reach: Self.streamReach)
    }

    /// Parses `git log -z --format=%H%x1f%h%x1f%ad%x1f%an%x1f%s` output; a record that does not
    /// have the five fields is skipped.
    public static func parse(_ data: Data) -> [Commit] {
        data.split(separator: 0).compactMap { record in
            let fields = record.split(separator: 0x1F, maxSplits: 4, omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
            guard fields.count == 5 else { return nil }
            return Commit(hash: fields[0], shortHash: fields[1], date: fields[2], author: fields[3], subject: fields[4])
        }
    }
}

/// One `git log` process, read on a serial queue of its own: requests are served in the order they
/// come, each reading as far as it needs. The last commits read are kept, so a page asked again, or
/// asked after a later one, is served without git.
final class LogStream: @unchecked Sendable {
    // Safe: every `var` below is touched only by blocks on `queue`, which is serial.
    private let queue = DispatchQueue(label: "GitHistory.LogStream")
    private let process: Process
    private let handle: FileHandle
    private var buffer = Data()
    /// The last commits read; the last of them is commit `position - 1`.
    private var kept: [Commit] = []
    /// Commits read from git so far.
    private var position = 0
    private var ended = false
    /// git exited with an error: pages are asked with `--skip`, which reports it.
    private var failed = false
    private var closed = false
    /// Commits kept behind the position.
    static let keep = 1_000

    init?(executable: URL, repository: String, arguments: [String]) {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-C", repository] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["LC_ALL": "C", "GIT_PAGER": "cat"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        self.process = process
        handle = output.fileHandleForReading
    }

    /// Commits `offset ..< offset + count` (fewer at the end of the log), or `nil` if they lie
    /// behind what is kept, more than `reach` past the position, or git failed.
    func commits(at offset: Int, count: Int, reach: Int) async -> [Commit]? {
        await withCheckedContinuation { continuation in
            queue.async { [self] in continuation.resume(returning: serve(offset, count, reach)) }
        }
    }

    private func serve(_ offset: Int, _ count: Int, _ reach: Int) -> [Commit]? {
        guard !closed, offset >= position - kept.count, offset - position <= reach else { return nil }
        let (wanted, overflow) = offset.addingReportingOverflow(count)
        let end = overflow ? Int.max : wanted
        while position < end, !ended { readChunk() }
        if failed { return nil }
        let first = position - kept.count
        let commits = Array(kept[min(kept.count, offset - first) ..< min(kept.count, end - first)])
        if kept.count > Self.keep { kept.removeFirst(kept.count - Self.keep) }
        return commits
    }

    /// Reads what the pipe has and parses the complete records in it.
    private func readChunk() {
        let chunk = handle.availableData
        guard !chunk.isEmpty else {
            ended = true
            process.waitUntilExit()
            failed = process.terminationStatus != 0
            return
        }
        buffer.append(chunk)
        guard let last = buffer.lastIndex(of: 0) else { return }
        let commits = GitLog.parse(buffer[buffer.startIndex ... last])
        buffer.removeSubrange(buffer.startIndex ... last)
        kept += commits
        position += commits.count
    }

    /// Ends git and the stream; requests after it are asked with `--skip`.
    func close() {
        queue.async { [self] in
            closed = true
            if process.isRunning { process.terminate() }
            try? handle.close()
        }
    }
}

/// What a commit changed: `git show --numstat`, summed.
public struct DiffStat: Sendable, Hashable, Codable {
    /// Files changed.
    public var files: Int
    /// Lines added (binary files count none).
    public var added: Int
    /// Lines removed.
    public var removed: Int

    /// A stat.
    public init(files: Int, added: Int, removed: Int) {
        (self.files, self.added, self.removed) = (files, added, removed)
    }

    /// `3 files +120 −4`.
    public var description: String { "\(files) file\(files == 1 ? "" : "s") +\(added) −\(removed)" }

    /// Sums `git show --numstat --format=` output (`added<TAB>removed<TAB>path`, `-` for binary).
    public static func parse(_ data: Data) -> DiffStat {
        var stat = DiffStat(files: 0, added: 0, removed: 0)
        for line in data.split(separator: 0x0A) {
            let fields = line.split(separator: 0x09, maxSplits: 2)
            guard fields.count == 3 else { continue }
            // Saturating: the numbers come from another program.
            stat.files = stat.files.addingReportingOverflow(1).overflow ? .max : stat.files + 1
            stat.added = Self.sum(stat.added, fields[0])
            stat.removed = Self.sum(stat.removed, fields[1])
        }
        return stat
    }

    private static func sum(_ total: Int, _ field: Data.SubSequence) -> Int {
        let value = Int(String(decoding: field, as: UTF8.self)) ?? 0  // "-" for a binary file
        let (sum, overflow) = total.addingReportingOverflow(max(0, value))
        return overflow ? .max : sum
    }
}

/// Commits' diff stats, computed by `git show --numstat`. The stats asked at about the same time (a
/// screen's rows) are computed by one git process — a process per row would cost more than the
/// stats — and a batch nobody waits for any more has its git process terminated.
public final class DiffStats: Processor {
    /// The repository.
    public let repository: String
    private let batcher: Batcher<String, DiffStat>

    /// A processor for the repository at `repository`; at most `maxBatch` commits per git process.
    public init(repository: String, maxBatch: Int = 64) {
        self.repository = repository
        batcher = Batcher(maxBatch: maxBatch) { hashes in
            // Each commit's numstat follows a NUL and its hash, so the output splits by commit.
            let output = try await Git.run(["show", "--numstat", "--format=%x00%H", "--no-renames"] + hashes, in: repository)
            var stats: [String: DiffStat] = [:]
            for record in output.split(separator: 0) {
                guard let newline = record.firstIndex(of: 0x0A) else {
                    stats[String(decoding: record, as: UTF8.self)] = DiffStat(files: 0, added: 0, removed: 0)
                    continue
                }
                stats[String(decoding: record[record.startIndex ..< newline], as: UTF8.self)] = DiffStat.parse(Data(record[newline...]))
            }
            return stats
        }
    }

    /// The stat of the commit `hash`.
    public func process(_ hash: String) async throws -> DiffStat {
        try await batcher.value(for: hash)
    }
}

/// Answers the requests made at about the same time with one call: a batch opens with its first
/// request and runs `gather` later, or as soon as it holds `maxBatch` keys, with every key asked
/// meanwhile. A request whose task is cancelled leaves its batch at once; a batch nobody waits for
/// any more is cancelled (its git process terminated).
final class Batcher<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    typealias Run = @Sendable ([Key]) async throws -> [Key: Value]

    /// The batch ran but did not answer for a key.
    struct NoAnswer: Error, CustomStringConvertible {
        let key: String
        var description: String { "no answer for \(key)" }
    }

    private struct Waiter {
        let key: Key
        let continuation: CheckedContinuation<Value, any Error>
    }

    private struct Batch {
        var waiters: [UInt64: Waiter] = [:]
        var running: Task<Void, Never>?
    }

    private struct State {
        var nextID: UInt64 = 0
        /// The batch still taking requests.
        var open: UInt64?
        var batches: [UInt64: Batch] = [:]
    }

    private let maxBatch: Int
    private let gather: Duration
    private let run: Run
    private let state = Mutex(State())

    init(maxBatch: Int, gather: Duration = .milliseconds(2), run: @escaping Run) {
        self.maxBatch = max(1, maxBatch)
        self.gather = gather
        self.run = run
    }

    func value(for key: Key) async throws -> Value {
        let ids = Mutex<(batch: UInt64, waiter: UInt64)?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let (batchID, waiterID, opened, full) = state.withLock { state -> (UInt64, UInt64, Bool, Bool) in
                    state.nextID &+= 1
                    let waiterID = state.nextID
                    var opened = false
                    if state.open == nil {
                        state.nextID &+= 1
                        state.open = state.nextID
                        state.batches[state.nextID] = Batch()
                        opened = true
                    }
                    let batchID = state.open ?? 0
                    state.batches[batchID]?.waiters[waiterID] = Waiter(key: key, continuation: continuation)
                    return (batchID, waiterID, opened, state.batches[batchID]?.waiters.count ?? 0 >= maxBatch)
                }
                ids.withLock { $0 = (batchID, waiterID) }
                if full {
                    fire(batchID)
                } else if opened {
                    let gather = gather
                    Task { [weak self] in
                        try? await Task.sleep(for: gather)
                        self?.fire(batchID)
                    }
                }
                if Task.isCancelled { leave(batchID, waiterID) }
            }
        } onCancel: {
            if let (batch, waiter) = ids.withLock({ $0 }) { leave(batch, waiter) }
        }
    }

    /// Closes batch `id` and runs it (once).
    private func fire(_ id: UInt64) {
        let keys = state.withLock { state -> [Key]? in
            guard let batch = state.batches[id], batch.running == nil, state.open == id else { return nil }
            state.open = nil
            return Array(Set(batch.waiters.values.map(\.key)))
        }
        guard let keys else { return }
        let running = Task { [self] in
            do {
                finish(id, with: .success(try await run(keys)))
            } catch {
                finish(id, with: .failure(error))
            }
        }
        let abandoned = state.withLock { state -> Bool in
            guard state.batches[id] != nil else { return true }  // everyone left meanwhile
            state.batches[id]?.running = running
            return false
        }
        if abandoned { running.cancel() }
    }

    private func finish(_ id: UInt64, with result: Result<[Key: Value], any Error>) {
        let waiters = state.withLock { $0.batches.removeValue(forKey: id).map { Array($0.waiters.values) } ?? [] }
        for waiter in waiters {
            switch result {
            case .success(let values):
                if let value = values[waiter.key] {
                    waiter.continuation.resume(returning: value)
                } else {
                    waiter.continuation.resume(throwing: NoAnswer(key: String(describing: waiter.key)))
                }
            case .failure(let error):
                waiter.continuation.resume(throwing: error)
            }
        }
    }

    /// A cancelled request leaves at once; its batch is cancelled if nobody is left in it.
    private func leave(_ batchID: UInt64, _ waiterID: UInt64) {
        let (waiter, emptied) = state.withLock { state -> (Waiter?, Task<Void, Never>?) in
            guard let waiter = state.batches[batchID]?.waiters.removeValue(forKey: waiterID) else { return (nil, nil) }
            guard state.batches[batchID]?.waiters.isEmpty == true else { return (waiter, nil) }
            // Nobody left: later requests open a new batch, and this one stops.
            if state.open == batchID { state.open = nil }
            return (waiter, state.batches.removeValue(forKey: batchID)?.running)
        }
        waiter?.continuation.resume(throwing: CancellationError())
        emptied?.cancel()
    }
}
