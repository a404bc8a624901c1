import Foundation

// Inlinable: the fresh-copy read, the epoch and the store (see `MuxCore`; Benchmarks/README.md,
// "Instruction counts", says what each pays); the disk and save paths are not.
/// The copies a ``Multiplexer`` or ``MultiplexerMap`` keeps: the library's storages, layered — memory
/// (a bounded ``MemoryStorage``) over disk (a ``DiskStorage`` of JSON, with a `cacheKey`) — with the
/// multiplexer's policy as their staleness (``Storage/lookup(_:)``'s ``StoredValue``):
///
/// - a copy is **fresh** for the time-to-live after it was fetched (monotonic clock; disk copies are
///   dated by the wall clock and keep the time they had left; one dated more than a second ahead
///   is stale), and only in its key's current epoch
///   (``MuxEpochs``): every refresh and clear begins a new one;
/// - reads take memory's fresh copy, else disk's (brought forward into memory), else a stale copy of
///   either — the fallback after a silenceable failure, and what a list shows while it revalidates;
/// - writes **stay in memory** until `save()` writes every memory copy to disk (AsyncMux's
///   write-back: a program saves when it goes to the background or exits);
/// - a hard **clear** removes both layers' copies, and a fetch that began before it stores nothing.
@usableFromInline
final class MuxCache<Key: Hashable & Sendable, Value: Codable & Sendable>: Sendable {
    @usableFromInline let freshness: MuxFreshness<Key>
    /// Memory over disk, writing back.
    @usableFromInline let copies: LayeredStorage<MuxMemoryCopies<Key, Value>, MuxDiskCopies<Key, Value>>
    /// Held while copies are saved to disk or cleared, so a save racing a clear cannot leave files.
    private let persistence = Locked(())

    @usableFromInline
    init(timeToLive: Duration, clock: MuxClock, countLimit: Int, disk: DiskStorage<Key>?) {
        precondition(timeToLive >= .zero, "A multiplexer's timeToLive must not be negative")
        precondition(countLimit >= 1, "A multiplexer map's countLimit must be at least 1")
        // Keys refreshed or cleared one by one keep an epoch of their own while they are in memory
        // or fetched, and then some; beyond that many, see `MuxEpochs`.
        let freshness = MuxFreshness(timeToLive: timeToLive, clock: clock, epochs: MuxEpochs<Key>(limit: 4 * countLimit + 64))
        self.freshness = freshness
        copies = LayeredStorage(
            front: MuxMemoryCopies(countLimit: countLimit, freshness: freshness),
            back: MuxDiskCopies(disk: disk, freshness: freshness),
            writesBack: true
        )
    }

    @usableFromInline var timeToLive: Duration { freshness.timeToLive }
    @usableFromInline var disk: DiskStorage<Key>? { copies.back.disk }

    // MARK: Reading

    /// The memory copy if it is fresh. The hot path of every request: one lock, no disk; inlinable
    /// so it runs specialized in the caller.
    @inlinable
    func freshValue(for key: Key) -> Value? {
        copies.front.freshValue(for: key)
    }

    /// The epoch a request for `key` belongs to now.
    @inlinable
    func epoch(for key: Key) -> UInt64 {
        freshness.epochs.number(for: key)
    }

    /// The freshest copy — memory, else disk — and whether it is stale, without fetching. A fresh
    /// disk copy becomes the memory copy.
    @inlinable
    func lookup(_ key: Key) -> (value: Value, isStale: Bool)? {
        copies.lookup(key).map { ($0.value.value, $0.isStale) }
    }

    /// A fresh copy, memory's or disk's.
    @inlinable
    func freshCopy(for key: Key) -> Value? {
        lookup(key).flatMap { $0.isStale ? nil : $0.value }
    }

    /// A copy of any age: served after a silenceable failure, and as `cachedValue`.
    @inlinable
    func anyCopy(for key: Key) -> Value? {
        lookup(key)?.value
    }

    // MARK: Changing

    /// A value stored by hand (or pushed by a server): the fresh memory copy.
    func store(_ value: Value, for key: Key) {
        store(value, for: key, epoch: nil)
    }

    /// A value fetched in `epoch` by a fetch that began at `began`: the fresh memory copy, unless
    /// the key was refreshed or cleared since that fetch began, or a value was set by hand since
    /// (then the value goes only to that fetch's callers: it is the older).
    @inlinable
    func store(_ value: Value, for key: Key, epoch: UInt64?, began: Duration? = nil) {
        let current = freshness.epochs.number(for: key)
        if let epoch, epoch < current { return }
        let copy = MuxCopy(value: value, fetchedAt: freshness.now(), epoch: current)
        // Memory only: the copies write back (to disk when saved).
        copies.front.set(copy, for: key, unlessNewerThan: began)
    }

    /// Whether `key` was cleared or refreshed (alone or with every key) after `instant`.
    @usableFromInline
    func wasRefreshed(_ key: Key, since instant: Duration) -> Bool {
        guard let refreshed = freshness.epochs.epoch(for: key).began else { return false }
        return refreshed > instant
    }

    /// A value a fetch that began at `began` brought back for `key` — one that may not know its
    /// key's epoch (a back end's answer for several keys, keys it added unasked among them): kept
    /// unless the key was refreshed or cleared since `began`, or a value was set by hand since.
    func store(_ value: Value, for key: Key, fetchedSince began: Duration) {
        let epoch = freshness.epochs.epoch(for: key)
        if let refreshed = epoch.began, refreshed > began { return }  // not `wasRefreshed`: one look at the epoch
        copies.front.set(MuxCopy(value: value, fetchedAt: freshness.now(), epoch: epoch.number), for: key, unlessNewerThan: began)
    }

    /// Soft refresh: the next request of `key` (or of every key) fetches; copies stay as fallbacks.
    @discardableResult
    func refresh(_ key: Key?) -> UInt64 {
        freshness.epochs.advance(key, now: freshness.now(), timeToLive: timeToLive)
    }

    /// Drops memory copies; disk copies stay.
    func clearMemory() {
        copies.front.removeAll()
    }

    /// Hard clear: memory and disk copies of `key` (or of every key) are gone, and values of fetches
    /// already in flight will not be stored. Returns the number of the epoch it began.
    @discardableResult
    func clear(_ key: Key?) -> UInt64 {
        persistence.withLock { _ in
            // The epoch first: a store or a copy brought forward that races the removal below finds
            // its epoch outdated and takes itself back (`MuxMemoryCopies.set`).
            let epoch = refresh(key)
            if let key {
                copies.removeValue(for: key)
            } else {
                copies.removeAll()
                // Leave no trace: the folder goes too once it is empty.
                if let disk { try? FileManager.default.removeItem(atPath: disk.directory.path) }
            }
            return epoch
        }
    }

    /// Writes every memory copy to disk with the time it was fetched. Returns the failures.
    func save() -> [DiskStorageError] {
        guard disk != nil else { return [] }
        return persistence.withLock { _ in
            var failures: [DiskStorageError] = []
            for (key, copy) in copies.front.table.snapshot() {
                do throws(DiskStorageError) {
                    try copies.back.write(copy, for: key)
                } catch {
                    failures.append(error)
                }
            }
            return failures
        }
    }
}
