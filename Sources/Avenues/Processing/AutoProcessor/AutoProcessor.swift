import Synchronization

// Inlinable: claims, workers and the state machine run specialized in the client (benchmarks "100,000 distinct keys: AutoProcessor" and "10,000 waiters"; unspecialized, 10,000 callers of one fetch took 2.7x a continuation list).
/// Runs a ``Processor`` so that each key is worked on once at a time, by priority, and only while
/// someone still wants it.
///
/// - **Coalescing:** every request for a key that is queued or running joins that run; all callers
///   get the one result. Waiters are resumed from a list, not by each awaiting a shared task.
/// - **Claims:** each request is a claim. A caller that leaves (its task is cancelled, or it calls
///   ``release(_:)``) drops only its own claim; the run is cancelled when no claim is left. Work
///   whose every claim left before a worker picked it up never starts (a free worker on the default
///   executor may pick work up the moment it is queued; its task is then cancelled). ``cancel(for:)``
///   stops a key for everyone.
/// - **Priorities:** at most ``maxConcurrent`` workers (6 by default) drain a queue in which
///   `.visible` work goes before `.prefetch` work, first come first served within a priority. A
///   key's priority is the highest of its claims; raising it moves queued work forward. Running
///   prefetch work holds at most `maxConcurrent − reservedForVisible` workers (admission control),
///   so a row that scrolls into view never waits behind prefetches that already started.
/// - **One scheduler per chain:** when the work is itself a ``SchedulingProcessor`` (downloads
///   through ``AsyncMedia``, say), each job asks it through
///   ``SchedulingProcessor/process(_:priority:)`` with a ``RunPriority`` that follows the priority of
///   the claims the job runs for; and an `AutoProcessor` asked that way claims at that priority and
///   follows it.
/// - **Values made of values:** a work may ask its own processor for other keys (a node of a tree
///   from its children). While it waits, its run lends its worker slot (and its prefetch share), so
///   a chain of dependencies deeper than `maxConcurrent` still ends; when the wait is over the run
///   goes on, and the worker that took the slot leaves after its job, so for that moment one more
///   runs. A request that would wait for itself — its own key, or a key whose run waits, through
///   others of this processor, for it — throws ``AutoProcessorCycleError`` at once. A wait on
///   another processor keeps the slot: that processor's own limit applies.
/// - **Bounded bookkeeping:** a finished run leaves the tables once its result is handed out, and a
///   processor whose claims were all released holds nothing. Failures are never cached: the next
///   request runs the work again. Work that throws `CancellationError` although nobody cancelled it
///   has failed: its waiters receive that error (an ``Avenue`` shows the row as failed).
///
/// An `AutoProcessor` is itself a ``Processor``, so several avenues can share one and with it their
/// de-duplication. It is safe to use from any thread. A cancelled run's task is cancelled; its
/// worker slot is free again when the work returns, so `maxConcurrent` bounds the work really
/// executing (processors should honour cancellation promptly).
///
/// ```swift
/// let checksums = AutoProcessor(maxConcurrent: 4) { (path: String) in try await checksum(of: path) }
/// let sum = try await checksums.value(for: "/etc/hosts")
/// ```
public final class AutoProcessor<Key: Hashable & Sendable, Value: Sendable>: SchedulingProcessor {
    /// A claim on a key made with ``claim(_:priority:completion:)``; give it back with
    /// ``release(_:)`` or change its priority with ``setPriority(_:for:)``.
    public struct Claim: Hashable, Sendable {
        /// The key claimed.
        public let key: Key
        @usableFromInline let id: UInt64

        @usableFromInline
        init(key: Key, id: UInt64) { (self.key, self.id) = (key, id) }
    }

    @usableFromInline typealias Machine = AutoProcessorStateMachine<Key, Value>

    @usableFromInline
    struct State {
        @usableFromInline var machine: Machine
        @usableFromInline var workerTasks: [UInt64: Task<Void, Never>] = [:]
        /// The priority each worker's job runs at, when it is propagated to the work.
        @usableFromInline var contexts: [UInt64: RunPriority] = [:]
        @inlinable init(machine: Machine) { self.machine = machine }
    }

    /// The most work items running at once.
    public var maxConcurrent: Int { _maxConcurrentCount }

