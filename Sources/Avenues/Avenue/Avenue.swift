import Synchronization

// Inlinable: `item(at:)`, `state(at:)` and `prepareItem` run specialized in the client (see benchmark "item(at:) on 10,000 loaded rows"), and with them the state machine, row table and storage reads they call.
/// Loads values for the rows of a list by row index: shown rows first, each key once, stored by key.
///
/// `Index` is where a value is shown (a row), `Key` says what to load (a URL, a path, an id), and
/// `Value` is the result. The avenue keeps which row shows which key; results are kept in `storage`
/// **by key**, so two rows showing one key share one value, rows can move, and a disk cache stays
/// valid across runs. Work goes through an ``AutoProcessor``, which runs each key once at a time.
///
/// ```swift
/// let avenue = Avenue<Int, String, Int>(
///     storage: MemoryStorage(countLimit: 1_000),
///     processor: ClosureProcessor { path in try await lineCount(of: path) }
/// )
/// avenue.onStateChange = { row in redraw(row) }
/// avenue.prepareItem(for: paths[7], at: 7)   // on screen: starts (or joins) the work
/// let lines = avenue.item(at: 7)              // nil until loaded; then the value
/// avenue.cancel(at: 7)                        // scrolled away: drop this row's claim
/// ```
///
/// **A screen never empties itself.** A row prepared at `.visible` keeps the last value it got, even
/// when a bounded storage evicts it (``item(at:)`` still returns it; preparing the row again loads
/// it back into storage, showing the kept value meanwhile). So a visible row that has no value is
/// always loading or failed, whatever the storage's limits. A visible row that failed is tried
/// again by the avenue itself when its ``retryPolicy`` wait is over (at most once a second), so a
/// server coming back shows without a key press; rows prepared at `.prefetch` are tried again only
/// when prepared again.
///
/// Every method is thread-safe and returns without waiting for work or for callbacks. A row is told
/// once per change (`onStateChange`, ``subscribe()``), after its value is readable with ``item(at:)``;
/// callbacks of one avenue never run concurrently and may call back into the avenue. Once
/// ``cancel(at:)`` returns, the row is told nothing more about the load it cancelled — with one
/// exception: a callback another thread had already decided to make (see ``cancel(at:)``).
/// Releasing the avenue releases its claims.
public final class Avenue<Index: Hashable & Sendable, Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Called with a row whose state changed.
    public typealias StateChangeHandler = @Sendable (Index) -> Void
    /// Called with the error and the row whose load failed.
    public typealias ErrorHandler = @Sendable (any Error, Index) -> Void

    /// Where results are kept, by key.
    public let storage: any Storage<Key, Value>
    /// `storage`'s read and write, captured where its type is known: a call through the existential
    /// would run the storage's generic code unspecialized, several times slower per read (the
    /// `item(at:)` rows of "Instruction counts" in Benchmarks/README.md).
    @usableFromInline let _read: @Sendable (Key) -> StoredValue<Value>?
    @usableFromInline let _write: @Sendable (Value, Key) -> Void
    /// How failed keys are retried.
    public let retryPolicy: RetryPolicy
    /// The clock of retry waits (replaceable in tests).
    @usableFromInline let _now: @Sendable () -> ContinuousClock.Instant
    /// Sleeps until an instant of `_now`'s clock: how the retry timer waits (replaceable in tests).
    @usableFromInline let _sleep: @Sendable (ContinuousClock.Instant) async throws -> Void
    /// What makes the values; shared de-duplication if it is shared with other avenues.
    public let processor: AutoProcessor<Key, Value>
    /// Where callbacks run.
    public let callbackMode: CallbackMode

    @usableFromInline typealias Machine = AvenueStateMachine<Index, Key, Value, AutoProcessor<Key, Value>.Claim>
    @usableFromInline typealias Tagged = AvenueChanges<Index>.Tagged

    /// One of the avenue's listeners: each is told every change, in the order they were added.
    @usableFromInline
    enum Listener {
        /// Added with ``observe(_:)``.
        case observer(@Sendable (AvenueEvent<Index>) -> Void)
        /// A ``subscribe()`` reader's buffer.
        case subscription(ChangeSubscription<Index>)
        /// ``onStateChange`` and ``onError``: an adapter that calls whatever they hold when told.
        case properties
    }

    /// What ``onStateChange`` and ``onError`` hold, and their adapter's place among the listeners.
    @usableFromInline
    struct Properties {
        @usableFromInline var onStateChange: StateChangeHandler?
        @usableFromInline var onError: ErrorHandler?
        @usableFromInline var listenerID: UInt64?
        @inlinable init() {}
    }

    /// Everything the avenue keeps under its one lock: the rows (the pure state machine), the
    /// listeners and the retry timer.
    @usableFromInline
    struct Guarded {
        @usableFromInline var machine: Machine
        @usableFromInline var listeners = ListenerList<Listener>()
        @usableFromInline var properties = Properties()
        /// The task that retries failed visible rows when their wait is over, and when it wakes.
        @usableFromInline var retryTimer: (task: Task<Void, Never>?, deadline: ContinuousClock.Instant?) = (nil, nil)
        @inlinable init(machine: Machine) { self.machine = machine }
    }

    /// The one lock. Other components (the processor, storage, callbacks) are called after it.
    @usableFromInline let _state: Locked<Guarded>
    /// Serializes callbacks without making any thread wait for another's callbacks: changes waiting
    /// to be told, oldest first.
    @usableFromInline let _deliveries = SerialDrain<[Machine.Delivery]>()

    /// Creates an avenue.
    ///
    /// - Parameters:
    ///   - storage: where values are kept, by key. Read synchronously by ``item(at:)``.
    ///   - processor: what makes values.
    ///   - maxConcurrent: how many values are made at once. `nil` (the default) leaves it to the
    ///     processor: an ``AutoProcessor`` is used as it is, with its limit (avenues given one share
    ///     its de-duplication and workers); a ``SchedulingProcessor`` (``AsyncMedia``,
    ///     ``MultiplexerMap``, their transforms) keeps its one queue and limit — the avenue only
    ///     claims, asking through ``SchedulingProcessor/process(_:priority:)`` with each row's
    ///     priority, which follows the row; any other processor runs in a new `AutoProcessor` of 6
    ///     workers. A number runs any processor in a new `AutoProcessor` of that many workers (at
    ///     least 1; priorities still reach a scheduling processor inside it).
    ///   - callbackMode: where callbacks run; `.completingThread` by default.
    ///   - retryPolicy: how long a failed key waits before it loads again; ``RetryPolicy/default`` by
    ///     default (waits from 1 s doubling to 60 s, offline detection).
    @inlinable
    public convenience init(
        storage: some Storage<Key, Value>,
        processor: some Processor<Key, Value>,
        maxConcurrent: Int? = nil,
        callbackMode: CallbackMode = .completingThread,
        retryPolicy: RetryPolicy = .default
    ) {
        self.init(
            storage: storage, processor: Self.scheduler(for: processor, maxConcurrent: maxConcurrent),
            callbackMode: callbackMode, retryPolicy: retryPolicy,
            now: { .now }, sleep: { try await Saturating.sleep(until: $0, on: ContinuousClock()) },
            writesLoads: !((storage as? any StorageFilledByItsProcessor)?.isFilled(by: processor) ?? false)
        )
    }

    /// The `AutoProcessor` an avenue runs `processor` through (see ``init(storage:processor:maxConcurrent:callbackMode:retryPolicy:)``).
    @inlinable
    static func scheduler(for processor: some Processor<Key, Value>, maxConcurrent: Int?) -> AutoProcessor<Key, Value> {
        if let maxConcurrent { return AutoProcessor(maxConcurrent: maxConcurrent, processor) }
        if let shared = processor as? AutoProcessor<Key, Value> { return shared }
        if let scheduling = processor as? any SchedulingProcessor<Key, Value> {
            // Claims only: the chain's own scheduler orders and limits the work.
            return AutoProcessor(
                maxConcurrent: .max, reservedForVisible: 0, rateLimit: nil, executor: nil, propagatesPriority: true,
                work: AutoProcessor.work(of: scheduling), availableOffline: { processor.isAvailableOffline($0) },
                namesRuns: false  // its work only hands each key to the chain's own scheduler
            )
        }
        return AutoProcessor(processor)
    }

    @inlinable
    init(
        storage: some Storage<Key, Value>,
        processor: AutoProcessor<Key, Value>,
        callbackMode: CallbackMode,
        retryPolicy: RetryPolicy,
        now: @escaping @Sendable () -> ContinuousClock.Instant,
        sleep: @escaping @Sendable (ContinuousClock.Instant) async throws -> Void,
        writesLoads: Bool = true
    ) {
        self.storage = storage
        self._read = { storage.lookup($0) }
        // A storage its processor fills itself (a map's own copies) keeps what that processor chose
        // to keep: written again here, a fetch the map had declined to keep (older than a refresh
        // or a value set meanwhile) came back as fresh.
        if writesLoads {
            self._write = { storage.set($0, for: $1) }
        } else {
            self._write = { _, _ in }
        }
        self.retryPolicy = retryPolicy
        self._now = now
        self._sleep = sleep
        self._state = Locked(Guarded(machine: Machine(retryPolicy: retryPolicy)))
        self.processor = processor
        self.callbackMode = callbackMode
    }

    deinit {
        let (timer, effects, listeners) = _state.withLock { state in
            (state.retryTimer.task, state.machine.releaseAll(), state.listeners.entries)
        }
        timer?.cancel()
        for claim in effects.release { processor.release(claim) }
        for case .subscription(let buffer) in listeners.map(\.listener) { buffer.finish() }
    }

    // MARK: Callbacks

    /// Called with a row whose state changed: loaded, failed, or cancelled by a shared processor.
    /// Never called for a row's own `prepareItem` that found its value stored (read it right away).
    ///
    /// One slot, for the simple case: setting it replaces the handler before. It is an adapter over
    /// the avenue's listeners (``observe(_:)`` adds any number of them): with ``onError``, it is
    /// told in the place the first of the two was set.
    public var onStateChange: StateChangeHandler? {
        get { _state.withLock { $0.properties.onStateChange } }
        set { setProperty(\.onStateChange, newValue) }
    }

    /// Called with the error and the row when a load fails, just before `onStateChange` for that row.
    /// One slot, like ``onStateChange``.
    public var onError: ErrorHandler? {
        get { _state.withLock { $0.properties.onError } }
        set { setProperty(\.onError, newValue) }
    }

    /// Puts `handler` in the property at `slot`, with the properties' adapter among the listeners
    /// while either property holds one. The handler replaced is released after the lock: the
    /// deinit of what it captured is user code.
    func setProperty<Handler: Sendable>(_ slot: any WritableKeyPath<Properties, Handler?> & Sendable, _ handler: Handler?) {
        let replaced = _state.withLock { state in
            defer { Self.placeProperties(in: &state) }
            let held = state.properties[keyPath: slot]
            state.properties[keyPath: slot] = handler
            return held
        }
        _ = replaced
    }

    /// Keeps the properties' adapter among the listeners while either property holds a handler.
    static func placeProperties(in state: inout Guarded) {
        let wanted = state.properties.onStateChange != nil || state.properties.onError != nil
        if wanted, state.properties.listenerID == nil {
            state.properties.listenerID = state.listeners.add(.properties)
        } else if !wanted, let id = state.properties.listenerID {
            state.listeners.remove(id)
            state.properties.listenerID = nil
        }
    }

    /// Tells `observer` every change of the rows from now on — a row loaded, failed (with the
    /// error), or cancelled by a shared processor — until the returned observation is cancelled or
    /// the avenue is gone. Any number of observers may be added; they are told in the order they were
    /// added, on the thread ``callbackMode`` says, never concurrently, and may call back into the
    /// avenue. An event for a row released before it is told is not told.
    @discardableResult
    public func observe(_ observer: @escaping @Sendable (AvenueEvent<Index>) -> Void) -> ChangeObservation {
        let id = _state.withLock { $0.listeners.add(.observer(observer)) }
        return ChangeObservation { [weak self] in
            _ = self?._state.withLock { $0.listeners.remove(id) }
        }
    }

    /// Sets ``onStateChange`` to a closure isolated to the main actor, for a front end whose state
    /// lives there. With `callbackMode: .mainActor` it runs in the callback's turn on the main queue;
    /// with another mode it is sent to the main queue, in order.
    public func onStateChange(onMainActor handler: @escaping @MainActor @Sendable (Index) -> Void) {
        let mode = callbackMode
        onStateChange = { index in mode.runOnMainActor { handler(index) } }
    }

    /// Sets ``onError`` to a closure isolated to the main actor; see ``onStateChange(onMainActor:)``.
    public func onError(onMainActor handler: @escaping @MainActor @Sendable (any Error, Index) -> Void) {
        let mode = callbackMode
        onError = { error, index in mode.runOnMainActor { handler(error, index) } }
    }

    /// A new subscription to the rows' changes, as an async sequence for front ends that
    /// `for await`: it receives the changes from this call on, and ends when the avenue is released
    /// or the sequence and its iterators are. Subscribe before preparing rows, so no change is
    /// missed. A reader that falls behind gets each row's newest change (never more than one event
    /// per row is buffered), and an event for a row released before it is read is skipped.
    public func subscribe() -> AvenueChanges<Index> {
        let buffer = ChangeSubscription<Index> { [weak self] index, ticket in
            self?._state.withLock { $0.machine.isCurrent(index, ticket: ticket) } ?? false
        }
        let id = _state.withLock { $0.listeners.add(.subscription(buffer)) }
        return AvenueChanges(subscription: .init(buffer: buffer) { [weak self] in
            _ = self?._state.withLock { $0.listeners.remove(id) }
            buffer.finish()
        })
    }

    // MARK: Rows

    /// Row `index` shows `key`: if the value is stored there is nothing to do (read it with
    /// ``item(at:)`` right away); if the key is loading, the row joins that load; else a load starts.
    ///
    /// A row showing another key is moved to `key` (its old claim is dropped). Preparing a row that
    /// already waits for `key` only updates its priority, so calling this on every redraw is cheap.
    /// A stale stored value is shown at once while a load replaces it. A failed row is retried once
    /// its ``retryPolicy`` wait is over — by this call, or at `.visible` by the avenue itself
    /// (``retry(at:)`` retries at once).
    ///
    /// - Parameters:
    ///   - key: the key whose value the row shows.
    ///   - index: the row.
    ///   - priority: `.visible` (the default), `.prefetch` or `.background`.
    @inlinable
    public func prepareItem(for key: Key, at index: Index, priority: LoadPriority = .visible) {
        prepare(key, at: index, priority: priority, force: false)
    }

    /// Loads row `index`'s key again now, even if it failed and is waiting (or gave up): for a
    /// "try again" key in a front end.
    @inlinable
    public func retry(at index: Index) {
        guard let (key, priority) = _state.withLock({ state -> (Key, LoadPriority)? in
            guard let row = state.machine.rows[index] else { return nil }
            state.machine.forgetFailure(of: row.key)
            return (row.key, row.phase.priority)
        }) else { return }
        prepare(key, at: index, priority: priority, force: true)
    }

    /// Prepares rows in order, as a ``prepareItem(for:at:priority:)`` call for each would, with
    /// one lock for the quick checks of them all: a prefetcher prepares its whole window (a few
    /// hundred rows, most of them waiting or loaded) on every frame a list moves.
    @inlinable
    func prepare(_ requests: [(row: Index, key: Key, priority: LoadPriority)]) {
        let checks = _state.withLock { state in
            requests.map { state.machine.quickCheck(at: $0.row, for: $0.key, priority: $0.priority) }
        }
        for (request, check) in zip(requests, checks) {
            switch check {
            case .waiting:
                continue
            case .settled:
                // Read outside the lock, as `prepare(_:at:priority:force:)` does.
                if let found = _read(request.key), !found.isStale { continue }
            case .other:
                break
            }
            prepare(request.key, at: request.row, priority: request.priority, force: false)
        }
    }

    @inlinable
    func prepare(_ key: Key, at index: Index, priority: LoadPriority, force: Bool) {
        let (check, firstEpoch) = _state.withLock { state in
            (state.machine.quickCheck(at: index, for: key, priority: priority), state.machine.storeEpoch)
        }
        if case .waiting = check { return }
        var (settled, epoch) = (check == .settled, firstEpoch)
        let now = _now()
        var availableOffline: Bool?
        while true {
            // Read outside the lock: a storage may be slow (a disk layer) and `item(at:)` must not wait.
            let found = _read(key)
            if settled, let found, !found.isStale { return }
            let outcome: (retryAt: UInt64?, askOffline: Bool, effects: Machine.Effects) = _state.withLock { state in
                let answer = state.machine.prepare(
                    key, at: index, priority: priority, found: found, epoch: epoch, now: now, force: force, availableOffline: availableOffline
                )
                switch answer {
                case .retry:
                    return (state.machine.storeEpoch, false, Machine.Effects())
                case .askOffline:
                    return (nil, true, Machine.Effects())
                case .done(let effects):
                    return (nil, false, effects)
                }
            }
            if outcome.askOffline {
                // Asked outside the lock (it is the processor's code): a key it holds loads while offline.
                availableOffline = processor.isAvailableOffline(key)
                continue
            }
            perform(outcome.effects)
            guard let newEpoch = outcome.retryAt else { return }
            (settled, epoch) = (false, newEpoch)
        }
    }

    /// The value row `index` shows — fresh or stale — or `nil` if it has none. Reads storage; never
    /// waits for work. A row prepared at `.visible` keeps showing the last value it got even when a
    /// bounded storage has evicted it.
    @inlinable
    public func item(at index: Index) -> Value? {
        guard let key = key(at: index) else { return nil }
        if let found = _read(key) { return found.value }
        return _state.withLock { $0.machine.pin(at: index, for: key) }
    }

    /// The key row `index` is assigned to, if any.
    @inlinable
    public func key(at index: Index) -> Key? {
        _state.withLock { $0.machine.key(at: index) }
    }

    /// What row `index` shows now: nothing, a load, a value (fresh or stale), or a failure with when
    /// it is tried again.
    @inlinable
    public func state(at index: Index) -> ItemState {
        let now = _now()
        guard let (row, retryAt) = _state.withLock({ state -> (Machine.Row, ContinuousClock.Instant?)? in
            guard let row = state.machine.rows[index] else { return nil }
            return (row, state.machine.retryAt(of: row.key, now: now))
        }) else { return .empty }
        // Storage first; a visible row's pin stands in for a value storage let go of.
        let found = _read(row.key) ?? row.pin.map { StoredValue($0, isStale: !row.phase.isSettled) }
        switch (row.phase, found?.isStale) {
        case (_, false?): return .loaded
        case (.waiting, true?): return .stale(revalidating: true, error: nil)
        case (.waiting, nil): return .loading
        case (.failed(let error, _), true?): return .stale(revalidating: false, error: error)
        case (.failed(let error, _), nil): return .failed(error, retryAt: retryAt)
        case (.settled, true?): return .stale(revalidating: false, error: nil)
        case (.settled, nil): return .empty
        }
    }

    /// Releases row `index`: drops its claim (the work stops if no other row or caller wants the key)
    /// and forgets the row. The value stays in storage.
    ///
    /// After this returns, no callback about the row's cancelled load is made, and ``subscribe()`` skips
    /// any event for it not read yet — exactly, when it is called from a callback or from the queue
    /// or actor the callbacks run on. From another thread, a callback that a delivery on another
    /// thread had already checked and was about to make (or was making) may still arrive: this never
    /// waits for another thread's callbacks, because waiting on user code can deadlock (a callback
    /// doing `DispatchQueue.main.sync` while the main thread cancels). Such a late callback names a
    /// row the front end already let go; reading the row then shows it empty.
    ///
    /// - Important: never blocks on callbacks, so it may be called while holding a lock that
    ///   callbacks take, or from inside a callback of this or another avenue.
    @inlinable
    public func cancel(at index: Index) {
        perform(_state.withLock { state in state.machine.release(index) })
    }

    /// Stops loading `key` for every row of this avenue; those rows are forgotten. Other users of a
    /// shared processor keep their claims.
    @inlinable
    public func cancel(for key: Key) {
        perform(_state.withLock { state in state.machine.cancelLoad(of: key) })
    }

    /// Releases every row and claim of this avenue. The avenue stays usable.
    @inlinable
    public func cancelAll() {
        perform(_state.withLock { state in state.machine.releaseAll() })
    }

    /// Counters of what the avenue has done.
    public var statistics: AvenueStatistics {
        _state.withLock { $0.machine.statistics }
    }

    /// Sizes of the avenue's tables: assigned rows and loads in flight.
    public var tableSizes: AvenueTableSizes {
        _state.withLock { AvenueTableSizes(rows: $0.machine.rows.count, loads: $0.machine.loads.count) }
    }

    // MARK: Internals

    /// Makes the processor calls `effects` asks for, after the lock: the processor is another
    /// component, with a lock of its own. The claim of a load just started is recorded under the
    /// lock again (the load may have ended or changed priority meanwhile: ``AvenueStateMachine/attach(_:to:loadID:askedAt:)``
    /// says what to do then); claims are released (their work's cancellation handlers run here);
    /// values rows let go of are dropped; the retry timer is armed if a visible row failed.
    @inlinable
    func perform(_ effects: Machine.Effects) {
        var effects = effects
        if let start = effects.start {
            let claim = processor.observe(start.key, priority: start.priority) { [weak self] result, cancelledForEveryone in
                self?.finish(start.key, loadID: start.loadID, result: result, cancelledForEveryone: cancelledForEveryone)
            }
            let attached = _state.withLock { $0.machine.attach(claim, to: start.key, loadID: start.loadID, askedAt: start.priority) }
            effects.release += attached.release
            effects.reprioritize += attached.reprioritize
        }
        for change in effects.reprioritize { syncPriority(of: change.key, loadID: change.loadID, claim: change.claim) }
        for claim in effects.release { processor.release(claim) }
        if effects.failedVisibly { scheduleRetries() }
        _ = effects  // pins and rows dropped here, outside the lock
    }

    /// Gives `claim` the priority its load wants. Called after the lock, two threads may set it out
    /// of order (the older priority last), so each reads the wanted priority again after setting it
    /// and sets it again if it moved: the last to set it sees the newest.
    @inlinable
    func syncPriority(of key: Key, loadID: UInt64, claim: AutoProcessor<Key, Value>.Claim) {
        var set: LoadPriority?
        while let wanted = _state.withLock({ $0.machine.claimedPriority(of: key, loadID: loadID) }), wanted != set {
            processor.setPriority(wanted, for: claim)
            set = wanted
        }
    }

    /// A load finished on a processor worker.
    @inlinable
    func finish(_ key: Key, loadID: UInt64, result: Result<Value, any Error>, cancelledForEveryone: Bool) {
        let outcome: Machine.Outcome
        var loaded: Value?
        switch result {
        case .success(let value):
            // Stored before rows are told, so `item(at:)` reads it in the callback.
            _write(value, key)
            outcome = .loaded
            loaded = value
        case .failure where cancelledForEveryone:
            outcome = .cancelled
        case .failure(let error):
            // Including a CancellationError the work threw although nobody cancelled it: the work
            // gave up, which is a failure (reported, and retried when the row is prepared again).
            outcome = .failed(error)
        }
        let now = _now()
        let random = Double.random(in: 0...1)
        let completion = _state.withLock { $0.machine.complete(key, loadID: loadID, outcome: outcome, value: loaded, now: now, random: random) }
        if completion.retriesChanged { scheduleRetries() }
        guard !completion.deliveries.isEmpty else { return }
        let deliveries = completion.deliveries
        callbackMode.run { [self] in deliver(deliveries) }
    }

    // MARK: Retrying visible rows

    /// Arms the timer for the earliest moment a failed visible row may load again (at once if one
    /// already may), unless it is armed for that moment or earlier.
    @usableFromInline
    func scheduleRetries() {
        let now = _now()
        // The deadline and the timer under one lock: no other thread arms the timer in between.
        let replaced = _state.withLock { state -> Task<Void, Never>?? in
            guard let deadline = state.machine.nextRetry(now: now) else { return .none }
            if let armed = state.retryTimer.deadline, armed <= deadline, state.retryTimer.task != nil { return .none }
            let previous = state.retryTimer.task
            let sleep = _sleep
            state.retryTimer.deadline = deadline
            state.retryTimer.task = Task.detached { [weak self] in
                if deadline > now { do { try await sleep(deadline) } catch { return } }
                self?.retryDueRows()
            }
            return .some(previous)
        }
        if case .some(let previous?) = replaced { previous.cancel() }  // outside the lock: it runs handlers
    }

    /// Prepares again every failed visible row whose wait is over, then arms the timer for the rest.
    @usableFromInline
    func retryDueRows() {
        let now = _now()
        let due = _state.withLock { state in
            state.retryTimer = (nil, nil)
            return state.machine.dueRetries(now: now)
        }
        for (index, key) in due { prepare(key, at: index, priority: .visible, force: false) }
        scheduleRetries()
    }

    /// Tells the rows' observers, one delivery at a time: a thread that finds another thread (or an
    /// outer call on its own stack) already telling leaves its deliveries to it and returns, so
    /// callbacks never run concurrently, a callback may re-enter the avenue (or its processor), and
    /// no thread ever waits for another's callbacks.
    @inlinable
    func deliver(_ batch: [Machine.Delivery]) {
        _deliveries.submit({ pending in
            var all = pending.take() ?? []
            all += batch
            pending = all
        }, drain: tell)
    }

    @inlinable
    func tell(_ batch: [Machine.Delivery]) {
        let (listeners, properties) = _state.withLock { ($0.listeners.entries, $0.properties) }
        for delivery in batch {
            // Checked before each listener: an earlier one may have released the row.
            func isCurrent() -> Bool {
                _state.withLock { $0.machine.isCurrent(delivery.index, ticket: delivery.ticket) }
            }
            let change: AvenueEvent<Index>.Change
            switch delivery.change {
            case .loaded: change = .loaded
            case .cancelled: change = .cancelled
            case .failed(let error): change = .failed(error)
            }
            let event = AvenueEvent(index: delivery.index, change: change)
            for (_, listener) in listeners {
                switch listener {
                case .observer(let observer):
                    if isCurrent() { observer(event) }
                case .subscription(let buffer):
                    if isCurrent() { buffer.yield(Tagged(event: event, ticket: delivery.ticket)) }
                case .properties:
                    if case .failed(let error) = change, let onError = properties.onError, isCurrent() { onError(error, delivery.index) }
                    if let onStateChange = properties.onStateChange, isCurrent() { onStateChange(delivery.index) }
                }
            }
        }
    }
}
