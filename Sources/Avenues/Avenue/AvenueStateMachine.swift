// Inlinable because `Avenue`'s hot paths are (see there).
/// Everything ``Avenue`` decides, as a pure value: which row shows which key, which keys are loading
/// for which rows, and which notifications are still current.
///
/// - A row has a **ticket** that changes whenever what the row waits for changes (another key, a
///   retry, a release). A notification carries the ticket it was made for and is delivered only if
///   the row still has it, so a released or reassigned row is never told about an old load.
/// - A **load** exists per key while it is in flight, with one processor claim for all of its rows;
///   its priority is the highest of its rows'. The last row leaving releases the claim. The claim
///   is made after the lock (the processor is another component) and attached when it returns;
///   until then a load has none, and what happened meanwhile (the load ended, its priority moved)
///   is settled when it is attached.
/// - `storeEpoch` counts completed loads, so `prepare` can tell whether a storage miss it saw
///   before taking the lock may be stale.
/// - A **failure** record per key says when the key may load again (``RetryPolicy``); while the
///   avenue is **offline** (a connectivity failure), only one load at a time — a probe — is tried
///   when the wait is over, and the first success ends it.
/// - A stored value may be **stale**: the row shows it while a load (one per key, as always)
///   replaces it.
/// - A row prepared at `.visible` **pins** the last value it got (from storage, or from its load):
///   when a bounded storage evicts it, the row still shows it, so a screen never empties itself.
///   Lowered to `.prefetch`, released or moved to another key, the row drops its pin. Dropped pins
///   leave in ``Effects/dropped`` (or ``Completion/dropped``), to be released after the lock.
/// - `failedVisible` holds exactly the rows whose phase is `.failed` at `.visible`: the rows the
///   avenue retries by itself when their wait is over.
///
/// Invariant: a row at `.visible` is never settled without a value — it has a pin, or storage
/// had its value when it settled (a pin is taken then), or it is waiting or failed.
@usableFromInline
struct AvenueStateMachine<Index: Hashable & Sendable, Key: Hashable & Sendable, Value: Sendable, Claim> {
    @usableFromInline
    enum RowPhase: Sendable {
        /// Not waiting: the value is whatever storage holds for the key, else the row's pin.
        case settled(LoadPriority)
        case waiting(LoadPriority)
        case failed(any Error, LoadPriority)

        /// The priority the row was last prepared at.
        @inlinable var priority: LoadPriority {
            switch self {
            case .settled(let priority), .waiting(let priority), .failed(_, let priority): priority
            }
        }

        @inlinable var isSettled: Bool {
            if case .settled = self { return true }
            return false
        }
    }

    @usableFromInline
    struct Row {
        @usableFromInline var key: Key
        @usableFromInline var ticket: UInt64
        @usableFromInline var phase: RowPhase
        /// The last value the row got, kept while it is visible.
        @usableFromInline var pin: Value?
        @inlinable init(key: Key, ticket: UInt64, phase: RowPhase, pin: Value? = nil) {
            (self.key, self.ticket, self.phase, self.pin) = (key, ticket, phase, pin)
        }
    }

    @usableFromInline
    struct Load {
        @usableFromInline let id: UInt64
        @usableFromInline var claim: Claim?
        /// Rows waiting, with the priority each asked for; usually one or two.
        @usableFromInline var rows: [(index: Index, priority: LoadPriority)]
        /// The priority the claim has in the processor.
        @usableFromInline var claimed: LoadPriority
        /// Started while the avenue is offline because the processor answers this key without the
        /// network: its success says nothing about connectivity.
        @usableFromInline var local: Bool

        @inlinable
        init(id: UInt64, claim: Claim?, rows: [(index: Index, priority: LoadPriority)], claimed: LoadPriority, local: Bool = false) {
            (self.id, self.claim, self.rows, self.claimed, self.local) = (id, claim, rows, claimed, local)
        }

        @inlinable
        var wanted: LoadPriority {
            rows.lazy.map(\.priority).max() ?? .prefetch
        }
    }

    /// What a change of a row means to its observers.
    @usableFromInline
    enum Change: Sendable {
        case loaded
        case failed(any Error)
        /// The load was cancelled by someone else (the shared processor); the row is empty again.
        case cancelled
    }

