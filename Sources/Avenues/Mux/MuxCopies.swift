import Foundation

// Inlinable: the memory layer's read and the freshness test are a multiplexer's hit path (see
// `MuxCache.freshValue(for:)`); the disk layer is not.
/// A value a multiplexer fetched, as its storages keep it.
@usableFromInline
struct MuxCopy<Value: Sendable>: Sendable {
    @usableFromInline var value: Value
    /// When it was fetched (``MuxFreshness/now()``): it is fresh for the time-to-live. A `Duration`,
    /// not a `ContinuousClock.Instant`, whose layout is not known outside the standard library: a
    /// copy holding one is handled through value witnesses and boxed in async frames (a miss took a
    /// quarter more instructions).
    @usableFromInline var fetchedAt: Duration
    /// The epoch it was fetched in (``MuxEpochs``): stale once its key's epoch is a later one.
    @usableFromInline var epoch: UInt64

    @inlinable
    init(value: Value, fetchedAt: Duration, epoch: UInt64) {
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
    /// The instant times are counted from.
    @usableFromInline let origin: ContinuousClock.Instant
    /// The wall clock at `origin`.
    let wallAtOrigin: Date

    init(timeToLive: Duration, clock: MuxClock, epochs: MuxEpochs<Key>) {
        (self.timeToLive, self.clock, self.epochs) = (timeToLive, clock, epochs)
        origin = clock.monotonic()
        wallAtOrigin = clock.wall()
    }

    /// How far the wall clock moved against the monotonic one since `origin` (it was set, or it
    /// drifted). A disk copy's age is a wall-clock age, so an instant made from it is off by up to
    /// this much against the monotonic instants epochs begin at.
    func wallClockSkew() -> Duration {
        let skew = abs(clock.wall().timeIntervalSince(wallAtOrigin) - now().seconds)
        return Saturating.duration(seconds: skew.isFinite ? skew : .infinity)
    }

    /// Now, on the multiplexer's monotonic clock, as the time since `origin`.
    @inlinable
    func now() -> Duration {
        clock.monotonic() - origin
    }

    /// Whether `copy` is fresh `now` while its key's epoch is `epoch` (read before the table's lock,
    /// so the epochs' lock is never taken inside it). Static, on plain values: a closure capturing
    /// this struct (its clock's closures, the epochs) retained them on every hit, 540 → 802
    /// instructions.
    @inlinable
    static func isFresh<Value>(_ copy: MuxCopy<Value>, epoch: UInt64, now: Duration, timeToLive: Duration) -> Bool {
        copy.epoch >= epoch && now - copy.fetchedAt < timeToLive
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

    /// The value of the copy of `key` if it is fresh, judged inside the table's lock: a copy never
    /// leaves it (a copy returned as an optional cost a hit a third more: see
    /// "Instruction counts" in Benchmarks/README.md).
    @inlinable
    func freshValue(for key: Key) -> Value? {
        let epoch = freshness.epochs.number(for: key)
        let now = freshness.now()
        let timeToLive = freshness.timeToLive
        return table.read(key) { copy in
            MuxFreshness<Key>.isFresh(copy, epoch: epoch, now: now, timeToLive: timeToLive) ? copy.value : nil
        }
    }

    /// The copy, stale when its epoch or its age says so.
    @inlinable
    func lookup(_ key: Key) -> StoredValue<MuxCopy<Value>>? {
        let epoch = freshness.epochs.number(for: key)
        guard let copy = table.value(for: key) else { return nil }
        return StoredValue(copy, isStale: !MuxFreshness<Key>.isFresh(copy, epoch: epoch, now: freshness.now(), timeToLive: freshness.timeToLive))
    }

    /// Keeps `copy` — unless its key moved to a later epoch meanwhile (a hard clear racing a fetch's
    /// store, or a disk copy brought forward): then it is taken back, so nothing cleared comes back.
    @inlinable
    func set(_ copy: MuxCopy<Value>, for key: Key) {
        set(copy, for: key, unlessNewerThan: nil)
    }

    /// ``set(_:for:)``, unless the copy held was made after `began` (a value set by hand while the
    /// fetch that made `copy` was in flight: what that fetch brings back is older). Returns whether
    /// `copy` was kept.
    @inlinable @discardableResult
    func set(_ copy: MuxCopy<Value>, for key: Key, unlessNewerThan began: Duration?) -> Bool {
        let stored = table.set(copy, for: key, unless: began.map { began in { held in held.fetchedAt > began } })
        if stored, copy.epoch < freshness.epochs.number(for: key) {
            table.removeValue(for: key) { $0.isSameCopy(as: copy) }
            return false
        }
        return stored
    }

    @inlinable func removeValue(for key: Key) { table.removeValue(for: key) }

    @inlinable func removeAll() { table.removeAll() }
}

/// A multiplexer's disk layer: its values as JSON in a ``DiskStorage``, each dated by when it was
/// fetched, so a copy read back keeps the time-to-live it had left. Without a `cacheKey` there is no
/// disk layer: every read misses and writes are dropped.
@usableFromInline
struct MuxDiskCopies<Key: Hashable & Sendable, Value: Codable & Sendable>: Storage {
    @usableFromInline let disk: DiskStorage<Key>?
    @usableFromInline let freshness: MuxFreshness<Key>

    init(disk: DiskStorage<Key>?, freshness: MuxFreshness<Key>) {
        (self.disk, self.freshness) = (disk, freshness)
    }

    /// The copy of any age.
    @inlinable
    func value(for key: Key) -> MuxCopy<Value>? {
        lookup(key)?.value
    }

    /// The copy, fresh when it is younger than the time-to-live and was fetched after its key's epoch
    /// began (disk dates have millisecond resolution, and the wall clock may have been set since
    /// this process began: a copy must be later by more than both).
    /// Inlinable only to miss at once, specialized, without a disk (a map without a `cacheKey`).
    @inlinable
    func lookup(_ key: Key) -> StoredValue<MuxCopy<Value>>? {
        guard let disk else { return nil }
        return read(key, from: disk)
    }

    @usableFromInline
    func read(_ key: Key, from disk: DiskStorage<Key>) -> StoredValue<MuxCopy<Value>>? {
        guard let entry = try? disk.entry(for: key, includingExpired: true),
              let value = try? JSONDecoder().decode(Value.self, from: entry.data)
        else { return nil }
        let clock = freshness.clock
        // The date is read from a file: any value, so the age is clamped (a huge double traps `.seconds`).
        let wallAge = clock.wall().timeIntervalSince(entry.storedAt)
        let age = Saturating.duration(seconds: max(0, wallAge))
        let fetchedAt = freshness.now() - age
        let epoch = freshness.epochs.epoch(for: key)
        // A wall clock set back 10 ms between a fetch and a refresh made the copy from before the
        // refresh look 8 ms younger than it: served as fresh after the refresh.
        let afterEpoch = epoch.began.map { fetchedAt - $0 > .milliseconds(1) + freshness.wallClockSkew() } ?? true
        // Dated more than a second ahead (written while the wall clock was ahead, since set right):
        // its age is unknown, so it is stale, as DiskStorage takes such an entry; counted as age 0,
        // a copy a day ahead was fresh for a day. The second allows for dates kept in milliseconds.
        let fromTheFuture = !(wallAge >= -1)  // NaN too
        let fresh = afterEpoch && !fromTheFuture && age < freshness.timeToLive
        return StoredValue(MuxCopy(value: value, fetchedAt: fetchedAt, epoch: fresh ? epoch.number : 0), isStale: !fresh)
    }

    /// Writes `copy`; a failure leaves the disk copy as it was.
    @inlinable
    func set(_ copy: MuxCopy<Value>, for key: Key) {
        if disk != nil { try? write(copy, for: key) }
    }

    /// Writes `copy` dated by when it was fetched.
    ///
    /// - Throws: ``DiskStorageError``: `.notEncodable` for a value JSON cannot encode, or why the write
    ///   failed.
    @usableFromInline
    func write(_ copy: MuxCopy<Value>, for key: Key) throws(DiskStorageError) {
        guard let disk else { return }
        let data: Data
        do {
            data = try JSONEncoder().encode(copy.value)
        } catch {
            throw DiskStorageError(.notEncodable, path: "\(key)", call: "JSONEncoder", detail: "\(error)")
        }
        let age = freshness.now() - copy.fetchedAt
        try disk.write(data, for: key, storedAt: freshness.clock.wall().addingTimeInterval(-max(0, age.seconds)))
    }

    @inlinable func removeValue(for key: Key) { disk?.removeValue(for: key) }

    @inlinable func removeAll() { disk?.removeAll() }
}
