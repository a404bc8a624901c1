/// Everything ``AutoProcessor`` decides, as a pure value: which runs exist, who waits for them, what is
/// queued, which worker runs what. It starts no task and resumes no one; each event returns an action
/// that ``AutoProcessor`` carries out after leaving its lock. That makes the hard cases (a late
/// completion of a cancelled run, prepare-then-cancel in one tick, claim counting) plain unit tests.
///
/// Invariants:
/// - a key has at most one run; a run has a token never reused, so results are matched to runs;
/// - a queued or running run has at least one claim (the last claim leaving removes the run);
/// - a queue entry is live only while its run is `.queued` at that queue's priority with that token;
///   stale entries are skipped when popped and compacted when they pile up;
/// - at most `maxConcurrent` workers exist, counting cancelled ones whose work has not returned yet.
@usableFromInline
struct AutoProcessorStateMachine<Key: Hashable & Sendable, Value: Sendable> {
    /// One unit of work handed to a worker.
    @usableFromInline
    struct Job: Hashable, Sendable {
        @usableFromInline let key: Key
        @usableFromInline let token: UInt64
        @inlinable init(key: Key, token: UInt64) { (self.key, self.token) = (key, token) }
    }

    @usableFromInline
    enum Phase {
        case queued(LoadPriority)
        case running(worker: UInt64)
        /// The work returned; the waiters it had are being resumed by the worker.
        case delivering(succeeded: Bool)
    }

    @usableFromInline
    struct Run {
        @usableFromInline let token: UInt64
        @usableFromInline var phase: Phase
        @usableFromInline var waiters = WaiterList<Value>()
        @inlinable init(token: UInt64, phase: Phase) { (self.token, self.phase) = (token, phase) }
    }

    /// What to do after a claim was registered.
    @usableFromInline
    enum ClaimAction {
        case none
        /// Start a worker task with this id (inside the lock, so its handle is known at once).
        case spawnWorker(UInt64)
    }

    /// What to do after a claim was withdrawn.
    @usableFromInline
    struct ReleaseAction {
        /// The withdrawn waiter; a suspended caller must be resumed with `CancellationError`.
        @usableFromInline var waiter: Waiter<Value>?
        /// The worker whose run lost its last claim and must be cancelled.
        @usableFromInline var cancelWorker: UInt64?
        @inlinable init(waiter: Waiter<Value>? = nil, cancelWorker: UInt64? = nil) { (self.waiter, self.cancelWorker) = (waiter, cancelWorker) }
    }

    /// What to do after keys were cancelled outright.
    @usableFromInline
    struct CancelAction {
        /// Everyone who was waiting; each gets `CancellationError`.
        @usableFromInline var waiters: [Waiter<Value>] = []
        /// Workers whose running work must be cancelled.
        @usableFromInline var cancelWorkers: [UInt64] = []
        @inlinable init() {}
    }

    /// What a worker does next.
    @usableFromInline
    enum WorkerStep {
        /// Resume these waiters with the result, then report ``endDelivery(of:worker:)``.
        case deliver(Waiters<Value>, Result<Value, any Error>)
        /// Run this job.
        case run(Job)
        /// Stop; if `replacement` is set, start a new worker with that id (this one was cancelled).
        case exit(replacement: UInt64?)
    }

    @usableFromInline let maxConcurrent: Int
    @usableFromInline private(set) var runs: [Key: Run] = [:]
    /// One FIFO per priority, indexed by `LoadPriority.rawValue`.
    @usableFromInline var queues: [RingBuffer<Job>]
    @usableFromInline var staleEntries: [Int]
    /// Live workers; `true` once the worker's run was cancelled (its task is then cancelled too).
    @usableFromInline private(set) var workers: [UInt64: Bool] = [:]
    @usableFromInline var nextToken: UInt64 = 0
    @usableFromInline var nextWorkerID: UInt64 = 0
    /// Runs in `.running`, kept as a count so observing it is O(1).
    @usableFromInline var runningCount = 0
    /// Entries of `workers` that are `true`, so the common worker step skips looking itself up.
    @usableFromInline var cancelledWorkers = 0