    /// How a load ended.
    @usableFromInline
    enum Outcome: Sendable {
        /// The value is in storage.
        case loaded
        /// The key was cancelled for everyone by the (shared) processor.
        case cancelled
        case failed(any Error)
    }

    @usableFromInline
    struct Delivery: Sendable {
        @usableFromInline let index: Index
        @usableFromInline let ticket: UInt64
        @usableFromInline let change: Change
        @inlinable init(index: Index, ticket: UInt64, change: Change) { (self.index, self.ticket, self.change) = (index, ticket, change) }
    }

    /// Processor calls to make, all after the lock (the processor has its own lock, and cancelling
    /// work runs its cancellation handlers): a claim for a load just started, to record with
    /// ``attach(_:to:loadID:askedAt:)``; claims whose load's priority changed, to bring up to
    /// ``claimedPriority(of:loadID:)``; claims to release.
    @usableFromInline
    struct Effects {
        @usableFromInline var start: (key: Key, loadID: UInt64, priority: LoadPriority)?
        @usableFromInline var reprioritize: [(key: Key, loadID: UInt64, claim: Claim)] = []
        @usableFromInline var release: [Claim] = []
        /// Pins no row holds any more: released after the lock, so a value's deinit never runs in it.
        @usableFromInline var dropped: [Value] = []
        /// A whole row table let go of (``releaseAll()``), likewise.
        @usableFromInline var droppedRows: RowTable<Index, Row>?
        /// A visible row failed: the avenue must (re)arm its retry timer.
        @usableFromInline var failedVisibly = false
        @inlinable init() {}
    }

    /// What a completion changes.
    @usableFromInline
    struct Completion {
        /// The rows to tell.
        @usableFromInline var deliveries: [Delivery] = []
        /// Pins replaced, to release after the lock.
        @usableFromInline var dropped: [Value] = []
        /// A visible row failed, or connectivity came back: the avenue must look at its retries.
        @usableFromInline var retriesChanged = false
        @inlinable init() {}
    }

    /// A key whose last load failed.
    @usableFromInline
    struct Failure {
        @usableFromInline var error: any Error
        @usableFromInline var attempts: Int
        /// When the key may load again; `nil`: only an explicit retry. Unused for an `offline`
        /// failure, which waits on the avenue's offline state alone.
        @usableFromInline var retryAt: ContinuousClock.Instant?
        @usableFromInline var offline: Bool
        /// When it failed: the avenue's own retries of a visible row wait at least
        /// ``automaticRetryFloor`` from then, whatever the policy says.
        @usableFromInline var failedAt: ContinuousClock.Instant?
        @inlinable init(error: any Error, attempts: Int, retryAt: ContinuousClock.Instant?, offline: Bool = false, failedAt: ContinuousClock.Instant? = nil) {
            (self.error, self.attempts, self.retryAt, self.offline, self.failedAt) = (error, attempts, retryAt, offline, failedAt)
        }
    }

    /// The avenue lost connectivity: nothing loads before `until`, then one probe at a time.
    @usableFromInline
    struct Offline {
        @usableFromInline var error: any Error
        /// Probes that failed, plus the failure that began it; sets the wait.
        @usableFromInline var attempts: Int
        @usableFromInline var until: ContinuousClock.Instant
        /// The key loading as the probe, if one is.
        @usableFromInline var probe: Key?
        @inlinable init(error: any Error, attempts: Int, until: ContinuousClock.Instant) {
            (self.error, self.attempts, self.until) = (error, attempts, until)
        }
    }

    /// The shortest wait before the avenue retries a failed visible row by itself: a policy with no
    /// wait (``RetryPolicy/immediately``) must not turn a row that always fails into a busy loop.
    @usableFromInline static var automaticRetryFloor: Duration { .seconds(1) }

    /// The most failure records kept; beyond it the oldest are forgotten (their keys may retry early).
    @usableFromInline static var failureLimit: Int { 4_096 }

    @usableFromInline
    enum PrepareOutcome {
        /// A storage miss seen before the lock may be stale (a load completed since): read again.
        case retry
        /// The avenue is offline and would hold this key back: ask the processor (outside the lock)
        /// whether it can make the key without the network, and prepare again with the answer.
        case askOffline
        case done(Effects)
    }

