/// A view of a storage under another key type; see ``Storage/mapKeys(_:)``.
public struct KeyMappedStorage<Base: Storage, Key: Sendable>: Storage {
    /// The storage that holds the entries.
    public let base: Base
    private let transform: @Sendable (Key) -> Base.Key

    /// Creates a view of `base` whose keys are turned into `base`'s keys by `transform`.
    public init(_ base: Base, transform: @escaping @Sendable (Key) -> Base.Key) {
        self.base = base
        self.transform = transform
    }

    /// The base storage's value for `transform(key)`.
    public func value(for key: Key) -> Base.Value? { base.value(for: transform(key)) }
    /// The base storage's lookup of `transform(key)`.
    public func lookup(_ key: Key) -> StoredValue<Base.Value>? { base.lookup(transform(key)) }
    /// Stores `value` in the base storage under `transform(key)`.
    public func set(_ value: Base.Value, for key: Key) { base.set(value, for: transform(key)) }
    /// Removes the base storage's value for `transform(key)`.
    public func removeValue(for key: Key) { base.removeValue(for: transform(key)) }
    /// Removes every value of the base storage (a view cannot tell its own keys apart).
    public func removeAll() { base.removeAll() }
}

extension Storage {
    /// A view of this storage keyed by `NewKey`, each key turned into this storage's key by `transform`.
    ///
    /// Keys only ever flow into a storage, so one direction is enough (the storage is a
    /// contravariant functor in its key). The view shares this storage's entries.
    ///
    /// ```swift
    /// let byURL = diskStorage.mapKeys { (url: URL) in url.absoluteString }
    /// ```
    public func mapKeys<NewKey: Sendable>(
        _ transform: @escaping @Sendable (NewKey) -> Key
    ) -> KeyMappedStorage<Self, NewKey> {
        KeyMappedStorage(self, transform: transform)
    }
}
