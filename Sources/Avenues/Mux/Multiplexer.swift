import Foundation

/// Fetches one value — say, the user's profile — once for every caller, and keeps it in memory for
/// a time-to-live and, with a `cacheKey`, on disk for restarts and offline use.
///
/// ```swift
/// let myProfile = Multiplexer(onFetch: Backend.fetchMyProfile)
/// let profile = try await myProfile.value()
/// let fresh = try await myProfile.refresh().value()
/// ```
///
/// **Policy.** ``value()`` returns the memory copy while it is fresh (30 minutes by default, on a
/// monotonic clock). Otherwise one fetch runs, whatever the number of callers; callers that arrive
/// meanwhile join it. With a `cacheKey`, a disk copy written by ``save()`` (or
/// ``MuxRepository/saveAll()``) answers a cold start while it is within the time-to-live, and
/// answers at any age when the fetch fails with a silenceable error (``SilenceableError``, or the
/// network being unreachable). Other errors are thrown and leave the cached copies as they were.
/// ``refresh()`` is soft: the next request fetches, but the old value stays as the fallback.
/// ``clear()`` is hard: memory and disk copies are gone, and fetches in flight are cancelled.
///
/// A multiplexer with a `cacheKey` registers itself with ``MuxRepository`` before `init` returns
/// (weakly). It is thread-safe.
public final class Multiplexer<Value: Codable & Sendable>: Sendable {
    /// The name of the disk copy, if the value is kept on disk.
    public let cacheKey: String?

    @usableFromInline let _core: MuxCore<MuxSingleKey, Value>

    /// Creates a multiplexer.
    ///
    /// - Parameters:
    ///   - cacheKey: names the disk copy; `nil` (the default) keeps the value in memory only.
    ///   - timeToLive: how long a fetched value is served without fetching again; 30 minutes by default.
    ///   - directory: the folder for disk copies; ``MuxRepository/defaultDirectory`` by default.
    ///   - clock: the clocks read for ages; the system's by default.
    ///   - onFetch: fetches the value; should honour task cancellation.
    @inlinable  // only to make the run closure here, specialized: see `MuxCore.runner(fetch:)`
    public convenience init(
        cacheKey: String? = nil,
        timeToLive: Duration = .seconds(30 * 60),
        directory: URL? = nil,
        clock: MuxClock = .system,
        onFetch: @escaping @Sendable () async throws -> Value
    ) {
        self.init(
            cacheKey: cacheKey, timeToLive: timeToLive, directory: directory, clock: clock,
            runner: MuxCore.runner { _ in try await onFetch() }
        )
    }

    @usableFromInline
    init(cacheKey: String?, timeToLive: Duration, directory: URL?, clock: MuxClock, runner: @escaping MuxCore<MuxSingleKey, Value>.Runner) {
        self.cacheKey = cacheKey
        let disk = cacheKey.flatMap { cacheKey in
            MuxRepository.storage(cacheKey: cacheKey, directory: directory) { (_: MuxSingleKey) in cacheKey }
        }
        let cache = MuxCache<MuxSingleKey, Value>(timeToLive: timeToLive, clock: clock, countLimit: 1, disk: disk)
        // More than one slot: a fetch after a refresh must not wait behind a slow one from before it.
        _core = MuxCore(cache: cache, maxConcurrent: 4, runner: runner)
        if cacheKey != nil { MuxRepository.register(self) }
    }

    /// How long a fetched value is served without fetching again.
    public var timeToLive: Duration { _core.cache.timeToLive }

    /// The value: the fresh memory copy, else a fresh disk copy, else one fetch shared by every
    /// caller; after a silenceable failure, the cached copy of any age.
    ///
    /// - Throws: the fetch's error when there is nothing to fall back on (a ``SilenceableError`` is
    ///   unwrapped), or `CancellationError` if the caller's task is cancelled or ``clear()`` runs.
    @inlinable  // with `MuxCore.request`, so a hit runs specialized in the caller: one lock, no generic dispatch
    public func value() async throws -> Value {
        try await _core.request(.only)
    }

    /// Soft refresh: the next ``value()`` fetches. The memory and disk copies stay, so a
    /// silenceable failure still returns the old value. Returns `self`, for `refresh().value()`.
    @discardableResult
    public func refresh() -> Multiplexer<Value> {
        _core.cache.refresh(nil)
        return self
    }

    /// Hard clear: the memory and disk copies are removed and a fetch in flight is cancelled (its
    /// callers receive `CancellationError`). The next request fetches and, offline, fails.
    public func clear() {
        _core.clear(nil)
    }

    /// Drops the memory copy; the disk copy stays.
    public func clearMemory() {
        _core.cache.clearMemory()
    }

    /// Writes the memory copy to disk (with the time it was fetched), if there is a `cacheKey`.
    ///
    /// - Returns: the failures, if any; the copy on disk is then unchanged.
    @discardableResult
    public func save() -> [DiskStorageError] {
        _core.cache.save()
    }

    /// The cached value of any age — memory, else disk — without fetching.
    public var cachedValue: Value? {
        _core.cache.anyCopy(for: .only)
    }

    /// Makes `value` the fresh memory copy, as if it had just been fetched (a value pushed by a
    /// server, say). A fetch already in flight gives what it brings back to its callers but does not
    /// replace `value`: it began before, so its value is the older.
    public func set(_ value: Value) {
        _core.cache.store(value, for: .only)
    }
}

extension Multiplexer: Hashable {
    /// Multiplexers are equal when they are the same object.
    public static func == (lhs: Multiplexer, rhs: Multiplexer) -> Bool { lhs === rhs }

    /// Hashes the object's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension Multiplexer {
    /// The processor behind the multiplexer (tests count its waiters).
    var fetcher: AutoProcessor<MuxRunKey<MuxSingleKey>, Value> { _core.fetcher }
}

extension Multiplexer {
    /// Registers with ``MuxRepository`` (AsyncMux's explicit step; a `cacheKey` already
    /// registers). Returns `self`, so it chains after `init`.
    @discardableResult
    public func register() -> Multiplexer<Value> {
        MuxRepository.register(self)
        return self
    }

    /// Removes this multiplexer from ``MuxRepository`` (it is held weakly anyway).
    public func unregister() {
        MuxRepository.unregister(self)
    }
}

extension Multiplexer: MuxRepositoryMember {
    var diskFolder: URL? { _core.cache.disk?.directory }
    func saveToDisk() -> [DiskStorageError] { _core.cache.save() }
    func clearEverything() { _core.clear(nil) }
}

/// The only key of a single ``Multiplexer``.
@usableFromInline
struct MuxSingleKey: Hashable, Sendable {
    @usableFromInline static let only = MuxSingleKey()
    @inlinable init() {}
}