    @inlinable
    init(maxConcurrent: Int) {
        precondition(maxConcurrent > 0, "AutoProcessor needs maxConcurrent of 1 or more")
        self.maxConcurrent = maxConcurrent
        queues = LoadPriority.allCases.map { _ in RingBuffer() }
        staleEntries = LoadPriority.allCases.map { _ in 0 }
    }

    // MARK: Claims

    /// Registers claim `id` on `key`: joins the key's run, or queues a new one.
    @inlinable
    mutating func claim(
        _ key: Key, id: UInt64, priority: LoadPriority, waiter: Waiter<Value>
    ) -> ClaimAction {
        let entry = WaiterList<Value>.Entry(priority: priority, waiter: waiter)
        // One hash lookup: the subscript's modify accessor finds (or makes room for) the key's slot once.
        switch Self.join(&runs[key], entry: entry, id: id, newToken: nextToken &+ 1) {
        case .joined:
            return .none
        case .moved(let from, let to, let token):
            queues[to.rawValue].append(Job(key: key, token: token))
            noteStaleEntry(at: from)
            return .none
        case .created(let token):
            nextToken = token
            queues[priority.rawValue].append(Job(key: key, token: token))
            return spawnWorkerIfAllowed().map(ClaimAction.spawnWorker) ?? .none
        }
    }

    /// What ``join(_:entry:id:newToken:)`` did with a key's slot.
    @usableFromInline
    enum JoinOutcome {
        /// The claim joined the run in flight; nothing else changes.
        case joined
        /// The claim joined a queued run and raised it: it must be queued again at `to`.
        case moved(from: LoadPriority, to: LoadPriority, token: UInt64)
        /// A new run with `token` was put in the slot and must be queued.
        case created(token: UInt64)
    }

    /// Adds a claim to the run in `slot`, mutating it in place (a copy would retain its waiters and
    /// make their table non-unique), or puts a new run there.
    @inlinable
    static func join(_ slot: inout Run?, entry: WaiterList<Value>.Entry, id: UInt64, newToken: UInt64) -> JoinOutcome {
        switch slot?.phase {
        case .queued(let current)?:
            // Coalesce: join the queued run; it follows its highest claim.
            slot?.waiters.insert(entry, id: id)
            guard let wanted = slot?.waiters.priority, wanted != current, let token = slot?.token else { return .joined }
            slot?.phase = .queued(wanted)
            return .moved(from: current, to: wanted, token: token)
        case .running?:
            // Coalesce: join the running work.
            slot?.waiters.insert(entry, id: id)
            return .joined
        case .delivering?, nil:
            // After delivery began, this caller asks after the work returned: its answer may be
            // outdated for them (a refresh), and a failure is never shared. A new run replaces the
            // delivering one; its worker sees the new token and leaves it alone.
            var run = Run(token: newToken, phase: .queued(entry.priority))
            run.waiters.insert(entry, id: id)
            slot = run
            return .created(token: newToken)
        }
    }

    /// Withdraws claim `id` on `key`. The run is cancelled when no claim is left.
    @inlinable
    mutating func release(_ key: Key, id: UInt64) -> ReleaseAction {
        guard let index = runs.index(forKey: key),
              let (entry, left, phase) = withRun(at: index, { run in
                  run.waiters.remove(id).map { ($0, run.waiters.count, run.phase) }
              })
        else { return ReleaseAction() }
        var action = ReleaseAction(waiter: entry.waiter)
        if left == 0 {
            switch phase {
            case .queued(let level):
                runs.remove(at: index)
                noteStaleEntry(at: level)
            case .running(let worker):
                runs.remove(at: index)
                runningCount -= 1
                markCancelled(worker)
                action.cancelWorker = worker
            case .delivering:
                preconditionFailure("Invalid state: a delivering run had a claim to release")
            }
        } else {
            followPriority(at: index)
        }
        return action
    }

    /// Changes the priority of claim `id` on `key`; a queued run follows its highest claim.
    @inlinable
    mutating func setPriority(_ priority: LoadPriority, key: Key, id: UInt64) {
        guard let index = runs.index(forKey: key),
              runs.values[index].waiters.setPriority(priority, id: id)
        else { return }
        followPriority(at: index)
    }

