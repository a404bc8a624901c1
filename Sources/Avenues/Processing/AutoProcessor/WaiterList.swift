// Inlinable because `AutoProcessor` is (see there).
/// Someone waiting for a run's result: a suspended `value(for:)` caller or a callback claim.
@usableFromInline
enum Waiter<Value: Sendable>: Sendable {
    case continuation(UnsafeContinuation<Value, any Error>)
    case callback(@Sendable (Result<Value, any Error>) -> Void)
    /// A callback that is also told whether a `CancellationError` came from ``AutoProcessor/cancel(_:)``
    /// or ``AutoProcessor/cancelAll()`` (`true`) rather than from the work itself.
    case observer(@Sendable (Result<Value, any Error>, _ cancelledForEveryone: Bool) -> Void)

    /// Hands `result` over. Called exactly once per waiter, never inside a lock.
    @inlinable
    func resume(with result: Result<Value, any Error>, cancelledForEveryone: Bool = false) {
        switch self {
        case .continuation(let continuation): continuation.resume(with: result)
        case .callback(let callback): callback(result)
        case .observer(let observer): observer(result, cancelledForEveryone)
        }
    }
}

/// The claims on one run, by claim id, with the counts of `.visible` and `.prefetch` claims kept up
/// to date so the run's priority is O(1). Stores a single claim inline, because most runs have exactly one.
@usableFromInline
struct WaiterList<Value: Sendable> {
    @usableFromInline
    struct Entry {
        @usableFromInline var priority: LoadPriority
        @usableFromInline var waiter: Waiter<Value>
        @inlinable init(priority: LoadPriority, waiter: Waiter<Value>) { (self.priority, self.waiter) = (priority, waiter) }
    }

    @usableFromInline
    enum Entries {
        case empty
        case one(UInt64, Entry)
        case many([UInt64: Entry])
    }

    @usableFromInline var entries = Entries.empty
    @usableFromInline private(set) var count = 0
    @usableFromInline var visibleCount = 0
    @usableFromInline var prefetchCount = 0

    @inlinable init() {}

    @inlinable var isEmpty: Bool { count == 0 }

    /// The highest priority among the claims (`.prefetch` when there are none).
    @inlinable var priority: LoadPriority {
        visibleCount > 0 ? .visible : prefetchCount > 0 || count == 0 ? .prefetch : .background
    }

    @inlinable
    mutating func insert(_ entry: Entry, id: UInt64) {
        switch entries {
        case .empty:
            entries = .one(id, entry)
        case .one(let existingID, let existing):
            entries = .many([existingID: existing, id: entry])
        case .many(var table):
            entries = .empty  // so `table` is uniquely referenced and grows in place
            table[id] = entry
            entries = .many(table)
        }
        count += 1
        switch entry.priority {
        case .visible: visibleCount += 1
        case .prefetch: prefetchCount += 1
        case .background: break
        }
    }

    @inlinable
    mutating func remove(_ id: UInt64) -> Entry? {
        let removed: Entry?
        switch entries {
        case .empty:
            removed = nil
        case .one(let existingID, let existing):
            guard existingID == id else { return nil }
            entries = .empty
            removed = existing
        case .many(var table):
            entries = .empty
            removed = table.removeValue(forKey: id)
            entries = .many(table)
        }
        guard let removed else { return nil }
        count -= 1
        switch removed.priority {
        case .visible: visibleCount -= 1
        case .prefetch: prefetchCount -= 1
        case .background: break
        }
        return removed
    }

    /// Changes one claim's priority; `false` if the claim is not here.
    @inlinable
    mutating func setPriority(_ priority: LoadPriority, id: UInt64) -> Bool {
        guard var entry = remove(id) else { return false }
        entry.priority = priority
        insert(entry, id: id)
        return true
    }

    /// Removes and returns every waiter, in the order they arrived (claim ids increase).
    ///
    /// Arrival order is fair, and it matters for speed: callers that are children of one task group
    /// leave the group fastest when they finish in the order they were added (the runtime walks the
    /// group's child list to remove each); hash order made 10,000 waiters several times slower.
    @inlinable
    mutating func removeAll() -> Waiters<Value> {
        defer { self = WaiterList() }
        switch entries {
        case .empty: return Waiters(.empty)
        case .one(_, let entry): return Waiters(.one(entry.waiter))
        case .many(let table): return Waiters(.many(table.sorted { $0.key < $1.key }.map(\.value.waiter)))
        }
    }
}

/// The waiters taken from a run, in order. Most runs have one, which is held inline: an array per
/// delivered run was one of the two allocations per key on the processor's busiest path.
@usableFromInline
struct Waiters<Value: Sendable>: Sequence {
    /// How many waiters there are, and where they are kept. (Not `Storage`, which is the library's
    /// protocol for results, and not `.none`, which reads as `Optional.none`.)
    @usableFromInline
    enum Held {
        case empty
        case one(Waiter<Value>)
        case many([Waiter<Value>])
    }

    @usableFromInline let held: Held

    @inlinable init(_ held: Held) { self.held = held }

    @inlinable
    var count: Int {
        switch held {
        case .empty: 0
        case .one: 1
        case .many(let waiters): waiters.count
        }
    }

    @inlinable
    func makeIterator() -> Iterator {
        switch held {
        case .empty: Iterator(single: nil, rest: [])
        case .one(let waiter): Iterator(single: waiter, rest: [])
        case .many(let waiters): Iterator(single: nil, rest: waiters)
        }
    }

    @usableFromInline
    struct Iterator: IteratorProtocol {
        @usableFromInline var single: Waiter<Value>?
        @usableFromInline var rest: IndexingIterator<[Waiter<Value>]>

        @inlinable
        init(single: Waiter<Value>?, rest: [Waiter<Value>]) {
            (self.single, self.rest) = (single, rest.makeIterator())
        }

        @inlinable
        mutating func next() -> Waiter<Value>? {
            if let waiter = single {
                single = nil
                return waiter
            }
            return rest.next()
        }
    }
}