    @usableFromInline private(set) var rows = RowTable<Index, Row>()
    @usableFromInline private(set) var loads: [Key: Load] = [:]
    @usableFromInline private(set) var storeEpoch: UInt64 = 0
    @usableFromInline private(set) var statistics = AvenueStatistics()
    @usableFromInline var nextTicket: UInt64 = 0
    @usableFromInline var nextLoadID: UInt64 = 0
    @usableFromInline private(set) var failures: [Key: Failure] = [:]
    @usableFromInline private(set) var offline: Offline?
    /// The rows failed at `.visible`, with their keys.
    @usableFromInline private(set) var failedVisible: [Index: Key] = [:]
    @usableFromInline let retryPolicy: RetryPolicy

    @inlinable init(retryPolicy: RetryPolicy = .default) {
        self.retryPolicy = retryPolicy
    }

    // MARK: Rows

    /// The key row `index` shows, without copying the rest of the row.
    @inlinable
    func key(at index: Index) -> Key? {
        rows[index]?.key
    }

    /// What a prepare of row `index` for `key` at `priority` may skip, from one lookup of the row.
    @usableFromInline
    enum QuickCheck {
        /// Waiting for `key` at `priority`: nothing to do.
        case waiting
        /// Settled on `key` at `priority`: a fresh value in storage means nothing to do.
        case settled
        /// Anything else: the full prepare.
        case other
    }

    /// Whether a prepare can stop early, from one lookup of the row.
    @inlinable
    func quickCheck(at index: Index, for key: Key, priority: LoadPriority) -> QuickCheck {
        guard let row = rows[index], row.key == key else { return .other }
        switch row.phase {
        case .waiting(let current) where current == priority: return .waiting
        case .settled(let current) where current == priority: return .settled
        default: return .other
        }
    }

    /// The value row `index` pinned, if it still shows `key`.
    @inlinable
    func pin(at index: Index, for key: Key) -> Value? {
        guard let row = rows[index], row.key == key else { return nil }
        return row.pin
    }

    /// Row `index` wants `key`. `found` is what storage had when read at `epoch`; `now` decides
    /// whether a failed key may load again, unless `force` (an explicit retry). `availableOffline`
    /// is the processor's answer to whether it makes `key` without the network (`nil`: not asked;
    /// asked only when the avenue's offline wait would hold the key back).
    @inlinable
    mutating func prepare(
        _ key: Key, at index: Index, priority: LoadPriority, found: StoredValue<Value>?, epoch: UInt64,
        now: ContinuousClock.Instant, force: Bool = false, availableOffline: Bool? = nil
    ) -> PrepareOutcome {
        let fresh = found.map { !$0.isStale } ?? false
        // The offline wait holds back keys the network would fail; not those the processor has.
        var holding = force ? nil : blockingFailure(of: key, now: now)
        if let failure = holding, failure.offline, !fresh, loads[key] == nil {
            guard let availableOffline else { return .askOffline }
            if availableOffline { holding = nil }
        }
        if !fresh, loads[key] == nil, epoch != storeEpoch { return .retry }
        var effects = Effects()
        // What the row keeps showing if it stays on this key at `.visible`.
        var pin: Value?
        if let row = rows[index], row.key == key {
            pin = priority == .visible ? (fresh ? found?.value : row.pin) : nil
            switch row.phase {
            case .waiting(let current):
                if current != priority { setRowPriority(priority, at: index, key: key, into: &effects) }
                update(index, phase: .waiting(priority), pin: pin, into: &effects)
                return .done(effects)
            case .settled where fresh:
                update(index, phase: .settled(priority), pin: pin, into: &effects)
                return .done(effects)
            case .failed(let error, _) where !fresh && holding != nil && loads[key] == nil:
                // Still waiting: nothing changes, nobody is told (a visible row is retried by the avenue).
                // A load of the key for another row (a forced retry, the probe after an offline
                // wait) is joined below, as a row that never failed joins it.
                update(index, phase: .failed(error, priority), pin: pin, into: &effects)
                return .done(effects)
            case .settled, .failed:
                break  // evicted or stale since, or a retry after a failure
            }
        } else if rows[index] != nil {
            detach(index, into: &effects)
        }
        if fresh, priority == .visible { pin = found?.value }
        nextTicket &+= 1
        if fresh {
            statistics.cacheHits += 1
            setRow(Row(key: key, ticket: nextTicket, phase: .settled(priority), pin: pin), at: index, into: &effects)
            return .done(effects)
        }
        // A load is needed: nothing is stored, or only a stale value (shown meanwhile).
        if let loadIndex = loads.index(forKey: key) {
            setRow(Row(key: key, ticket: nextTicket, phase: .waiting(priority), pin: pin), at: index, into: &effects)
            loads.values[loadIndex].rows.append((index, priority))
            followPriority(of: loadIndex, into: &effects)
            return .done(effects)
        }
        if let failure = holding {
            setRow(Row(key: key, ticket: nextTicket, phase: .failed(failure.error, priority), pin: pin), at: index, into: &effects)
            return .done(effects)
        }
        if force { failures[key] = nil }
        let local = availableOffline == true && offline.map { now < $0.until } == true
        if !local, let offline, now >= offline.until {
            // The first load after the offline wait is the probe; the others wait for its answer.
            let probeWait = now.advanced(by: retryPolicy.wait(afterFailure: offline.attempts + 1, random: 0.5))
            self.offline?.until = probeWait
            self.offline?.probe = key
        }
        setRow(Row(key: key, ticket: nextTicket, phase: .waiting(priority), pin: pin), at: index, into: &effects)
        nextLoadID &+= 1
        loads[key] = Load(id: nextLoadID, claim: nil, rows: [(index, priority)], claimed: priority, local: local)
        statistics.loadsStarted += 1
        effects.start = (key, nextLoadID, priority)
        return .done(effects)
    }