    /// Workers kept from prefetch work, so visible work finds one free: prefetch work runs on at most
    /// `maxConcurrent − reservedForVisible` workers (and always on at least one); 0 by default.
    ///
    /// Keep workers back when prefetch work is long and stays wanted. In the scroll simulation, where
    /// prefetches that leave the window are cancelled and visible work is queued first, keeping
    /// workers back changed neither placeholders nor time-to-visible ("Admission control" in
    /// Benchmarks/README.md), hence the default.
    public let reservedForVisible: Int

    @usableFromInline let _maxConcurrentCount: Int
    /// Whether jobs tell their work the priority they run at (the work contains a scheduler).
    @usableFromInline let _propagatesPriority: Bool
    /// What a job runs: the key, and the job's ``RunPriority`` when priorities propagate.
    @usableFromInline typealias Work = @Sendable (Key, RunPriority?) async throws -> Value
    @usableFromInline let _work: Work
    /// The wrapped processor's ``Processor/isAvailableOffline(_:)``, if it has one.
    @usableFromInline let _availableOffline: (@Sendable (Key) -> Bool)?
    @usableFromInline let _executor: (any TaskExecutor)?
    /// The token bucket of ``RateLimit``, if the processor has one.
    @usableFromInline let _startGate: (any RunStartGate)?
    @usableFromInline let _state: Locked<State>
    @usableFromInline let _claimIDs = Atomic<UInt64>(0)
    /// Called (outside the lock) when a worker leaves for want of work, with no replacement: what
    /// AsyncMedia's transfer gate waits for before it gives a slot kept for queued work to work
    /// already prepared.
    @usableFromInline let _workerRetired: (@Sendable () -> Void)?
    /// Whether each job's work runs with its run named (``AutoProcessorRun``), so a request it makes
    /// to this processor lends the slot or is refused as a cycle. Off only for the library's own
    /// processors whose work never asks them again (an avenue's pass-through, AsyncMedia's
    /// downloads): naming a run costs a claim about a fifth more instructions.
    @usableFromInline let _namesRuns: Bool

    /// Creates a processor running `processor`'s work.
    ///
    /// - Parameters:
    ///   - maxConcurrent: the most work items running at once; 6 by default, at least 1.
    ///   - reservedForVisible: workers prefetch work may not take; 0 by default.
    ///   - rateLimit: how many runs may start per second; `nil` (the default) for no limit. A job
    ///     waiting for its turn holds its worker.
    ///   - executor: where the workers run; `nil` (the default) for the global concurrent executor.
    ///     A dedicated executor keeps heavy work off the shared pool; a single-threaded one that runs
    ///     jobs only when asked makes the processor deterministic (the scroll simulator uses one).
    ///   - processor: what makes each value. If it is a ``SchedulingProcessor``, each job asks it
    ///     through ``SchedulingProcessor/process(_:priority:)`` with the job's ``RunPriority``.
    @inlinable
    public convenience init(
        maxConcurrent: Int = 6,
        reservedForVisible: Int = 0,
        rateLimit: RateLimit? = nil,
        executor: (any TaskExecutor)? = nil,
        _ processor: some Processor<Key, Value>
    ) {
        let work: Work
        if let scheduling = processor as? any SchedulingProcessor<Key, Value> {
            work = Self.work(of: scheduling)
        } else {
            work = { key, _ in try await processor.process(key) }
        }
        self.init(
            maxConcurrent: maxConcurrent, reservedForVisible: reservedForVisible, rateLimit: rateLimit, executor: executor,
            propagatesPriority: processor is any SchedulingProcessor<Key, Value>, work: work,
            availableOffline: { processor.isAvailableOffline($0) }
        )
    }

    /// A job's work that asks `processor` at the job's priority (`.visible` for a job without one).
    @inlinable
    static func work(of processor: some SchedulingProcessor<Key, Value>) -> Work {
        { key, run in try await processor.process(key, priority: run ?? RunPriority(.visible)) }
    }

