// Inlinable: `value(for:)`, `lookup` and `set` run specialized in the client (benchmarks "item(at:) on 10,000 loaded rows" and "MemoryStorage set+get").
/// A thread-safe in-memory storage that evicts entries not used recently (CLOCK).
///
/// Reads, writes and evictions are O(1) (evictions amortized). With no limits it grows without
/// bound (the default). A read counts as a use, so the entries a list keeps showing stay while others
/// are evicted. CLOCK — a second-chance approximation of least recently used — keeps a read as
/// cheap as a dictionary lookup: it only sets a bit, where exact LRU would relink a list on every
/// read of every row in every frame.
///
/// ```swift
/// let thumbnails = MemoryStorage<URL, Data>(countLimit: 500, costLimit: 64 << 20, cost: { $0.count })
/// ```
public final class MemoryStorage<Key: Hashable & Sendable, Value: Sendable>: Storage {
    /// The most entries kept, or `nil` for no limit (the default).
    public let countLimit: Int?
    /// The largest total cost kept, or `nil` for no limit (the default).
    public let costLimit: Int?

    @usableFromInline let _cost: @Sendable (Value) -> Int
    @usableFromInline let _table = Locked(ClockTable<Key, Value>())

    /// Creates a storage.
    ///
    /// - Parameters:
    ///   - countLimit: the most entries kept; `nil` (the default) for no limit. Must not be negative.
    ///   - costLimit: the largest sum of `cost(value)` kept; `nil` (the default) for no limit.
    ///     A single value that costs more than the whole limit is not kept.
    ///   - cost: what a value costs, e.g. its byte count; every value costs 1 by default.
    public init(
        countLimit: Int? = nil,
        costLimit: Int? = nil,
        cost: @escaping @Sendable (Value) -> Int = { _ in 1 }
    ) {
        precondition(countLimit.map { $0 >= 0 } ?? true, "MemoryStorage countLimit must be 0 or more")
        precondition(costLimit.map { $0 >= 0 } ?? true, "MemoryStorage costLimit must be 0 or more")
        self.countLimit = countLimit
        self.costLimit = costLimit
        self._cost = cost
    }

    /// The value for `key`, which becomes the most recently used entry.
    @inlinable
    public func value(for key: Key) -> Value? {
        _table.withLock { $0.value(for: key) }
    }

    /// Stores `value`, evicting entries not used recently until both limits hold. The entries to
    /// evict are chosen before `value` goes in, so the value just stored is never one of them.
    @inlinable
    public func set(_ value: Value, for key: Key) {
        set(value, for: key, unless: nil)
    }

    /// Stores `value` as ``set(_:for:)`` does, unless `keeps` says the value held for `key` must stay
    /// (a multiplexer's fetch does not replace a copy made after it began); judged under the lock.
    /// Returns whether `value` was stored.
    @inlinable @discardableResult
    func set(_ value: Value, for key: Key, unless keeps: ((Value) -> Bool)?) -> Bool {
        let cost = max(0, _cost(value))  // a negative cost would let the total run past the limit
        // Evicted values are released after the lock, so their deinit never runs inside it.
        let (stored, evicted): (Bool, [Value]) = _table.withLock { table in
            if let keeps, let held = table.peek(key), keeps(held) { return (false, []) }
            var evicted: [Value] = []
            let replaced = table.removeValue(for: key)
            if let replaced { evicted.append(replaced) }
            if let costLimit, cost > costLimit { return (false, evicted) }
            if countLimit == 0 { return (false, evicted) }
            while isOverLimit(table, adding: cost), let entry = table.evict() {
                evicted.append(entry.value)
            }
            table.set(value, for: key, cost: cost)
            // A replacement counts as a use, as a read would.
            if replaced != nil { _ = table.value(for: key) }
            return (true, evicted)
        }
        _ = evicted
        return stored
    }

    /// Removes the value for `key`.
    @inlinable
    public func removeValue(for key: Key) {
        let removed = _table.withLock { $0.removeValue(for: key) }
        _ = removed
    }

    /// Removes every value.
    public func removeAll() {
        let old = _table.withLock { table in
            let old = table
            table.removeAll()
            return old
        }
        _ = old
    }

    /// What `body` makes of the value for `key` (which becomes the most recently used entry), under
    /// the lock: the value is not copied out.
    @inlinable
    func read<Result: Sendable>(_ key: Key, _ body: @Sendable (Value) -> Result?) -> Result? {
        _table.withLock { table in table.read(key, body) }
    }

    /// Removes the value for `key` if `matches` says it is still the one the caller means (a
    /// multiplexer takes back a copy a concurrent clear made stale, not a newer one stored since).
    @usableFromInline
    func removeValue(for key: Key, if matches: (Value) -> Bool) {
        let removed = _table.withLock { table -> Value? in
            guard let value = table.peek(key), matches(value) else { return nil }
            return table.removeValue(for: key)
        }
        _ = removed
    }

    /// Every entry held now, without marking any used; O(n) (a multiplexer's `save()`).
    func snapshot() -> [(key: Key, value: Value)] {
        _table.withLock { table in table.entries.map { ($0.key, $0.value) } }
    }

    /// The number of entries held now.
    public var count: Int { _table.withLock { $0.count } }

    /// The sum of the costs of the entries held now.
    public var totalCost: Int { _table.withLock { $0.totalCost } }

    /// The keys held now, in no particular order; O(n), meant for tests and diagnostics.
    public var keys: [Key] { _table.withLock { $0.keys } }

    /// Whether one more entry costing `cost` would break a limit.
    @inlinable
    func isOverLimit(_ table: ClockTable<Key, Value>, adding cost: Int) -> Bool {
        if let countLimit, table.count + 1 > countLimit { return true }
        if let costLimit, table.totalCost > costLimit - cost { return true }
        return false
    }
}
