/// A ``MuxCache`` and the fetching around it: each key is fetched by one run at a time, through an
/// ``AutoProcessor``, however many callers ask.
final class MuxCore<Key: Hashable & Sendable, Value: Codable & Sendable>: Sendable {
    let cache: MuxCache<Key, Value>
    let fetcher: AutoProcessor<Key, Value>

    init(cache: MuxCache<Key, Value>, maxConcurrent: Int, fetch: @escaping @Sendable (Key) async throws -> Value) {
        self.cache = cache
        fetcher = AutoProcessor(maxConcurrent: maxConcurrent) { [cache] key in
            try await Self.run(key, cache: cache, fetch: fetch)
        }
    }

    /// A fresh memory copy at once; otherwise joins (or starts) the key's run.
    func request(_ key: Key) async throws -> Value {
        if let value = cache.freshValue(for: key) { return value }
        return try await fetcher.value(for: key)
    }

    /// Hard clear, including fetches in flight: their callers receive `CancellationError`, so a value
    /// fetched before the clear can never be stored after it.
    func clear(_ key: Key?) {
        if let key {
            fetcher.cancel(key)
        } else {
            fetcher.cancelAll()
        }
        cache.clear(key)
    }

    /// One run: a copy still fresh (memory, or disk on a cold start), else the fetch (or the batch
    /// fetching this key), else — after a silenceable failure — the fallback copy.
    private static func run(_ key: Key, cache: MuxCache<Key, Value>, fetch: @Sendable (Key) async throws -> Value) async throws -> Value {
        if let value = cache.freshValueFromMemoryOrDisk(for: key) { return value }
        do {
            let value: Value
            if let batch = cache.batch(for: key) {
                value = try await batch.value(for: key)
            } else {
                value = try await fetch(key)
            }
            try Task.checkCancellation()  // cleared or abandoned meanwhile: do not store
            cache.store(value, for: key)
            return value
        } catch {
            if error is CancellationError || Task.isCancelled { throw error }
            guard error.isSilenceable else { throw error }
            if let fallback = cache.fallbackValue(for: key) { return fallback }
            throw error.unwrappingSilenceable
        }
    }
}
