import Foundation

// Inlinable: the fresh-copy read, a run's start, the store and the epoch (see `MuxCore`; Benchmarks/README.md,
// "Instruction counts", says what each pays); the disk and save paths are not.
/// The caching policy shared by ``Multiplexer`` and ``MultiplexerMap``:
///
/// - a **memory copy** is fresh for the time-to-live after it was fetched (monotonic clock), unless a
///   soft refresh marked it stale; memory copies are bounded, evicted as ``MemoryStorage`` evicts
///   (the same CLOCK table: entries not used recently go first);
/// - a **disk copy** (written by `save()`, with the time its value was fetched) serves a cold start
///   while it is within the time-to-live (wall clock) and no refresh happened since it was written;
/// - after a **silenceable failure** the memory copy, else the disk copy, of any age, is served;
/// - other failures are thrown and leave every copy as it was;
/// - every refresh and clear moves the affected keys to a new **epoch**; a value fetched in an older
///   epoch is never stored (a fetch that began before a refresh or clear cannot overwrite it).
@usableFromInline
final class MuxCache<Key: Hashable & Sendable, Value: Codable & Sendable>: Sendable {
    @usableFromInline
    struct Entry {
        @usableFromInline var value: Value
        @usableFromInline var fetchedAt: ContinuousClock.Instant
        /// The refresh generation the value was fetched in; an older one is stale.
        @usableFromInline var generation: UInt64
        /// Set by a soft refresh of this key alone.
        @usableFromInline var stale: Bool
        @inlinable init(value: Value, fetchedAt: ContinuousClock.Instant, generation: UInt64, stale: Bool) {
            (self.value, self.fetchedAt, self.generation, self.stale) = (value, fetchedAt, generation, stale)
        }
    }

    @usableFromInline
    struct State {
        @usableFromInline var memory = ClockTable<Key, Entry>()
        @usableFromInline var generation: UInt64 = 0
        /// Disk copies written before this are not fresh: a refresh of every key happened then.
        var refreshedAt: Date?
        /// Keys refreshed one by one: their next run fetches even if a fresh disk copy exists.
        @usableFromInline var forced: Set<Key> = []
        /// Keys a multi-key request is fetching; their runs wait for it instead of fetching alone.
        @usableFromInline var batches: [Key: MuxBatch<Key, Value>] = [:]
        /// Counts refreshes and clears; the epoch of a key is the count at its latest one.
        @usableFromInline var epochs: UInt64 = 0
        /// The epoch of the latest refresh or clear of every key.
        @usableFromInline var everyKeyEpoch: UInt64 = 0
        /// Epochs of keys refreshed or cleared one by one since then.
        @usableFromInline var keyEpochs: [Key: UInt64] = [:]
    }

    @usableFromInline let timeToLive: Duration
    @usableFromInline let clock: MuxClock
    @usableFromInline let countLimit: Int
    @usableFromInline let disk: DiskStorage<Key>?
    @usableFromInline let state = Locked(State())
    /// Held while copies are saved to disk or cleared, so a save racing a clear cannot leave files.
    private let persistence = Locked(())

    @usableFromInline
    init(timeToLive: Duration, clock: MuxClock, countLimit: Int, disk: DiskStorage<Key>?) {
        precondition(timeToLive >= .zero, "A multiplexer's timeToLive must not be negative")
        precondition(countLimit >= 1, "A multiplexer map's countLimit must be at least 1")
        self.timeToLive = timeToLive
        self.clock = clock
        self.countLimit = countLimit
        self.disk = disk
    }

    // MARK: Reading

    /// The memory copy if it is fresh. The hot path of every request: one lock, no disk; inlinable
    /// so it runs specialized in the caller.
    @inlinable
    func freshValue(for key: Key) -> Value? {
        let now = clock.monotonic()
        return state.withLock { state in
            guard let entry = state.memory.value(for: key), isFresh(entry, generation: state.generation, now: now) else { return nil }
            return entry.value
        }
    }

    /// The epoch a request for `key` belongs to now.
    @inlinable
    func epoch(for key: Key) -> UInt64 {
        state.withLock { Self.epoch(of: key, in: $0) }
    }

    @inlinable
    static func epoch(of key: Key, in state: State) -> UInt64 {
        max(state.everyKeyEpoch, state.keyEpochs[key] ?? 0)
    }