    /// The failure that keeps `key` from loading now, if any: its own wait, or the avenue's
    /// offline wait (which holds every key that is not already loading).
    @inlinable
    func blockingFailure(of key: Key, now: ContinuousClock.Instant) -> Failure? {
        if let failure = failures[key], !failure.offline {
            guard let retryAt = failure.retryAt else { return failure }
            if now < retryAt { return failure }
        }
        if let offline, now < offline.until {
            return Failure(error: offline.error, attempts: failures[key]?.attempts ?? 0, retryAt: offline.until, offline: true)
        }
        return nil
    }

    /// When the row's failed key may load again (for ``ItemState/failed(_:retryAt:)``).
    @inlinable
    func retryAt(of key: Key, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard let failure = failures[key], !failure.offline else { return offline.map { max($0.until, now) } }
        guard let retryAt = failure.retryAt else { return nil }
        return max(retryAt, offline?.until ?? retryAt)
    }

    /// When the avenue must next look at its failed visible rows: the earliest moment one of them
    /// may load again, or `nil` if none will without ``Avenue/retry(at:)``.
    @inlinable
    func nextRetry(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var next: ContinuousClock.Instant?
        for key in failedVisible.values {
            let floor = failures[key]?.failedAt.map { $0.advanced(by: Self.automaticRetryFloor) } ?? now
            let at: ContinuousClock.Instant
            if let failure = blockingFailure(of: key, now: now) {
                guard let retryAt = failure.retryAt else { continue }
                at = max(retryAt, floor)
            } else {
                at = max(now, floor)
            }
            next = min(next ?? at, at)
        }
        return next
    }

    /// The failed visible rows whose wait is over at `now`, with their keys.
    @inlinable
    func dueRetries(now: ContinuousClock.Instant) -> [(index: Index, key: Key)] {
        failedVisible.compactMap { index, key in
            let floor = failures[key]?.failedAt.map { $0.advanced(by: Self.automaticRetryFloor) } ?? now
            return floor <= now && blockingFailure(of: key, now: now) == nil ? (index, key) : nil
        }
    }

    /// Records the processor claim made, after the lock, for the load `start` asked for at
    /// `priority`. Meanwhile the load may have ended (its rows released, or its value arrived): the
    /// claim is then released; or its priority may have changed: the claim is then reprioritized.
    @inlinable
    mutating func attach(_ claim: Claim, to key: Key, loadID: UInt64, askedAt priority: LoadPriority) -> Effects {
        var effects = Effects()
        guard let index = loads.index(forKey: key), loads.values[index].id == loadID else {
            effects.release.append(claim)
            return effects
        }
        loads.values[index].claim = claim
        if loads.values[index].claimed != priority { effects.reprioritize.append((key, loadID, claim)) }
        return effects
    }