    // MARK: Cancellation

    /// Cancels `key` for everyone.
    @inlinable
    mutating func cancel(_ key: Key) -> CancelAction {
        var action = CancelAction()
        guard let index = runs.index(forKey: key) else { return action }
        cancelRun(runs.remove(at: index).value, into: &action)
        return action
    }

    /// Cancels every key for which `isCancelled` is true.
    @inlinable
    mutating func cancel(where isCancelled: (Key) -> Bool) -> CancelAction {
        var action = CancelAction()
        for key in runs.keys.filter(isCancelled) {
            if let run = runs.removeValue(forKey: key) { cancelRun(run, into: &action) }
        }
        return action
    }

    /// Cancels every key. The processor stays usable.
    @inlinable
    mutating func cancelAll() -> CancelAction {
        var action = CancelAction()
        let cancelled = runs
        runs = [:]
        for run in cancelled.values { cancelRun(run, into: &action) }
        for level in queues.indices {
            queues[level].removeAll()
            staleEntries[level] = 0
        }
        return action
    }

    @inlinable
    mutating func cancelRun(_ run: Run, into action: inout CancelAction) {
        var run = run
        action.waiters += run.waiters.removeAll()
        switch run.phase {
        case .queued(let level):
            noteStaleEntry(at: level)
        case .running(let worker):
            runningCount -= 1
            markCancelled(worker)
            action.cancelWorkers.append(worker)
        case .delivering:
            break
        }
    }

    // MARK: Workers

    /// The first job for a newly started worker.
    @inlinable
    mutating func start(worker: UInt64) -> WorkerStep {
        next(worker: worker)
    }

    /// Worker `worker` finished `job` with `result`.
    @inlinable
    mutating func finish(_ job: Job, worker: UInt64, result: Result<Value, any Error>) -> WorkerStep {
        let succeeded = if case .success = result { true } else { false }
        guard let index = runs.index(forKey: job.key),
              let waiters = withRun(at: index, { run -> Waiters<Value>? in
                  guard run.token == job.token, case .running(worker) = run.phase else { return nil }
                  run.phase = .delivering(succeeded: succeeded)
                  return run.waiters.removeAll()
              })
        else {
            // The run was cancelled (and maybe replaced by a newer one): drop the late result.
            return next(worker: worker)
        }
        runningCount -= 1
        return .deliver(waiters, result)
    }

    /// Worker `worker` resumed the waiters of `job`'s run: the run leaves the tables (unless a newer
    /// run of the key replaced it meanwhile) and the worker gets its next job.
    @inlinable
    mutating func endDelivery(of job: Job, worker: UInt64) -> WorkerStep {
        if let index = runs.index(forKey: job.key), withRun(at: index, { run in
            guard run.token == job.token else { return false }
            precondition(run.waiters.isEmpty, "Invalid state: a delivering run gained waiters")
            return true
        }) {
            runs.remove(at: index)
        }
        return next(worker: worker)
    }

    @inlinable
    mutating func next(worker: UInt64) -> WorkerStep {
        // Looked up only while some worker is cancelled, so the usual step hashes nothing for it.
        if cancelledWorkers > 0, workers[worker] == true {
            // A cancelled task stays cancelled, so this worker leaves and a fresh one takes over.
            workers[worker] = nil
            cancelledWorkers -= 1
            return .exit(replacement: hasQueuedWork ? spawnWorkerIfAllowed() : nil)
        }
        for level in LoadPriority.allCases.reversed() {
            while let job = queues[level.rawValue].popFirst() {
                if let index = runs.index(forKey: job.key), withRun(at: index, { run in
                    guard run.token == job.token, case .queued(level) = run.phase else { return false }
                    run.phase = .running(worker: worker)
                    return true
                }) {
                    runningCount += 1
                    return .run(job)
                }
                staleEntries[level.rawValue] -= 1
            }
        }
        workers[worker] = nil
        return .exit(replacement: nil)
    }

