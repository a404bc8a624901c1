// Inlinable because `AutoProcessor` is (see there).
/// Everything ``AutoProcessor`` decides, as a pure value: which runs exist, who waits for them, what is
/// queued, which worker runs what. It starts no task and resumes no one; each event returns an action
/// that ``AutoProcessor`` carries out after leaving its lock. That makes the hard cases (a late
/// completion of a cancelled run, prepare-then-cancel in one tick, claim counting) plain unit tests.
///
/// Invariants:
/// - a key has at most one run; a run has a token never reused, so results are matched to runs. A
///   queued run takes a new token each time its priority changes, so the entry it leaves behind
///   can never match it again (it would come back to life if the run returned to that priority:
///   its old place, and a run counted twice once a compaction kept both entries);
/// - a queued or running run has at least one claim (the last claim leaving removes the run);
/// - a queue entry is live only while its run is `.queued` at that queue's priority with that token;
///   stale entries are skipped when popped and compacted when they pile up;
/// - at most `maxConcurrent` workers exist, counting cancelled ones whose work has not returned yet
///   and not counting those whose run waits for another run of this processor (a **lender**: its
///   slot is lent while it waits, so a chain of dependencies deeper than `maxConcurrent` never
///   deadlocks; a worker whose wait ends finishes its run, and the surplus leaves at its next step);
/// - **admission control:** running work below `.visible` (`.prefetch` and `.background` together)
///   holds at most `maxConcurrent − reservedForVisible` workers, so visible work never waits behind
///   prefetches that already started. A running run's
///   priority follows its claims like a queued one's (a raised prefetch frees a prefetch slot).
/// - **no idle slot while work may start:** an event that frees a slot, or a slot of the prefetch
///   share (a raise, a cancellation), starts a worker for queued work that may take it, rather than
///   leave it to wait for unrelated work to return (`AutoProcessorPromiseTests` checks it after
///   every event).
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
        case running(worker: UInt64, priority: LoadPriority)
        /// The work returned; the waiters it had are being resumed by the worker.
        case delivering(succeeded: Bool)
    }

    @usableFromInline
    struct Run {
        /// New for each queue entry of the run (see the invariants).
        @usableFromInline var token: UInt64
        @usableFromInline var phase: Phase
        @usableFromInline var waiters = WaiterList<Value>()
        @inlinable init(token: UInt64, phase: Phase) { (self.token, self.phase) = (token, phase) }
    }

    /// A running run whose priority changed: the worker's run-priority context must follow. The
    /// priority itself is read when it is told (``runningPriority(of:worker:)``), never carried: a
    /// change told after a newer one would undo it.
    @usableFromInline
    struct Reprioritized {
        @usableFromInline let key: Key
        @usableFromInline let worker: UInt64
        @inlinable init(key: Key, worker: UInt64) { (self.key, self.worker) = (key, worker) }
    }

    /// What to do after a claim was registered or its priority changed.
    @usableFromInline
    struct ClaimAction {
        /// Start a worker task with this id (inside the lock, so its handle is known at once).
        @usableFromInline var spawnWorker: UInt64?
        @usableFromInline var reprioritized: Reprioritized?
        @inlinable init(spawnWorker: UInt64? = nil, reprioritized: Reprioritized? = nil) {
            (self.spawnWorker, self.reprioritized) = (spawnWorker, reprioritized)
        }
    }

    /// What to do after a claim was withdrawn.
    @usableFromInline
    struct ReleaseAction {
        /// The withdrawn waiter; a suspended caller must be resumed with `CancellationError`.
        @usableFromInline var waiter: Waiter<Value>?
        /// The worker whose run lost its last claim and must be cancelled.
        @usableFromInline var cancelWorker: UInt64?
        /// The run's priority fell or rose with the claim that left.
        @usableFromInline var followUp = ClaimAction()
        @inlinable init(waiter: Waiter<Value>? = nil, cancelWorker: UInt64? = nil) { (self.waiter, self.cancelWorker) = (waiter, cancelWorker) }
    }

    /// What to do after keys were cancelled outright.
    @usableFromInline
    struct CancelAction {
        /// Everyone who was waiting; each gets `CancellationError`.
        @usableFromInline var waiters: [Waiter<Value>] = []
        /// Workers whose running work must be cancelled.
        @usableFromInline var cancelWorkers: [UInt64] = []
        /// Workers to start: cancelled prefetch work frees its share for queued prefetch work.
        @usableFromInline var spawnWorkers: [UInt64] = []
        @inlinable init() {}
    }

    /// What a worker does next.
    @usableFromInline
    enum WorkerStep {
        /// Resume these waiters with the result, then report ``endDelivery(of:worker:)``.
        case deliver(Waiters<Value>, Result<Value, any Error>)
        /// Run this job at this priority.
        case run(Job, LoadPriority)
        /// Stop; if `replacement` is set, start a new worker with that id (this one was cancelled).
        case exit(replacement: UInt64?)
    }

    @usableFromInline let maxConcurrent: Int
    /// The most workers running work below `.visible` at once.
    @usableFromInline let prefetchBudget: Int
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
    /// Runs in `.running` below `.visible` (`.prefetch` or `.background`): they share `prefetchBudget`.
    @usableFromInline var runningPrefetch = 0
    /// Workers spawned for work below `.visible` that have not asked for their first job yet: each
    /// holds a slot of the prefetch share until it does. One spawned for `.visible` work holds none,
    /// so that it cannot keep queued prefetch work from a free slot when it takes visible work.
    @usableFromInline var prefetchStarts: Set<UInt64> = []
    /// Running runs waiting for other runs of this processor, by worker: they lend their slot.
    @usableFromInline var lenders: [UInt64: Lender] = [:]
    /// Lenders whose run is below `.visible`: their prefetch slot is lent too.
    @usableFromInline var lendingPrefetch = 0

    /// A running run that waits for other keys of this processor (a request made from inside its
    /// work).
    @usableFromInline
    struct Lender {
        /// The run's token: a wait that outlives the run (a task its work left behind) lends nothing.
        @usableFromInline let token: UInt64
        /// The keys it waits for, with how many of its requests wait for each (a work may ask for
        /// many keys at once, or for one key twice): taken back in any order in O(1).
        @usableFromInline var awaiting: [Key: Int]
        @inlinable init(token: UInt64, awaiting: [Key: Int]) { (self.token, self.awaiting) = (token, awaiting) }
    }

    @inlinable
    init(maxConcurrent: Int, reservedForVisible: Int = 0) {
        precondition(maxConcurrent > 0, "AutoProcessor needs maxConcurrent of 1 or more")
        precondition(reservedForVisible >= 0, "AutoProcessor reservedForVisible must be 0 or more")
        self.maxConcurrent = maxConcurrent
        // At least one worker may always run prefetch work, or it would never run.
        prefetchBudget = max(1, maxConcurrent - reservedForVisible)
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
            return ClaimAction()
        case .moved(let from, let to, let token):
            return requeue(key, from: from, to: to, token: token)
        case .raisedRunning(let worker, let from, let to):
            return followRunning(key, worker: worker, from: from, to: to)
        case .created(let token):
            nextToken = token
            queues[priority.rawValue].append(Job(key: key, token: token))
            return ClaimAction(spawnWorker: spawnWorkerIfAllowed(for: priority))
        }
    }

    /// What ``join(_:entry:id:newToken:)`` did with a key's slot.
    @usableFromInline
    enum JoinOutcome {
        /// The claim joined the run in flight; nothing else changes.
        case joined
        /// The claim joined a queued run and raised it: it must be queued again at `to`, under its
        /// new `token`.
        case moved(from: LoadPriority, to: LoadPriority, token: UInt64)
        /// A new run with `token` was put in the slot and must be queued.
        case created(token: UInt64)
        /// The claim joined a running run and changed its priority.
        case raisedRunning(worker: UInt64, from: LoadPriority, to: LoadPriority)
    }

    /// Adds a claim to the run in `slot`, mutating it in place (a copy would retain its waiters and
    /// make their table non-unique), or puts a new run there.
    @inlinable
    static func join(_ slot: inout Run?, entry: WaiterList<Value>.Entry, id: UInt64, newToken: UInt64) -> JoinOutcome {
        switch slot?.phase {
        case .queued(let current)?:
            // Coalesce: join the queued run; it follows its highest claim.
            slot?.waiters.insert(entry, id: id)
            guard let wanted = slot?.waiters.priority, wanted != current else { return .joined }
            slot?.phase = .queued(wanted)
            slot?.token = newToken
            return .moved(from: current, to: wanted, token: newToken)
        case .running(let worker, let current)?:
            // Coalesce: join the running work, which follows its highest claim too.
            slot?.waiters.insert(entry, id: id)
            guard let wanted = slot?.waiters.priority, wanted != current else { return .joined }
            slot?.phase = .running(worker: worker, priority: wanted)
            return .raisedRunning(worker: worker, from: current, to: wanted)
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
            case .running(let worker, let priority):
                runs.remove(at: index)
                stopRunning(worker: worker, priority: priority)
                markCancelled(worker)
                action.cancelWorker = worker
                if priority != .visible { action.followUp.spawnWorker = refillPrefetchShare() }
            case .delivering:
                preconditionFailure("Invalid state: a delivering run had a claim to release")
            }
        } else {
            action.followUp = followPriority(at: index)
        }
        return action
    }

    /// Changes the priority of claim `id` on `key`; the run follows its highest claim.
    @inlinable
    mutating func setPriority(_ priority: LoadPriority, key: Key, id: UInt64) -> ClaimAction {
        guard let index = runs.index(forKey: key),
              runs.values[index].waiters.setPriority(priority, id: id)
        else { return ClaimAction() }
        return followPriority(at: index)
    }

    // MARK: Cancellation

    /// Cancels `key` for everyone.
    @inlinable
    mutating func cancel(_ key: Key) -> CancelAction {
        var action = CancelAction()
        guard let index = runs.index(forKey: key) else { return action }
        let freed = cancelRun(runs.remove(at: index).value, into: &action)
        refillPrefetchShare(freed, into: &action)
        return action
    }

    /// Cancels every key for which `isCancelled` is true.
    @inlinable
    mutating func cancel(where isCancelled: (Key) -> Bool) -> CancelAction {
        var action = CancelAction()
        var freed = 0
        for key in runs.keys.filter(isCancelled) {
            if let run = runs.removeValue(forKey: key) { freed += cancelRun(run, into: &action) }
        }
        refillPrefetchShare(freed, into: &action)
        return action
    }

    /// Cancels every key. The processor stays usable.
    @inlinable
    mutating func cancelAll() -> CancelAction {
        var action = CancelAction()
        let cancelled = runs
        runs = [:]
        // Nothing is left queued, so the prefetch share freed has no work to refill.
        for run in cancelled.values { _ = cancelRun(run, into: &action) }
        for level in queues.indices {
            queues[level].removeAll()
            staleEntries[level] = 0
        }
        return action
    }

    /// Cancels a run taken out of the table; returns the slots of the prefetch share it freed (1 for
    /// running work below `.visible`, else 0).
    @inlinable
    mutating func cancelRun(_ run: Run, into action: inout CancelAction) -> Int {
        var run = run
        action.waiters += run.waiters.removeAll()
        switch run.phase {
        case .queued(let level):
            noteStaleEntry(at: level)
        case .running(let worker, let priority):
            stopRunning(worker: worker, priority: priority)
            markCancelled(worker)
            action.cancelWorkers.append(worker)
            return priority == .visible ? 0 : 1
        case .delivering:
            break
        }
        return 0
    }

    /// Running work below `.visible` was cancelled: it freed a slot of the prefetch share while its
    /// worker keeps its own slot until the work returns. Queued prefetch work may take that share
    /// now, on a worker of its own if one is free, rather than wait for unrelated work to return.
    @inlinable
    mutating func refillPrefetchShare() -> UInt64? {
        hasAdmissibleWork ? spawnWorkerIfAllowed(for: .prefetch) : nil
    }

    /// ``refillPrefetchShare()`` for `freed` slots of the share.
    @inlinable
    mutating func refillPrefetchShare(_ freed: Int, into action: inout CancelAction) {
        for _ in 0 ..< freed {
            guard let worker = refillPrefetchShare() else { return }
            action.spawnWorkers.append(worker)
        }
    }

    // MARK: Workers

    /// The first job for a newly started worker.
    @inlinable
    mutating func start(worker: UInt64) -> WorkerStep {
        if !prefetchStarts.isEmpty { prefetchStarts.remove(worker) }
        return next(worker: worker)
    }

    /// Worker `worker` finished `job` with `result`.
    @inlinable
    mutating func finish(_ job: Job, worker: UInt64, result: Result<Value, any Error>) -> WorkerStep {
        let succeeded = if case .success = result { true } else { false }
        guard let index = runs.index(forKey: job.key),
              let (waiters, priority) = withRun(at: index, { run -> (Waiters<Value>, LoadPriority)? in
                  guard run.token == job.token, case .running(worker, let priority) = run.phase else { return nil }
                  run.phase = .delivering(succeeded: succeeded)
                  return (run.waiters.removeAll(), priority)
              })
        else {
            // The run was cancelled (and maybe replaced by a newer one): drop the late result.
            return next(worker: worker)
        }
        stopRunning(worker: worker, priority: priority)
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
            return .exit(replacement: hasAdmissibleWork ? spawnWorkerIfAllowed(for: .visible) : nil)
        }
        // A lender's wait ended while the slot it lent was taken: one worker too many leaves.
        if workers.count - lenders.count > maxConcurrent {
            workers[worker] = nil
            return .exit(replacement: nil)
        }
        for level in LoadPriority.allCases.reversed() {
            // Admission control: prefetch work waits while it already holds its share of workers.
            if level != .visible, runningPrefetch - lendingPrefetch >= prefetchBudget { break }
            while let job = queues[level.rawValue].popFirst() {
                if let index = runs.index(forKey: job.key), withRun(at: index, { run in
                    guard run.token == job.token, case .queued(level) = run.phase else { return false }
                    run.phase = .running(worker: worker, priority: level)
                    return true
                }) {
                    runningCount += 1
                    if level != .visible { runningPrefetch += 1 }
                    // What is left at this level may be stale entries only (a run queued here twice,
                    // lowered and raised again): dropped now, so an idle processor holds no key.
                    let stale = staleEntries[level.rawValue]
                    if stale > 0, stale == queues[level.rawValue].count {
                        queues[level.rawValue].removeAll()
                        staleEntries[level.rawValue] = 0
                    }
                    return .run(job, level)
                }
                staleEntries[level.rawValue] -= 1
            }
        }
        workers[worker] = nil
        return .exit(replacement: nil)
    }

    /// `worker`'s run at `priority` stopped running (it returned, or lost its last claim): it no
    /// longer holds a slot, and lends none.
    @inlinable
    mutating func stopRunning(worker: UInt64, priority: LoadPriority) {
        runningCount -= 1
        if priority != .visible { runningPrefetch -= 1 }
        if !lenders.isEmpty, lenders.removeValue(forKey: worker) != nil, priority != .visible { lendingPrefetch -= 1 }
    }

    // MARK: Runs that wait for runs

    /// Whether `worker`, running `job`, would wait for itself by waiting for `key`: `key`'s run is
    /// `job`'s, or a running run that waits (through others of this processor) for `job`'s.
    @inlinable
    func wouldWaitForItself(_ job: Job, worker: UInt64, on key: Key) -> Bool {
        var pending = [key]
        var seen: Set<Key> = []
        while let next = pending.popLast() {
            guard seen.insert(next).inserted, let run = runs[next], case .running(let running, _) = run.phase else { continue }
            if running == worker, run.token == job.token { return true }
            if let lender = lenders[running] { pending += lender.awaiting.keys }
        }
        return false
    }

    /// `worker`, running `job`, waits for `key`'s run: it lends its slot (and its prefetch slot)
    /// while it waits, so the run it waits for can start. Returns a worker to start, if queued work
    /// can take the slot. Nothing is lent if `job` no longer runs on `worker`.
    @inlinable
    mutating func lend(_ job: Job, worker: UInt64, awaiting key: Key) -> UInt64? {
        guard case .running(worker, let priority)? = runs[job.key]?.phase, runs[job.key]?.token == job.token else { return nil }
        if lenders[worker] != nil {
            lenders[worker]?.awaiting[key, default: 0] += 1
            return nil
        }
        lenders[worker] = Lender(token: job.token, awaiting: [key: 1])
        if priority != .visible { lendingPrefetch += 1 }
        guard hasAdmissibleWork else { return nil }
        return spawnWorkerIfAllowed(for: highestQueuedPriority == .visible ? .visible : .prefetch)
    }

    /// `worker`'s wait for `key` (made while it ran `job`) ended: once it waits for nothing, its
    /// slot is its own again.
    @inlinable
    mutating func reclaim(_ job: Job, worker: UInt64, awaiting key: Key) {
        guard lenders[worker]?.token == job.token else { return }
        // In place: a copy of the lender would copy its table of waits on every reclaim.
        if let waits = lenders[worker]?.awaiting[key] { lenders[worker]?.awaiting[key] = waits > 1 ? waits - 1 : nil }
        guard lenders[worker]?.awaiting.isEmpty == true else { return }
        lenders[worker] = nil
        if case .running(worker, let priority)? = runs[job.key]?.phase, priority != .visible { lendingPrefetch -= 1 }
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

    /// Queued work a new worker could start now (visible, or prefetch within its share).
    @inlinable
    var hasAdmissibleWork: Bool {
        let visible = LoadPriority.visible.rawValue, prefetch = LoadPriority.prefetch.rawValue
        let background = LoadPriority.background.rawValue
        return queues[visible].count > staleEntries[visible]
            || (runningPrefetch - lendingPrefetch < prefetchBudget
                && (queues[prefetch].count > staleEntries[prefetch] || queues[background].count > staleEntries[background]))
    }

    /// A new worker for work at `priority`, if the limits allow one.
    @inlinable
    mutating func spawnWorkerIfAllowed(for priority: LoadPriority) -> UInt64? {
        guard workers.count - lenders.count < maxConcurrent,
              priority == .visible || runningPrefetch - lendingPrefetch + prefetchStarts.count < prefetchBudget
        else { return nil }
        nextWorkerID &+= 1
        workers[nextWorkerID] = false
        if priority != .visible { prefetchStarts.insert(nextWorkerID) }
        return nextWorkerID
    }

    // MARK: Queue upkeep

    /// Keeps a run at the priority of its highest claim. A queued run moves to the back of the queue
    /// of its new priority, under a new token (raised work goes ahead of everything lower; the old
    /// entry goes stale for good); a
    /// running one is re-counted for admission control and its worker's context must follow.
    @inlinable
    mutating func followPriority(at index: Dictionary<Key, Run>.Index) -> ClaimAction {
        let newToken = nextToken &+ 1
        let move = withRun(at: index) { run -> PriorityMove? in
            let wanted = run.waiters.priority
            switch run.phase {
            case .queued(let current) where wanted != current:
                run.phase = .queued(wanted)
                run.token = newToken
                return .queued(from: current, to: wanted, token: newToken)
            case .running(let worker, let current) where wanted != current:
                run.phase = .running(worker: worker, priority: wanted)
                return .running(worker, from: current, to: wanted)
            default:
                return nil
            }
        }
        switch move {
        case .queued(let from, let to, let token)?:
            return requeue(runs.keys[index], from: from, to: to, token: token)
        case .running(let worker, let from, let to)?:
            return followRunning(runs.keys[index], worker: worker, from: from, to: to)
        case nil:
            return ClaimAction()
        }
    }

    /// A queued run of `key` moved from `from` to `to` under its new `token`: it goes to the back of
    /// `to`'s queue, and its entry at `from` goes stale. Raised to `.visible`, it may start a worker.
    @inlinable
    mutating func requeue(_ key: Key, from: LoadPriority, to: LoadPriority, token: UInt64) -> ClaimAction {
        nextToken = token
        queues[to.rawValue].append(Job(key: key, token: token))
        noteStaleEntry(at: from)
        return ClaimAction(spawnWorker: to == .visible ? spawnWorkerIfAllowed(for: .visible) : nil)
    }

    /// How ``followPriority(at:)`` moved a run.
    @usableFromInline
    enum PriorityMove {
        case queued(from: LoadPriority, to: LoadPriority, token: UInt64)
        case running(UInt64, from: LoadPriority, to: LoadPriority)
    }

    /// A running run moved from `from` to `to`: recount its prefetch slot; a freed slot may admit
    /// queued prefetch work.
    @inlinable
    mutating func followRunning(_ key: Key, worker: UInt64, from: LoadPriority, to: LoadPriority) -> ClaimAction {
        if from != .visible { runningPrefetch -= 1 }
        if to != .visible { runningPrefetch += 1 }
        if !lenders.isEmpty, lenders[worker] != nil {
            if from != .visible { lendingPrefetch -= 1 }
            if to != .visible { lendingPrefetch += 1 }
        }
        let spawn = from != .visible && to == .visible && hasAdmissibleWork ? spawnWorkerIfAllowed(for: .prefetch) : nil
        return ClaimAction(spawnWorker: spawn, reprioritized: Reprioritized(key: key, worker: worker))
    }

    /// The priority of `key`'s run while `worker` runs it; `nil` once it does not.
    @inlinable
    func runningPriority(of key: Key, worker: UInt64) -> LoadPriority? {
        guard case .running(let running, let priority)? = runs[key]?.phase, running == worker else { return nil }
        return priority
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
    func state(for key: Key) -> ProcessingState {
        guard let run = runs[key] else { return .idle }
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

    /// The highest priority at which a live job is queued; O(1).
    @inlinable
    var highestQueuedPriority: LoadPriority? {
        LoadPriority.allCases.reversed().first { queues[$0.rawValue].count > staleEntries[$0.rawValue] }
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