    /// What a fetch run finds before fetching.
    @usableFromInline
    enum RunStart {
        /// A fresh copy: stored by another run while this one was queued, or on disk.
        case fresh(Value)
        /// A multi-key request is fetching the key: the run waits for it.
        case batch(MuxBatch<Key, Value>)
        /// Neither: the run fetches.
        case fetch
    }

    /// The fresh memory copy, else a fresh disk copy (which becomes the memory copy, if `epoch` is
    /// still the key's), else the batch fetching the key, if one is. Runs inside a fetch run, so the
    /// disk is read off the caller's thread, once for all callers of the key.
    @inlinable
    func runStart(for key: Key, epoch: UInt64) -> RunStart {
        let now = clock.monotonic()
        let start = state.withLock { state -> RunStart in
            if let entry = state.memory.value(for: key), isFresh(entry, generation: state.generation, now: now) {
                return .fresh(entry.value)
            }
            return state.batches[key].map { .batch($0) } ?? .fetch
        }
        if case .fresh = start { return start }
        if disk != nil, let value = freshDiskCopy(for: key, epoch: epoch) { return .fresh(value) }
        return start
    }

    /// A fresh disk copy, unless memory has an older copy or the key was refreshed.
    @usableFromInline
    func freshDiskCopy(for key: Key, epoch: UInt64) -> Value? {
        let mayUseDisk = state.withLock { state in state.memory.peek(key) == nil && !state.forced.contains(key) }
        guard mayUseDisk, let (value, storedAt) = diskCopy(for: key) else { return nil }
        let wallNow = clock.wall()
        let age = max(0, wallNow.timeIntervalSince(storedAt))
        return state.withLock { state -> Value? in
            // Disk times have millisecond resolution: a copy must be later than a refresh by more
            // than that, or one saved in the refresh's millisecond could pass as newer.
            let afterRefresh = state.refreshedAt.map { storedAt.timeIntervalSince($0) > 0.001 } ?? true
            guard age < timeToLive.seconds, afterRefresh, epoch == Self.epoch(of: key, in: state) else { return nil }
            // Keep the remaining time-to-live: the copy is as old as it was when it was fetched.
            let fetchedAt = clock.monotonic() - .seconds(age)
            insert(Entry(value: value, fetchedAt: fetchedAt, generation: state.generation, stale: false), for: key, in: &state)
            return value
        }
    }

    /// The copy served after a silenceable failure: memory, else disk, of any age.
    @usableFromInline
    func fallbackValue(for key: Key) -> Value? {
        if let value = state.withLock({ $0.memory.peek(key)?.value }) { return value }
        return diskCopy(for: key)?.value
    }

    /// The copy a list can show now, and whether it is stale (past its time-to-live, or refreshed):
    /// memory, else disk, without fetching.
    func lookup(_ key: Key) -> (value: Value, isStale: Bool)? {
        let now = clock.monotonic()
        if let found = state.withLock({ state -> (Value, Bool)? in
            state.memory.peek(key).map { ($0.value, !isFresh($0, generation: state.generation, now: now)) }
        }) {
            return found
        }
        guard let (value, storedAt) = diskCopy(for: key) else { return nil }
        let age = max(0, clock.wall().timeIntervalSince(storedAt))
        let refreshedSince = state.withLock { state in
            state.forced.contains(key) || (state.refreshedAt.map { storedAt.timeIntervalSince($0) <= 0.001 } ?? false)
        }
        return (value, age >= timeToLive.seconds || refreshedSince)
    }

    /// `cachedValue`: memory, else disk, of any age, without fetching.
    func cachedValue(for key: Key) -> Value? {
        fallbackValue(for: key)
    }

    // MARK: Changing

    /// A value stored by hand (or pushed by a server): the fresh memory copy.
    func store(_ value: Value, for key: Key) {
        store(value, for: key, epoch: nil)
    }

    /// A value fetched in `epoch`: the fresh memory copy, unless the key was refreshed or cleared
    /// since that fetch began (then the value goes only to that fetch's callers).
    @inlinable
    func store(_ value: Value, for key: Key, epoch: UInt64?) {
        let now = clock.monotonic()
        state.withLock { state in
            if let epoch, epoch < Self.epoch(of: key, in: state) { return }
            insert(Entry(value: value, fetchedAt: now, generation: state.generation, stale: false), for: key, in: &state)
            if !state.forced.isEmpty { state.forced.remove(key) }  // removing hashes even from an empty set
        }
    }

