import Foundation

/// A ``Multiplexer`` per key: fetches each value — say, user profiles by id — once for every caller,
/// keeps it in memory for a time-to-live and, with a `cacheKey`, on disk.
///
/// ```swift
/// let userProfiles = MultiplexerMap(onFetch: Backend.fetchUserProfile)
/// let profile = try await userProfiles.request(key: "user_8cJOiRXbugFccrUhmCX2")
/// ```
///
/// The policy is ``Multiplexer``'s, per key. Any key is safe on disk (`/`, `..`, long or unicode
/// keys are hashed into file names). Memory copies are bounded (`memoryLimit`, least recently used
/// out). A map is a ``SchedulingProcessor``, so an ``Avenue`` can load rows through it and share its
/// cache, with one queue: its `maxConcurrentFetches`, ordered by the priority of the rows asking.
public final class MultiplexerMap<K: LosslessStringConvertible & Hashable & Sendable, T: Codable & Sendable>: SchedulingProcessor {
    /// The map's keys.
    public typealias Key = K
    /// The map's values.
    public typealias Value = T

    /// The name of the disk copies, if values are kept on disk.
    public let cacheKey: String?

    @usableFromInline let core: MuxCore<K, T>

    /// Creates a map.
    ///
    /// - Parameters:
    ///   - cacheKey: names the disk copies; `nil` (the default) keeps values in memory only.
    ///   - timeToLive: how long a fetched value is served without fetching again; 30 minutes by default.
    ///   - memoryLimit: the most values kept in memory; 1,000 by default.
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
        memoryLimit: Int = 1_000,
        maxConcurrentFetches: Int = 16,
        rateLimit: RateLimit? = nil,
        directory: URL? = nil,
        clock: MuxClock = .system,
        onFetch: @escaping @Sendable (K) async throws -> T
    ) {
        self.init(
            cacheKey: cacheKey, timeToLive: timeToLive, memoryLimit: memoryLimit, maxConcurrentFetches: maxConcurrentFetches,
            rateLimit: rateLimit, directory: directory, clock: clock, runner: MuxCore.runner(fetch: onFetch)
        )
    }

    @usableFromInline
    init(
        cacheKey: String?, timeToLive: Duration, memoryLimit: Int, maxConcurrentFetches: Int, rateLimit: RateLimit?,
        directory: URL?, clock: MuxClock, runner: @escaping MuxCore<K, T>.Runner
    ) {
        self.cacheKey = cacheKey
        let disk = cacheKey.flatMap { cacheKey in
            // The map's name is part of each entry's key, so two maps never read each other's copies.
            MuxRepository.storage(cacheKey: cacheKey, directory: directory) { (key: K) in cacheKey + "\u{1F}" + key.description }
        }
        let cache = MuxCache<K, T>(timeToLive: timeToLive, clock: clock, memoryLimit: memoryLimit, disk: disk)
        core = MuxCore(cache: cache, maxConcurrent: maxConcurrentFetches, rateLimit: rateLimit, runner: runner)
        if cacheKey != nil { MuxRepository.register(self) }
    }

    /// How long a fetched value is served without fetching again.
    public var timeToLive: Duration { core.cache.timeToLive }

    /// The value for `key`; see ``Multiplexer/request()`` for the policy.
    @inlinable  // with `MuxCore.request`: the hit runs specialized in the caller
    public func request(key: K) async throws -> T {
        try await core.request(key)
    }

    /// Same as ``request(key:)``, so the map can serve an ``Avenue``.
    public func process(_ key: K) async throws -> T {
        try await request(key: key)
    }

    /// Soft refresh of every key: each key's next request fetches; old values stay as fallbacks.
    @discardableResult
    public func refresh() -> MultiplexerMap<K, T> {
        core.cache.refresh(nil)
        return self
    }

    /// Soft refresh of `key`.
    @discardableResult
    public func refresh(key: K) -> MultiplexerMap<K, T> {
        core.cache.refresh(key)
        return self
    }

    /// Hard clear of every key: memory and disk copies gone, fetches in flight cancelled.
    public func clear() async {
        core.clear(nil)
    }

    /// Hard clear of `key`.
    public func clear(key: K) async {
        core.clear(key)
    }

    /// Drops every memory copy; disk copies stay and are read again when needed.
    public func clearMemory() {
        core.cache.clearMemory()
    }

    /// Writes every memory copy to disk, if there is a `cacheKey`.
    ///
    /// - Returns: the failures, if any.
    @discardableResult
    public func save() async -> [DiskStorageError] {
        core.cache.save()
    }

    /// The cached value for `key` of any age — memory, else disk — without fetching.
    public func cachedValue(for key: K) -> T? {
        core.cache.cachedValue(for: key)
    }

    /// Makes `value` the fresh memory copy for `key`.
    public func store(_ value: T, for key: K) {
        core.cache.store(value, for: key)
    }
}

extension MultiplexerMap {
    /// Registers with ``MuxRepository`` (the earlier seed's explicit step; a `cacheKey` already
    /// registers). Returns `self`, so it chains after `init`.
    @discardableResult
    public func register() -> MultiplexerMap<K, T> {
        MuxRepository.register(self)
        return self
    }

    /// Removes this multiplexer from ``MuxRepository`` (it is held weakly anyway).
    public func unregister() {
        MuxRepository.unregister(self)
    }
}

extension MultiplexerMap: MuxRepositoryMember {
    var diskFolder: URL? { core.cache.disk?.directory }
    func saveToDisk() -> [DiskStorageError] { core.cache.save() }
    func clearEverything() { core.clear(nil) }
}
