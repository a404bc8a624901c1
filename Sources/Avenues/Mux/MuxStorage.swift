/// A ``MultiplexerMap``'s copies seen as a ``Storage``: give it to an ``Avenue`` over the map, and a
/// row whose copy is past its time-to-live shows that copy at once (``ItemState/stale(revalidating:error:)``)
/// while the map fetches a fresh one — in one run per key, shared with the map's other callers.
///
/// ```swift
/// let avenue = Avenue<Int, String, Profile>(storage: profiles.storage, processor: profiles)
/// ```
///
/// Reads never fetch: a fresh copy is fresh, an older one (memory, else disk) is stale. Writes store
/// a fresh memory copy; removals are the map's hard clear of that key (memory and disk). An avenue
/// over the map itself does not write its loads here: the map keeps what it fetched, unless a
/// refresh, a clear or a value set since the fetch began made it the older.
public struct MuxStorage<Key: LosslessStringConvertible & Hashable & Sendable, Value: Codable & Sendable>: Storage {
    let core: MuxCore<Key, Value>

    /// The fresh copy of `key`, if there is one.
    public func value(for key: Key) -> Value? {
        core.cache.freshCopy(for: key)
    }

    /// The copy of `key` of any age, marked stale when it is past its time-to-live or was refreshed.
    public func lookup(_ key: Key) -> StoredValue<Value>? {
        core.cache.lookup(key).map { StoredValue($0.value, isStale: $0.isStale) }
    }

    /// Makes `value` the fresh memory copy of `key`.
    public func set(_ value: Value, for key: Key) {
        core.cache.store(value, for: key)
    }

    /// Removes the memory and disk copies of `key`.
    public func removeValue(for key: Key) {
        core.cache.clear(key)
    }

    /// Removes every memory and disk copy of the map.
    public func removeAll() {
        core.cache.clear(nil)
    }
}

extension MuxStorage: StorageFilledByItsProcessor {
    @usableFromInline
    func isFilled(by processor: Any) -> Bool {
        (processor as? MultiplexerMap<Key, Value>)?._core === core
    }
}

extension MultiplexerMap {
    /// The map's copies as a ``Storage``, for an ``Avenue`` over the map: stale copies show at once
    /// while a fresh one is fetched. See ``MuxStorage``.
    public var storage: MuxStorage<Key, Value> {
        MuxStorage(core: _core)
    }
}