    /// Moves `key` (or every key) to a new epoch. Per-key epochs are folded into one for every key
    /// when they pile up, which costs at most a few extra fetches of keys in flight.
    private func advanceEpoch(of key: Key?, in state: inout State) {
        state.epochs &+= 1
        if let key, state.keyEpochs.count < 4 * countLimit + 64 {
            state.keyEpochs[key] = state.epochs
        } else {
            state.everyKeyEpoch = state.epochs
            state.keyEpochs = [:]
        }
    }

    /// Soft refresh: the next request of `key` (or of every key) fetches; copies stay as fallbacks.
    func refresh(_ key: Key?) {
        let wallNow = clock.wall()
        state.withLock { state in
            advanceEpoch(of: key, in: &state)
            if let key {
                if var entry = state.memory.peek(key) {
                    entry.stale = true
                    state.memory.set(entry, for: key, cost: 1)
                }
                state.forced.insert(key)
            } else {
                state.generation &+= 1
                state.refreshedAt = wallNow
                state.forced.removeAll()
            }
        }
    }

    /// Drops memory copies; disk copies stay.
    func clearMemory() {
        state.withLock { $0.memory.removeAll() }
    }

    /// Hard clear: memory and disk copies of `key` (or of every key) are gone, and values of fetches
    /// already in flight will not be stored.
    func clear(_ key: Key?) {
        persistence.withLock { _ in clearCopies(key) }
    }

    private func clearCopies(_ key: Key?) {
        state.withLock { state in
            advanceEpoch(of: key, in: &state)
            if let key {
                state.memory.removeValue(for: key)
                state.forced.remove(key)
            } else {
                state.memory.removeAll()
                state.forced.removeAll()
            }
        }
        guard let disk else { return }
        if let key {
            disk.removeValue(for: key)
        } else {
            disk.removeAll()
            // Leave no trace: the folder goes too once it is empty.
            try? FileManager.default.removeItem(atPath: disk.directory.path)
        }
    }

    /// Writes every memory copy to disk with the time it was fetched. Returns the failures.
    func save() -> [DiskStorageError] {
        guard disk != nil else { return [] }
        return persistence.withLock { _ in saveCopies() }
    }

    private func saveCopies() -> [DiskStorageError] {
        guard let disk else { return [] }
        let monotonicNow = clock.monotonic()
        let wallNow = clock.wall()
        let entries = state.withLock { $0.memory.entries.map { ($0.key, $0.value) } }
        var failures: [DiskStorageError] = []
        let encoder = JSONEncoder()
        for (key, entry) in entries {
            let age = (monotonicNow - entry.fetchedAt).seconds
            do {
                let data = try encoder.encode(entry.value)
                try disk.write(data, for: key, storedAt: wallNow.addingTimeInterval(-max(0, age)))
            } catch let error as DiskStorageError {
                failures.append(error)
            } catch {
                failures.append(DiskStorageError(.notEncodable, path: "\(key)", call: "JSONEncoder", detail: "\(error)"))
            }
        }
        return failures
    }

    func register(_ batch: MuxBatch<Key, Value>, for keys: [Key]) {
        state.withLock { state in
            for key in keys { state.batches[key] = batch }
        }
    }

    func unregister(_ batch: MuxBatch<Key, Value>, for keys: [Key]) {
        state.withLock { state in
            for key in keys where state.batches[key] === batch { state.batches[key] = nil }
        }
    }

    // MARK: Helpers

    /// Whether `entry` is fresh at `now` in refresh generation `generation`. Given the generation,
    /// not the whole state: passed the state, a call from another module copied it (retaining its
    /// tables), and the hit's mark on the entry then copied the table (a `malloc` per hit that
    /// `gate-multiplexer-hit` caught).
    @inlinable
    func isFresh(_ entry: Entry, generation: UInt64, now: ContinuousClock.Instant) -> Bool {
        !entry.stale && entry.generation == generation && now - entry.fetchedAt < timeToLive
    }

    @usableFromInline
    func insert(_ entry: Entry, for key: Key, in state: inout State) {
        state.memory.set(entry, for: key, cost: 1)
        while state.memory.count > countLimit { _ = state.memory.evict() }
    }

    private func diskCopy(for key: Key) -> (value: Value, storedAt: Date)? {
        guard let disk, let entry = try? disk.entry(for: key),
              let value = try? JSONDecoder().decode(Value.self, from: entry.data)
        else { return nil }
        return (value, entry.storedAt)
    }
}