    /// Creates a processor running `work` for each key.
    ///
    /// - Parameters:
    ///   - maxConcurrent: the most work items running at once; 6 by default, at least 1.
    ///   - reservedForVisible: workers prefetch work may not take; 0 by default.
    ///   - rateLimit: how many runs may start per second; `nil` (the default) for no limit.
    ///   - executor: where the workers run; `nil` (the default) for the global concurrent executor.
    ///   - work: what makes each value; should honour task cancellation.
    @inlinable
    public convenience init(
        maxConcurrent: Int = 6,
        reservedForVisible: Int = 0,
        rateLimit: RateLimit? = nil,
        executor: (any TaskExecutor)? = nil,
        _ work: @escaping @Sendable (Key) async throws -> Value
    ) {
        self.init(
            maxConcurrent: maxConcurrent, reservedForVisible: reservedForVisible, rateLimit: rateLimit, executor: executor,
            propagatesPriority: false, work: { key, _ in try await work(key) }
        )
    }

    @inlinable
    init(
        maxConcurrent: Int,
        reservedForVisible: Int,
        rateLimit: RateLimit?,
        executor: (any TaskExecutor)?,
        propagatesPriority: Bool,
        work: @escaping Work,
        availableOffline: (@Sendable (Key) -> Bool)? = nil,
        workerRetired: (@Sendable () -> Void)? = nil,
        namesRuns: Bool = true
    ) {
        let reserved = reservedForVisible
        self._maxConcurrentCount = maxConcurrent
        self.reservedForVisible = reserved
        self._executor = executor
        self._startGate = rateLimit?.makeBucket()
        self._propagatesPriority = propagatesPriority
        self._work = work
        self._availableOffline = availableOffline
        self._workerRetired = workerRetired
        self._namesRuns = namesRuns
        self._state = Locked(State(machine: Machine(maxConcurrent: maxConcurrent, reservedForVisible: reserved)))
    }

    // MARK: Asking for values

    /// The value for `key`: joins the key's run if there is one, else queues a new run.
    ///
    /// Cancelling the calling task withdraws this caller's claim and throws `CancellationError`;
    /// the run goes on for other callers and is cancelled when none is left.
    ///
    /// - Parameters:
    ///   - key: the key whose value is wanted.
    ///   - priority: `.visible` (the default) or `.prefetch`.
    @inlinable
    public func value(for key: Key, priority: LoadPriority = .visible) async throws -> Value {
        try await value(for: key, priority: priority, following: nil)
    }

    /// Whether the processor it runs makes `key` without the network (`false` for work given as a
    /// closure).
    public func isAvailableOffline(_ key: Key) -> Bool {
        _availableOffline?(key) ?? false
    }

    /// The value for `key` at `.visible`: ``value(for:priority:)``, so an `AutoProcessor` can stand
    /// wherever a ``Processor`` is expected.
    @inlinable
    public func process(_ key: Key) async throws -> Value {
        try await value(for: key, priority: .visible, following: nil)
    }

    /// The value for `key`, claimed at `priority`'s value and following its changes, so an
    /// `AutoProcessor` under another scheduler (an ``Avenue``, an outer `AutoProcessor`) is one
    /// scheduler with it.
    @inlinable
    public func process(_ key: Key, priority: RunPriority) async throws -> Value {
        try await value(for: key, priority: priority.value, following: priority)
    }

