/// A processor that answers from a storage when it can; see ``Processor/cached(in:)``.
public struct CachedProcessor<Base: Processor, Cache: Storage>: Processor
where Cache.Key == Base.Key, Cache.Value == Base.Value {
    /// The processor doing the work on a miss.
    public let base: Base
    /// Where results are read from first and written to after work.
    public let cache: Cache

    /// Creates a processor that reads `cache` first and writes `base`'s results into it.
    public init(_ base: Base, cache: Cache) {
        self.base = base
        self.cache = cache
    }

    /// The cached value for `key`, or `base`'s value, which is then cached.
    public func process(_ key: Base.Key) async throws -> Base.Value {
        try await process(key) { try await base.process($0) }
    }

    /// The cached value for `key`, or `work`'s, which is then cached.
    func process(_ key: Base.Key, work: (Base.Key) async throws -> Base.Value) async throws -> Base.Value {
        // This runs in the processor's task, not the caller's: a slow cache (a disk) is read off the
        // thread that asked (under an AutoProcessor, on one of its workers).
        if let cached = cache.value(for: key) { return cached }
        let value = try await work(key)
        cache.set(value, for: key)
        return value
    }

    /// Whether the cache holds `key`, or `base` makes it without the network.
    public func isAvailableOffline(_ key: Base.Key) -> Bool {
        cache.value(for: key) != nil || base.isAvailableOffline(key)
    }
}

extension Processor {
    /// This processor reading `storage` first and writing its results back, so in-flight requests
    /// are reused across disk and work. Under an ``AutoProcessor`` the storage read and
    /// the work are one run, so concurrent requests for a key share both.
    ///
    /// ```swift
    /// let disk = DiskStorage<String>(directory: folder).codable(Summary.self)
    /// let avenue = Avenue<Int, String, Summary>(storage: MemoryStorage(), processor: summarize.cached(in: disk))
    /// ```
    public func cached<Cache: Storage>(in storage: Cache) -> CachedProcessor<Self, Cache>
    where Cache.Key == Key, Cache.Value == Value {
        CachedProcessor(self, cache: storage)
    }
}
