import Foundation

// Inlinable: the memory layer's read and the freshness test are a multiplexer's hit path (see
// `MuxCache.freshValue(for:)`); the disk layer is not.
/// A value a multiplexer fetched, as its storages keep it.
@usableFromInline
struct MuxCopy<Value: Sendable>: Sendable {
    @usableFromInline var value: Value
    /// When it was fetched, on the multiplexer's monotonic clock: it is fresh for the time-to-live.
    @usableFromInline var fetchedAt: ContinuousClock.Instant
    /// The epoch it was fetched in (``MuxEpochs``): stale once its key's epoch is a later one.
    @usableFromInline var epoch: UInt64

    @inlinable
    init(value: Value, fetchedAt: ContinuousClock.Instant, epoch: UInt64) {
        (self.value, self.fetchedAt, self.epoch) = (value, fetchedAt, epoch)
    }

    /// Whether `other` is this copy (a value need not be equatable: the fetch's instant and epoch say).
    @inlinable
    func isSameCopy(as other: MuxCopy) -> Bool {
        fetchedAt == other.fetchedAt && epoch == other.epoch
    }
}

/// What makes a copy fresh: fetched in its key's current epoch, and younger than the time-to-live.
@usableFromInline
struct MuxFreshness<Key: Hashable & Sendable>: Sendable {
    @usableFromInline let timeToLive: Duration
    @usableFromInline let clock: MuxClock
    @usableFromInline let epochs: MuxEpochs<Key>

    @inlinable
    func isFresh<Value>(_ copy: MuxCopy<Value>, for key: Key, now: ContinuousClock.Instant) -> Bool {
        copy.epoch >= epochs.number(for: key) && now - copy.fetchedAt < timeToLive
    }
}

/// A multiplexer's memory layer: a bounded ``MemoryStorage`` of copies whose ``lookup(_:)`` tells the
/// stale ones.
@usableFromInline
struct MuxMemoryCopies<Key: Hashable & Sendable, Value: Sendable>: Storage {
    @usableFromInline let table: MemoryStorage<Key, MuxCopy<Value>>
    @usableFromInline let freshness: MuxFreshness<Key>

    init(countLimit: Int, freshness: MuxFreshness<Key>) {
        table = MemoryStorage(countLimit: countLimit)
        self.freshness = freshness
    }

    /// The copy of any age.
    @inlinable
    func value(for key: Key) -> MuxCopy<Value>? {
        table.value(for: key)
    }

    /// The copy, stale when its epoch or its age says so.
    @inlinable
    func lookup(_ key: Key) -> StoredValue<MuxCopy<Value>>? {
        guard let copy = table.value(for: key) else { return nil }
        return StoredValue(copy, isStale: !freshness.isFresh(copy, for: key, now: freshness.clock.monotonic()))
    }

    /// Keeps `copy` — unless its key moved to a later epoch meanwhile (a hard clear racing a fetch's
    /// store, or a disk copy brought forward): then it is taken back, so nothing cleared comes back.
    @inlinable
    func set(_ copy: MuxCopy<Value>, for key: Key) {
        table.set(copy, for: key)
        if copy.epoch < freshness.epochs.number(for: key) {
            table.removeValue(for: key) { $0.isSameCopy(as: copy) }
        }
    }

    @usableFromInline func removeValue(for key: Key) { table.removeValue(for: key) }

    @usableFromInline func removeAll() { table.removeAll() }
}

/// A multiplexer's disk layer: its values as JSON in a ``DiskStorage``, each dated by when it was
/// fetched, so a copy read back keeps the time-to-live it had left. Without a `cacheKey` there is no
/// disk layer: every read misses and writes are dropped.
@usableFromInline
struct MuxDiskCopies<Key: Hashable & Sendable, Value: Codable & Sendable>: Storage {
    let disk: DiskStorage<Key>?
    @usableFromInline let freshness: MuxFreshness<Key>

    /// The copy of any age.
    @usableFromInline
    func value(for key: Key) -> MuxCopy<Value>? {
        lookup(key)?.value
    }

    /// The copy, fresh when it is younger than the time-to-live and was fetched after its key's epoch
    /// began (disk dates have millisecond resolution: a copy must be later by more than that).
    @usableFromInline
    func lookup(_ key: Key) -> StoredValue<MuxCopy<Value>>? {
        guard let disk, let entry = try? disk.entry(for: key, includingExpired: true),
              let value = try? JSONDecoder().decode(Value.self, from: entry.data)
        else { return nil }
        let clock = freshness.clock
        // The date is read from a file: any value, so the age is clamped (a huge double traps `.seconds`).
        let age = Saturating.duration(seconds: max(0, clock.wall().timeIntervalSince(entry.storedAt)))
        let fetchedAt = clock.monotonic() - age
        let epoch = freshness.epochs.epoch(for: key)
        let afterEpoch = epoch.began.map { fetchedAt - $0 > .milliseconds(1) } ?? true
        let fresh = afterEpoch && age < freshness.timeToLive
        return StoredValue(MuxCopy(value: value, fetchedAt: fetchedAt, epoch: fresh ? epoch.number : 0), isStale: !fresh)
    }

    /// Writes `copy`; a failure leaves the disk copy as it was.
    @usableFromInline
    func set(_ copy: MuxCopy<Value>, for key: Key) {
        try? write(copy, for: key)
    }

    /// Writes `copy` dated by when it was fetched.
    ///
    /// - Throws: ``DiskStorageError``: `.notEncodable` for a value JSON cannot encode, or why the write
    ///   failed.
    func write(_ copy: MuxCopy<Value>, for key: Key) throws(DiskStorageError) {
        guard let disk else { return }
        let data: Data
        do {
            data = try JSONEncoder().encode(copy.value)
        } catch {
            throw DiskStorageError(.notEncodable, path: "\(key)", call: "JSONEncoder", detail: "\(error)")
        }
        let age = freshness.clock.monotonic() - copy.fetchedAt
        try disk.write(data, for: key, storedAt: freshness.clock.wall().addingTimeInterval(-max(0, age.seconds)))
    }

    @usableFromInline func removeValue(for key: Key) { disk?.removeValue(for: key) }

    @usableFromInline func removeAll() { disk?.removeAll() }
}
