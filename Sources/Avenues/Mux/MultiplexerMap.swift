import Foundation

/// A ``Multiplexer`` per key: fetches each value — say, user profiles by id — once for every caller,
/// keeps it in memory for a time-to-live and, with a `cacheKey`, on disk.
///
/// ```swift
/// let userProfiles = MultiplexerMap(onFetch: Backend.fetchUserProfile)
/// let profile = try await userProfiles.value(for: "user_8cJOiRXbugFccrUhmCX2")
/// ```
///
/// The policy is ``Multiplexer``'s, per key. Any key is safe on disk (`/`, `..`, long or unicode
/// keys are hashed into file names). Memory copies are bounded (`countLimit`; those not used
/// recently go first, as in ``MemoryStorage``). A map is a ``SchedulingProcessor``, so an ``Avenue``
/// can load rows through it and share its cache, with one queue: its `maxConcurrentFetches`, ordered
/// by the priority of the rows asking.
public final class MultiplexerMap<Key: LosslessStringConvertible & Hashable & Sendable, Value: Codable & Sendable>: SchedulingProcessor {
    /// The name of the disk copies, if values are kept on disk.
    public let cacheKey: String?

    @usableFromInline let _core: MuxCore<Key, Value>

    /// Creates a map.
    ///
    /// - Parameters:
    ///   - cacheKey: names the disk copies; `nil` (the default) keeps values in memory only.
    ///   - timeToLive: how long a fetched value is served without fetching again; 30 minutes by default.
    ///   - countLimit: the most values kept in memory; 1,000 by default.
    ///   - maxConcurrentFetches: the most fetches running at once; 16 by default.
    ///   - rateLimit: how many fetches may start per second (an API's quota); `nil` (the default)
    ///     for no limit.
    ///   - directory: the folder for disk copies; ``MuxRepository/defaultDirectory`` by default.
    ///   - clock: the clocks read for ages; the system's by default.
    ///   - onFetch: fetches the value for a key; should honour task cancellation.
    @inlinable  // only to make the run closure here, specialized: see `MuxCore.runner(fetch:)`
    public convenience init(
        cacheKey: String? = nil,
        timeToLive: Duration = .seconds(30 * 60),
        countLimit: Int = 1_000,
        maxConcurrentFetches: Int = 16,
        rateLimit: RateLimit? = nil,
        directory: URL? = nil,
        clock: MuxClock = .system,
        onFetch: @escaping @Sendable (Key) async throws -> Value
    ) {
        self.init(
            cacheKey: cacheKey, timeToLive: timeToLive, countLimit: countLimit, maxConcurrentFetches: maxConcurrentFetches,
            rateLimit: rateLimit, directory: directory, clock: clock, runner: MuxCore.runner(fetch: onFetch)
        )
    }

    @usableFromInline
    init(
        cacheKey: String?, timeToLive: Duration, countLimit: Int, maxConcurrentFetches: Int, rateLimit: RateLimit?,
        directory: URL?, clock: MuxClock, runner: @escaping MuxCore<Key, Value>.Runner
    ) {
        self.cacheKey = cacheKey
        let disk = cacheKey.flatMap { cacheKey in
            // The map's name is part of each entry's key, so two maps never read each other's copies.
            MuxRepository.storage(cacheKey: cacheKey, directory: directory) { (key: Key) in cacheKey + "\u{1F}" + key.description }
        }
        let cache = MuxCache<Key, Value>(timeToLive: timeToLive, clock: clock, countLimit: countLimit, disk: disk)
        _core = MuxCore(cache: cache, maxConcurrent: maxConcurrentFetches, rateLimit: rateLimit, runner: runner)
        if cacheKey != nil { MuxRepository.register(self) }
    }

    /// How long a fetched value is served without fetching again.
    public var timeToLive: Duration { _core.cache.timeToLive }

    /// The value for `key`; see ``Multiplexer/value()`` for the policy.
    @inlinable  // with `MuxCore.request`: the hit runs specialized in the caller
    public func value(for key: Key) async throws -> Value {
        try await _core.request(key)
    }

    /// Same as ``value(for:)``, so the map can serve an ``Avenue``.
    public func process(_ key: Key) async throws -> Value {
        try await value(for: key)
    }

    /// ``value(for:)`` for a run at `priority`: a fetch waits for its turn at the run's priority and
    /// follows its changes, so an ``Avenue`` over the map (or an ``AutoProcessor``) shares its queue.
    public func process(_ key: Key, priority: RunPriority) async throws -> Value {
        try await _core.request(key, priority: priority)
    }

    /// Soft refresh of every key: each key's next request fetches; old values stay as fallbacks.
    @discardableResult
    public func refresh() -> MultiplexerMap<Key, Value> {
        _core.cache.refresh(nil)
        return self
    }

    /// Soft refresh of `key`: its next request fetches, and its copies stay as fallbacks until a
    /// fetch succeeds. Returns `self`, for `refresh(for: key).value(for: key)`.
    @discardableResult
    public func refresh(for key: Key) -> MultiplexerMap<Key, Value> {
        _core.cache.refresh(key)
        return self
    }

    /// Hard clear of every key: memory and disk copies gone, fetches in flight cancelled.
    public func clear() {
        _core.clear(nil)
    }

    /// Hard clear of `key`: its memory and disk copies are gone and its fetch in flight is cancelled
    /// (those callers receive `CancellationError`).
    public func clear(for key: Key) {
        _core.clear(key)
    }

    /// Drops every memory copy; disk copies stay and are read again when needed.
    public func clearMemory() {
        _core.cache.clearMemory()
    }

    /// Writes every memory copy to disk, if there is a `cacheKey`.
    ///
    /// - Returns: the failures, if any.
    @discardableResult
    public func save() -> [DiskStorageError] {
        _core.cache.save()
    }

    /// The cached value for `key` of any age — memory, else disk — without fetching.
    public func cachedValue(for key: Key) -> Value? {
        _core.cache.anyCopy(for: key)
    }

    /// Whether a value for `key` is cached: offline, ``value(for:)`` answers with it.
    public func isAvailableOffline(_ key: Key) -> Bool {
        cachedValue(for: key) != nil
    }

    /// Makes `value` the fresh memory copy for `key` (an optimistic update, a value pushed by a
    /// server). A fetch of `key` already in flight gives what it brings back to its callers but
    /// does not replace `value`: it began before, so its value is the older.
    public func set(_ value: Value, for key: Key) {
        _core.cache.store(value, for: key)
    }
}

extension MultiplexerMap {
    /// Registers with ``MuxRepository`` (AsyncMux's explicit step; a `cacheKey` already
    /// registers). Returns `self`, so it chains after `init`.
    @discardableResult
    public func register() -> MultiplexerMap<Key, Value> {
        MuxRepository.register(self)
        return self
    }

    /// Removes this multiplexer from ``MuxRepository`` (it is held weakly anyway).
    public func unregister() {
        MuxRepository.unregister(self)
    }
}

extension MultiplexerMap: MuxRepositoryMember {
    var diskFolder: URL? { _core.cache.disk?.directory }
    func saveToDisk() -> [DiskStorageError] { _core.cache.save() }
    func clearEverything() { _core.clear(nil) }
}