    /// Notes that `worker`'s run was cancelled; it leaves when it next asks for work.
    @inlinable
    mutating func markCancelled(_ worker: UInt64) {
        if workers.updateValue(true, forKey: worker) == false { cancelledWorkers += 1 }
    }

    /// Gives `body` the run at `index` in place. Reading through `runs.values[index]` would copy the
    /// run (its getter returns a value), retaining and releasing every waiter it holds.
    @inlinable
    mutating func withRun<Result>(at index: Dictionary<Key, Run>.Index, _ body: (inout Run) -> Result) -> Result {
        body(&runs.values[index])
    }

    @inlinable
    var hasQueuedWork: Bool {
        queues.indices.contains { queues[$0].count > staleEntries[$0] }
    }

    @inlinable
    mutating func spawnWorkerIfAllowed() -> UInt64? {
        guard workers.count < maxConcurrent else { return nil }
        nextWorkerID &+= 1
        workers[nextWorkerID] = false
        return nextWorkerID
    }

    // MARK: Queue upkeep

    /// Keeps a queued run in the queue of its highest claim: raised work moves to the back of the
    /// higher queue (ahead of everything lower), lowered work to the back of the lower one. The old
    /// entry goes stale.
    @inlinable
    mutating func followPriority(at index: Dictionary<Key, Run>.Index) {
        let move = withRun(at: index) { run -> (from: LoadPriority, to: LoadPriority, token: UInt64)? in
            let wanted = run.waiters.priority
            guard case .queued(let current) = run.phase, wanted != current else { return nil }
            run.phase = .queued(wanted)
            return (current, wanted, run.token)
        }
        guard let move else { return }
        queues[move.to.rawValue].append(Job(key: runs.keys[index], token: move.token))
        noteStaleEntry(at: move.from)
    }

    @inlinable
    mutating func noteStaleEntry(at level: LoadPriority) {
        staleEntries[level.rawValue] += 1
        let stale = staleEntries[level.rawValue]
        if stale == queues[level.rawValue].count {
            // Nothing live is queued at this level: drop the entries now, so a processor whose
            // claims were all released holds nothing (and no key stays alive in its queue).
            queues[level.rawValue].removeAll()
            staleEntries[level.rawValue] = 0
            return
        }
        // Compact when stale entries are the majority, so a long stretch of prepare/cancel while
        // every worker is busy cannot grow the queue without bound.
        guard stale > 32, stale * 2 > queues[level.rawValue].count else { return }
        let runs = self.runs
        queues[level.rawValue].removeAll { job in
            guard let run = runs[job.key], run.token == job.token, case .queued(level) = run.phase else {
                return true
            }
            return false
        }
        staleEntries[level.rawValue] = 0
    }

    // MARK: Observation

    /// The state of `key`.
    @inlinable
    func state(of key: Key) -> ProcessingState {
        guard let run = runs[key] else { return .none }
        switch run.phase {
        case .queued: return .queued
        case .running: return .running
        case .delivering(succeeded: true): return .completed
        case .delivering(succeeded: false): return .failed
        }
    }

    /// Sizes of every table, to prove bookkeeping is bounded.
    @inlinable
    var tableSizes: AutoProcessorTableSizes {
        AutoProcessorTableSizes(
            runs: runs.count,
            waiters: runs.values.reduce(0) { $0 + $1.waiters.count },
            queueEntries: queues.reduce(0) { $0 + $1.count },
            workers: workers.count
        )
    }

    /// Keys waiting for a worker and keys whose work is running; O(1).
    @inlinable
    var activity: AutoProcessorActivity {
        AutoProcessorActivity(
            queued: queues.indices.reduce(0) { $0 + queues[$1].count - staleEntries[$1] },
            running: runningCount
        )
    }
}

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

/// What an ``AutoProcessor`` is doing now, for status lines.
public struct AutoProcessorActivity: Sendable, Hashable {
    /// Keys waiting for a worker.
    public var queued: Int
    /// Keys whose work is running.
    public var running: Int

    @usableFromInline
    init(queued: Int, running: Int) {
        (self.queued, self.running) = (queued, running)
    }
}