    /// The priority load `loadID` of `key` wants its claim to have now; `nil` once it ended.
    @inlinable
    func claimedPriority(of key: Key, loadID: UInt64) -> LoadPriority? {
        guard let load = loads[key], load.id == loadID else { return nil }
        return load.claimed
    }

    /// Row `index` no longer wants anything: it is forgotten, and its load released if it was the last row.
    @inlinable
    mutating func release(_ index: Index) -> Effects {
        var effects = Effects()
        if rows[index] != nil {
            detach(index, into: &effects)
            setRow(nil, at: index, into: &effects)
        }
        return effects
    }

    /// Every row waiting for `key` is forgotten and the load released.
    @inlinable
    mutating func cancelLoad(of key: Key) -> Effects {
        var effects = Effects()
        failures[key] = nil
        guard let load = loads.removeValue(forKey: key) else { return effects }
        for row in load.rows { setRow(nil, at: row.index, into: &effects) }
        if let claim = load.claim { effects.release.append(claim) }
        statistics.loadsCancelled += 1
        return effects
    }

    /// Every row is forgotten and every load released.
    @inlinable
    mutating func releaseAll() -> Effects {
        var effects = Effects()
        effects.release = loads.values.compactMap(\.claim)
        statistics.loadsCancelled += loads.count
        loads = [:]
        effects.droppedRows = rows
        rows.removeAll()
        failedVisible = [:]
        return effects
    }

    // MARK: Completion

    /// The load `loadID` of `key` finished at `now`. A success must already be in storage; `value`
    /// is the value loaded, pinned by the visible rows. `random` (0...1) picks the retry wait's jitter.
    @inlinable
    mutating func complete(
        _ key: Key, loadID: UInt64, outcome: Outcome, value: Value? = nil, now: ContinuousClock.Instant, random: Double = 0.5
    ) -> Completion {
        var completion = Completion()
        guard let index = loads.index(forKey: key), loads.values[index].id == loadID else { return completion }
        let load = loads.remove(at: index).value
        let change: Change
        switch outcome {
        case .loaded:
            storeEpoch &+= 1
            statistics.loadsCompleted += 1
            failures[key] = nil
            if offline != nil, !load.local {
                offline = nil  // a load went through: connectivity is back
                completion.retriesChanged = !failedVisible.isEmpty
            }
            change = .loaded
        case .cancelled:
            statistics.loadsCancelled += 1
            change = .cancelled
        case .failed(let error):
            statistics.loadsFailed += 1
            noteFailure(of: key, error: error, now: now, random: random)
            change = .failed(error)
        }
        var effects = Effects()
        for waiting in load.rows {
            guard let entry = rows[waiting.index] else { continue }
            let priority = entry.phase.priority
            switch outcome {
            case .loaded:
                update(waiting.index, phase: .settled(priority), pin: priority == .visible ? (value ?? entry.pin) : nil, into: &effects)
            case .cancelled:
                update(waiting.index, phase: .settled(priority), pin: entry.pin, into: &effects)
            case .failed(let error):
                update(waiting.index, phase: .failed(error, priority), pin: entry.pin, into: &effects)
            }
            completion.deliveries.append(Delivery(index: waiting.index, ticket: entry.ticket, change: change))
        }
        completion.dropped = effects.dropped
        completion.retriesChanged = completion.retriesChanged || effects.failedVisibly
        return completion
    }

