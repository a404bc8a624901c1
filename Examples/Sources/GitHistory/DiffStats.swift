import Avenues
import Foundation
import Synchronization

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
    /// The paths the stats count (`history -- PATH`), as `git log --stat -- PATH` counts them;
    /// every file when empty.
    public let paths: [String]
    private let batcher: Batcher<String, DiffStat>

    /// A processor for the repository at `repository`, counting the changes to `paths` (all when
    /// empty); at most `maxBatch` commits per git process.
    public init(repository: String, paths: [String] = [], maxBatch: Int = 64) {
        self.repository = repository
        self.paths = paths
        let limit = paths.isEmpty ? [] : ["--"] + paths
        batcher = Batcher(maxBatch: maxBatch) { hashes in
            // Each commit's numstat follows a NUL and its hash, so the output splits by commit.
            // git's defaults (renames detected), so the stat is what `git show --stat` says.
            let output = try await Git.run(["show", "--numstat", "--format=%x00%H"] + hashes + limit, in: repository)
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
        /// Whether it was fired (closed to requests, its keys taken to run).
        var fired = false
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
                    // Closed in this look at the lock: a request made before `fire` takes it would
                    // join a full batch.
                    let full = state.batches[batchID]?.waiters.count ?? 0 >= maxBatch
                    if full { state.open = nil }
                    return (batchID, waiterID, opened, full)
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
            guard let batch = state.batches[id], !batch.fired else { return nil }
            state.batches[id]?.fired = true
            if state.open == id { state.open = nil }
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
