/// A synchronous, thread-safe place where results are kept, keyed by what was loaded.
///
/// Storage is synchronous because a render loop reads it every frame: `value(for:)` must answer
/// without suspending. Every conforming type must be safe to call from any thread.
///
/// Storages compose: ``mapKeys(_:)`` and ``mapValues(_:_:)`` give another view of the same
/// entries, and ``layered(over:)`` puts a fast storage in front of a slower one.
/// ``EmptyStorage`` is the identity of layering.
public protocol Storage<Key, Value>: Sendable {
    /// What an entry is looked up by.
    associatedtype Key: Sendable
    /// What an entry holds.
    associatedtype Value: Sendable

    /// The value stored for `key`, or `nil` when there is none (never stored, removed, evicted, or
    /// unreadable).
    func value(for key: Key) -> Value?

    /// Stores `value` for `key`, replacing any previous value. A storage may evict other entries to
    /// stay within its limits, and may decline to keep a value it cannot hold; a later read is then a
    /// miss, never a wrong value.
    func set(_ value: Value, for key: Key)

    /// Removes the value stored for `key`, if any.
    func removeValue(for key: Key)

    /// Removes every value.
    func removeAll()

    /// The value for `key` with its freshness; see ``StoredValue``. The default reads
    /// ``value(for:)`` and calls every value fresh.
    func lookup(_ key: Key) -> StoredValue<Value>?
}

/// A value found in a ``Storage``, and whether it is stale: kept past its freshness, like an expired
/// ``DiskStorage`` entry. An ``Avenue`` shows a stale value at once and loads a fresh one.
public struct StoredValue<Value: Sendable>: Sendable {
    /// The value.
    public var value: Value
    /// `true` when the value is outdated and should be replaced.
    public var isStale: Bool

    /// A found value.
    @inlinable
    public init(_ value: Value, isStale: Bool = false) {
        self.value = value
        self.isStale = isStale
    }
}

extension Storage {
    /// The value for `key` with its freshness, or `nil` when there is none. Storages that do not know
    /// staleness (memory) report every value as fresh; ``DiskStorage`` reports expired entries as
    /// stale instead of missing. Inlinable: an ``Avenue`` reads through it on every `item(at:)`,
    /// and unspecialized it costs several dictionary reads (see "Instruction counts" in
    /// Benchmarks/README.md).
    @inlinable
    public func lookup(_ key: Key) -> StoredValue<Value>? {
        value(for: key).map { StoredValue($0) }
    }
}

/// A storage its processor fills itself (a multiplexer map's own copies): an ``Avenue`` over that
/// processor does not write its loads into it, or it would put back what the processor chose not to
/// keep.
@usableFromInline
protocol StorageFilledByItsProcessor {
    /// Whether `processor` fills this storage itself.
    func isFilled(by processor: Any) -> Bool
}