    /// Records a failure of `key` and when it may load again.
    @inlinable
    mutating func noteFailure(of key: Key, error: any Error, now: ContinuousClock.Instant, random: Double) {
        let attempts = (failures[key]?.attempts ?? 0) + 1
        let retryAt: ContinuousClock.Instant?
        if error.isOffline {
            // Only the first failure and a failed probe lengthen the wait; loads that were already in
            // flight when connectivity went fail too, and change nothing.
            if offline == nil {
                offline = Offline(error: error, attempts: 1, until: now.advanced(by: retryPolicy.wait(afterFailure: 1, random: random)))
            } else if offline?.probe == key, let previous = offline {
                let wait = retryPolicy.wait(afterFailure: previous.attempts + 1, random: random)
                offline = Offline(error: error, attempts: previous.attempts + 1, until: now.advanced(by: wait))
            }
            if failures[key] == nil, failures.count >= Self.failureLimit, let oldest = failures.keys.first {
                failures[oldest] = nil
            }
            failures[key] = Failure(error: error, attempts: attempts, retryAt: nil, offline: true, failedAt: now)
            return
        } else if let delay = error.retryDelay {
            retryAt = now.advanced(by: delay)
        } else if attempts >= retryPolicy.attempts || error.isPermanentFailure {
            retryAt = nil  // given up: only ``Avenue/retry(at:)`` loads it again
        } else {
            retryAt = now.advanced(by: retryPolicy.wait(afterFailure: attempts, random: random))
        }
        if failures[key] == nil, failures.count >= Self.failureLimit, let oldest = failures.keys.first {
            failures[oldest] = nil
        }
        failures[key] = Failure(error: error, attempts: attempts, retryAt: retryAt, failedAt: now)
    }

    /// Forgets `key`'s failure, so the next prepare loads it at once (``Avenue/retry(at:)``).
    @inlinable
    mutating func forgetFailure(of key: Key) {
        failures[key] = nil
    }

    /// `true` while row `index` still has `ticket`, i.e. a notification made for it is current.
    @inlinable
    func isCurrent(_ index: Index, ticket: UInt64) -> Bool {
        rows[index]?.ticket == ticket
    }

    // MARK: Helpers

    /// Puts `row` at `index` (or removes it), keeping ``failedVisible`` exact and handing the pin it
    /// replaces to `effects`.
    @inlinable
    mutating func setRow(_ row: Row?, at index: Index, into effects: inout Effects) {
        if let old = rows[index]?.pin { effects.dropped.append(old) }
        rows[index] = row
        noteFailedVisibility(of: row, at: index, into: &effects)
    }

    /// Changes row `index`'s phase and pin in place (its ticket and key stay).
    @inlinable
    mutating func update(_ index: Index, phase: RowPhase, pin: Value?, into effects: inout Effects) {
        guard var row = rows[index] else { return }
        if let old = row.pin { effects.dropped.append(old) }
        row.phase = phase
        row.pin = pin
        rows[index] = row
        noteFailedVisibility(of: row, at: index, into: &effects)
    }

    @inlinable
    mutating func noteFailedVisibility(of row: Row?, at index: Index, into effects: inout Effects) {
        if let row, case .failed(_, .visible) = row.phase {
            if failedVisible.updateValue(row.key, forKey: index) == nil { effects.failedVisibly = true }
        } else if !failedVisible.isEmpty {
            failedVisible[index] = nil
        }
    }

    /// Takes row `index` out of the load it waits on, if any.
    @inlinable
    mutating func detach(_ index: Index, into effects: inout Effects) {
        guard let row = rows[index], case .waiting = row.phase,
              let loadIndex = loads.index(forKey: row.key)
        else { return }
        loads.values[loadIndex].rows.removeAll { $0.index == index }
        if loads.values[loadIndex].rows.isEmpty {
            let load = loads.remove(at: loadIndex).value
            if let claim = load.claim { effects.release.append(claim) }
            statistics.loadsCancelled += 1
        } else {
            followPriority(of: loadIndex, into: &effects)
        }
    }

    @inlinable
    mutating func setRowPriority(_ priority: LoadPriority, at index: Index, key: Key, into effects: inout Effects) {
        guard rows[index] != nil, let loadIndex = loads.index(forKey: key),
              let slot = loads.values[loadIndex].rows.firstIndex(where: { $0.index == index })
        else { preconditionFailure("Invalid state: a waiting row is missing from its load") }
        loads.values[loadIndex].rows[slot].priority = priority
        followPriority(of: loadIndex, into: &effects)
    }

    @inlinable
    mutating func followPriority(of loadIndex: Dictionary<Key, Load>.Index, into effects: inout Effects) {
        let wanted = loads.values[loadIndex].wanted
        guard wanted != loads.values[loadIndex].claimed else { return }
        loads.values[loadIndex].claimed = wanted
        // A load whose claim is not attached yet is reprioritized when it is.
        if let claim = loads.values[loadIndex].claim {
            effects.reprioritize.append((loads.keys[loadIndex], loads.values[loadIndex].id, claim))
        }
    }
}
