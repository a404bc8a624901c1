/// How much an ``AutoProcessor`` is holding, for tests and diagnostics.
public struct AutoProcessorTableSizes: Sendable, Hashable, CustomStringConvertible {
    /// Keys queued, running or being delivered.
    public var runs: Int
    /// Claims waiting on those keys.
    public var waiters: Int
    /// Entries in the priority queues, including stale ones not yet compacted.
    public var queueEntries: Int
    /// Worker tasks alive.
    public var workers: Int

    @usableFromInline
    init(runs: Int, waiters: Int, queueEntries: Int, workers: Int) {
        (self.runs, self.waiters, self.queueEntries, self.workers) = (runs, waiters, queueEntries, workers)
    }

    /// `true` when the processor holds nothing at all.
    public var isIdle: Bool { runs == 0 && waiters == 0 && queueEntries == 0 && workers == 0 }

    /// A one-line summary.
    public var description: String {
        "runs: \(runs), waiters: \(waiters), queue entries: \(queueEntries), workers: \(workers)"
    }
}
