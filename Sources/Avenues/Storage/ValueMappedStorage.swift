/// A view of a storage under another value type; see ``Storage/mapValues(_:_:)``.
public struct ValueMappedStorage<Base: Storage, Value: Sendable>: Storage {
    /// The storage that holds the entries.
    public let base: Base
    private let read: @Sendable (Base.Value) -> Value?
    private let write: @Sendable (Value) -> Base.Value?

    /// Creates a view of `base` that turns stored values into `Value` with `read` and back with
    /// `write`. A `nil` from `read` is a miss; a `nil` from `write` removes the entry instead of
    /// leaving an older value behind.
    public init(
        _ base: Base,
        read: @escaping @Sendable (Base.Value) -> Value?,
        write: @escaping @Sendable (Value) -> Base.Value?
    ) {
        self.base = base
        self.read = read
        self.write = write
    }

    /// The base storage's value for `key`, turned into `Value`; `nil` if absent or unreadable.
    public func value(for key: Base.Key) -> Value? { base.value(for: key).flatMap(read) }

    /// The base storage's lookup of `key`, its value turned into `Value` (a value `read` rejects is
    /// a miss).
    public func lookup(_ key: Base.Key) -> StoredValue<Value>? {
        guard let found = base.lookup(key), let value = read(found.value) else { return nil }
        return StoredValue(value, isStale: found.isStale)
    }

    /// Stores `write(value)` in the base storage, or removes the entry when `write` gives `nil`.
    public func set(_ value: Value, for key: Base.Key) {
        if let stored = write(value) {
            base.set(stored, for: key)
        } else {
            base.removeValue(for: key)
        }
    }

    /// Removes the base storage's value for `key`.
    public func removeValue(for key: Base.Key) { base.removeValue(for: key) }
    /// Removes every value of the base storage.
    public func removeAll() { base.removeAll() }
}

extension Storage {
    /// A view of this storage holding `NewValue`, converted on the way out by `transform` and on the
    /// way in by `inverse`.
    ///
    /// Values flow both in and out of a storage, so both directions are needed (a storage is a
    /// profunctor in its value). For `s.mapValues(f, g)` to read back what was written, `f(g(v))`
    /// must equal `v`.
    ///
    /// ```swift
    /// let texts = bytes.mapValues({ String(decoding: $0, as: UTF8.self) }, { Data($0.utf8) })
    /// ```
    public func mapValues<NewValue: Sendable>(
        _ transform: @escaping @Sendable (Value) -> NewValue,
        _ inverse: @escaping @Sendable (NewValue) -> Value
    ) -> ValueMappedStorage<Self, NewValue> {
        ValueMappedStorage(self, read: { transform($0) }, write: { inverse($0) })
    }

    /// Like ``mapValues(_:_:)`` for conversions that can fail: a `nil` from `transform` reads as a
    /// miss (a value that cannot be decoded), and a `nil` from `inverse` removes the entry.
    public func compactMapValues<NewValue: Sendable>(
        _ transform: @escaping @Sendable (Value) -> NewValue?,
        _ inverse: @escaping @Sendable (NewValue) -> Value?
    ) -> ValueMappedStorage<Self, NewValue> {
        ValueMappedStorage(self, read: transform, write: inverse)
    }
}