    /// Claims `key` for the calling task; with `run`, the claim follows that run's priority changes.
    @inlinable
    func value(for key: Key, priority: LoadPriority, following run: RunPriority?) async throws -> Value {
        let id = newClaimID()
        let claim = Claim(key: key, id: id)
        let observer = run?.observe { [weak self] priority in self?.setPriority(priority, for: claim) }
        defer { if let observer { run?.stopObserving(observer) } }
        // Asked from inside one of this processor's runs: that run lends its slot while it waits.
        let asker = AutoProcessorRun.current.get().flatMap { $0.processor == ObjectIdentifier(self) ? $0 : nil }
        let job = asker?.job as? Machine.Job
        // Set once this request's wait is recorded (not when it was refused): only that is taken back.
        var lent = false
        defer { if lent, let asker, let job { _state.withLock { $0.machine.reclaim(job, worker: asker.worker, awaiting: key) } } }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Value, any Error>) in
                let (refusal, reprioritized) = _state.withLock { state -> ((any Error)?, Machine.Reprioritized?) in
                    // Checked inside the lock: a cancel handler that ran before registration found
                    // nothing to withdraw, but the task's flag was already set when it ran.
                    guard !Task.isCancelled else { return (CancellationError(), nil) }
                    if let asker, let job, state.machine.wouldWaitForItself(job, worker: asker.worker, on: key) {
                        return (AutoProcessorCycleError(key: key, asker: job.key), nil)
                    }
                    // The run's priority may have changed since it was read.
                    let current = run?.value ?? priority
                    let reprioritized = register(key, id: id, priority: current, waiter: .continuation(continuation), in: &state)
                    if let asker, let job {
                        apply(state.machine.lend(job, worker: asker.worker, awaiting: key), in: &state)
                        lent = true
                    }
                    return (nil, reprioritized)
                }
                if let reprioritized { follow(reprioritized) }
                if let refusal { continuation.resume(throwing: refusal) }
            }
        } onCancel: {
            release(claim)
        }
    }

    /// Claims `key` without suspending: `completion` is called once with the result, on the worker
    /// that produced it, unless the claim is released first (then it is never called).
    ///
    /// If the key is cancelled for everyone (``cancel(for:)``, ``cancelAll()``), `completion` receives
    /// `CancellationError`. This is the building block for front ends that cannot await, such as
    /// ``Avenue``.
    @inlinable @discardableResult
    public func claim(
        _ key: Key,
        priority: LoadPriority = .visible,
        completion: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Claim {
        let id = newClaimID()
        let reprioritized = _state.withLock { state in
            register(key, id: id, priority: priority, waiter: .callback(completion), in: &state)
        }
        if let reprioritized { follow(reprioritized) }
        return Claim(key: key, id: id)
    }

    /// ``claim(_:priority:completion:)`` for ``Avenue``: `completion` also learns whether a
    /// `CancellationError` means the key was cancelled for everyone (or the work threw it itself).
    @inlinable
    func observe(
        _ key: Key,
        priority: LoadPriority,
        completion: @escaping @Sendable (Result<Value, any Error>, _ cancelledForEveryone: Bool) -> Void
    ) -> Claim {
        let id = newClaimID()
        let reprioritized = _state.withLock { state in
            register(key, id: id, priority: priority, waiter: .observer(completion), in: &state)
        }
        if let reprioritized { follow(reprioritized) }
        return Claim(key: key, id: id)
    }

    /// Withdraws a claim. Releasing a claim that already completed or was released does nothing.
    @inlinable
    public func release(_ claim: Claim) {
        let (action, task, context) = _state.withLock { state in
            let action = state.machine.release(claim.key, id: claim.id)
            apply(action.followUp.spawnWorker, in: &state)
            return (action, action.cancelWorker.flatMap { state.workerTasks[$0] }, action.cancelWorker.flatMap { state.contexts[$0] })
        }
        if let reprioritized = action.followUp.reprioritized { follow(reprioritized) }
        // Before the task learns it: work it handed to another thread can see it first.
        context?.withdraw()
        // Cancelling runs the work's cancellation handlers on this thread, so never under the lock.
        task?.cancel()
        if case .continuation(let continuation)? = action.waiter {
            continuation.resume(throwing: CancellationError())
        }
    }

    /// Changes a claim's priority; queued work follows the highest priority among its claims.
    @inlinable
    public func setPriority(_ priority: LoadPriority, for claim: Claim) {
        let reprioritized = _state.withLock { state in
            let action = state.machine.setPriority(priority, key: claim.key, id: claim.id)
            apply(action.spawnWorker, in: &state)
            return action.reprioritized
        }
        if let reprioritized { follow(reprioritized) }
    }

    // MARK: Cancelling and observing

    /// Stops `key` for everyone: its work is cancelled (or never starts) and every waiter receives
    /// `CancellationError`.
    @inlinable
    public func cancel(for key: Key) {
        carryOut(_state.withLock { state in collect(state.machine.cancel(key), in: &state) })
    }

    /// Stops every key for which `isCancelled` is true, for everyone, as ``cancel(for:)`` does.
    /// `isCancelled` runs inside the processor's lock: it must be quick and must not call back in.
    @inlinable
    func cancel(where isCancelled: @Sendable (Key) -> Bool) {
        carryOut(_state.withLock { state in collect(state.machine.cancel(where: isCancelled), in: &state) })
    }

    /// Stops every key for everyone. The processor stays usable: later requests run normally.
    @inlinable
    public func cancelAll() {
        carryOut(_state.withLock { state in collect(state.machine.cancelAll(), in: &state) })
    }

    /// Where `key` stands now: ``ProcessingState/idle`` unless a run of it is queued, running or
    /// handing out its result.
    @inlinable
    public func state(for key: Key) -> ProcessingState {
        _state.withLock { $0.machine.state(for: key) }
    }

    /// How many keys are queued and running now.
    @inlinable
    public var activity: AutoProcessorActivity {
        _state.withLock { $0.machine.activity }
    }

    /// The highest priority of the work queued now (not yet given a worker), if any.
    @inlinable
    var highestQueuedPriority: LoadPriority? {
        _state.withLock { $0.machine.highestQueuedPriority }
    }

    /// How much the processor holds now; all zero when idle, whatever it did before.
    @inlinable
    public var tableSizes: AutoProcessorTableSizes {
        _state.withLock { $0.machine.tableSizes }
    }

    // MARK: Internals

    @inlinable
    func newClaimID() -> UInt64 {
        _claimIDs.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Registers a claim inside the lock; returns a running run's new priority, which the caller
    /// hands to the run's work with ``follow(_:)`` after leaving the lock.
    @inlinable
    func register(
        _ key: Key, id: UInt64, priority: LoadPriority, waiter: Waiter<Value>, in state: inout State
    ) -> Machine.Reprioritized? {
        let action = state.machine.claim(key, id: id, priority: priority, waiter: waiter)
        apply(action.spawnWorker, in: &state)
        return _propagatesPriority ? action.reprioritized : nil
    }

    @inlinable
    func apply(_ spawn: UInt64?, in state: inout State) {
        if let spawn { spawnWorker(spawn, in: &state) }
    }

    /// Tells a running job's work that its priority changed (outside the lock: the work's scheduler
    /// takes its own lock). The priority told is read from the machine when it is told, not the one
    /// computed with this change: two changes racing on two threads could reach the context in
    /// either order, and the older would win.
    @inlinable
    func follow(_ change: Machine.Reprioritized) {
        guard _propagatesPriority, let context = _state.withLock({ $0.contexts[change.worker] }) else { return }
        let (key, worker) = (change.key, change.worker)
        context.follow { [weak self] in self?._state.withLock { $0.machine.runningPriority(of: key, worker: worker) } }
    }

    /// Starts a worker inside the lock, so its handle is stored before it can be asked to cancel.
    @inlinable
    func spawnWorker(_ worker: UInt64, in state: inout State) {
        // Detached: workers belong to the processor, not to whichever caller happened to start them
        // (no inherited actor, priority or task-locals). Without an executor, the plain spawn:
        // `executorPreference: nil` cost 8 % more instructions per claim (callgrind).
        if let _executor {
            state.workerTasks[worker] = Task.detached(executorPreference: _executor) { [self] in await runWorker(worker) }
        } else {
            state.workerTasks[worker] = Task.detached { [self] in await runWorker(worker) }
        }
    }

    /// Starts the workers a cancellation asks for and gathers what ``carryOut(_:)`` does after the lock.
    @inlinable
    func collect(
        _ action: Machine.CancelAction, in state: inout State
    ) -> (waiters: [Waiter<Value>], tasks: [Task<Void, Never>], runs: [RunPriority]) {
        for worker in action.spawnWorkers { spawnWorker(worker, in: &state) }
        return (action.waiters, action.cancelWorkers.compactMap { state.workerTasks[$0] }, action.cancelWorkers.compactMap { state.contexts[$0] })
    }

    @inlinable
    func carryOut(_ effects: (waiters: [Waiter<Value>], tasks: [Task<Void, Never>], runs: [RunPriority])) {
        // As ``release(_:)`` does: the runs are withdrawn before their tasks learn it.
        for run in effects.runs { run.withdraw() }
        for task in effects.tasks { task.cancel() }
        for waiter in effects.waiters { waiter.resume(with: .failure(CancellationError()), cancelledForEveryone: true) }
    }

    @inlinable
    func runWorker(_ worker: UInt64) async {
        var (step, context) = advance(worker) { $0.start(worker: worker) }
        while case .run(let job, _) = step {
            let result: Result<Value, any Error>
            do {
                if let _startGate { try await _startGate.waitForTurn() }
                if _namesRuns {
                    let current = AutoProcessorRun(processor: ObjectIdentifier(self), worker: worker, job: job)
                    result = .success(try await AutoProcessorRun.current.withValue(current) { try await _work(job.key, context) })
                } else {
                    result = .success(try await _work(job.key, context))
                }
            } catch {
                result = .failure(error)
            }
            (step, context) = advance(worker) { $0.finish(job, worker: worker, result: result) }
            while case .deliver(let waiters, let result) = step {
                for waiter in waiters { waiter.resume(with: result) }
                (step, context) = advance(worker) { $0.endDelivery(of: job, worker: worker) }
            }
        }
        if case .exit(replacement: nil) = step { _workerRetired?() }
    }

    /// Applies a worker event under the lock, retiring the worker's handle and starting its
    /// replacement when the step says so. The worker's ``RunPriority`` (when priorities propagate)
    /// is made and dropped in the same lock, so a job costs no extra lock for it.
    @inlinable
    func advance(
        _ worker: UInt64, _ event: (inout Machine) -> Machine.WorkerStep
    ) -> (Machine.WorkerStep, RunPriority?) {
        var context: RunPriority?
        let step = _state.withLock { state in
            let step = event(&state.machine)
            // The previous job's context ends with it; `follow` finds only the running job's.
            if !state.contexts.isEmpty { state.contexts[worker] = nil }
            switch step {
            case .exit(let replacement):
                state.workerTasks[worker] = nil
                if let replacement { spawnWorker(replacement, in: &state) }
            case .run(_, let priority) where _propagatesPriority:
                context = RunPriority(priority)
                state.contexts[worker] = context
            default:
                break
            }
            return step
        }
        return (step, context)
    }
}

/// The run of an ``AutoProcessor`` the current task works for: a request it makes to the same
/// processor lends the run's slot while it waits, and one that would wait for the run itself is
/// refused.
@usableFromInline
struct AutoProcessorRun: Sendable {
    /// Which processor runs it.
    @usableFromInline let processor: ObjectIdentifier
    @usableFromInline let worker: UInt64
    /// The processor's `Job` (its key and token), whose type the task-local cannot name.
    @usableFromInline let job: any Sendable

    @inlinable
    init(processor: ObjectIdentifier, worker: UInt64, job: any Sendable) {
        (self.processor, self.worker, self.job) = (processor, worker, job)
    }

    /// The run the current task works for, if any. A `TaskLocal` spelled out, not the property
    /// wrapper: the wrapper's projection cannot be used from inlinable code, and calling through a
    /// function that is not specialized cost a claim 60 % more instructions.
    @usableFromInline static let current = TaskLocal<AutoProcessorRun?>(wrappedValue: nil)
}

/// A key's work asked its own processor for a value that waits for that very work: for the same
/// key, or for a key whose run waits (through other runs of the processor) for it. The request
/// would never end; it throws this instead.
///
/// Break the cycle: a value must not depend on itself. A work that asks for other keys of its own
/// processor is fine (its slot is lent while it waits, so deep chains do not deadlock).
public struct AutoProcessorCycleError: Error, CustomStringConvertible, Sendable {
    /// The key asked for.
    public let key: any Hashable & Sendable
    /// The key whose work asked.
    public let asker: any Hashable & Sendable

    /// Creates the error for `key`, asked by the work of `asker`.
    public init(key: any Hashable & Sendable, asker: any Hashable & Sendable) {
        (self.key, self.asker) = (key, asker)
    }

    /// What happened and what to do.
    public var description: String {
        let (asked, by) = (String(describing: key), String(describing: asker))
        let through = AnyHashable(key) == AnyHashable(asker) ? "" : ", whose run waits (directly or through other runs) for \(by)'s"
        return "the work of \(by) asked the processor running it for \(asked)\(through): it would wait for itself for ever; a value must not depend on itself"
    }
}
