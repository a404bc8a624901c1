// Inlinable because `Avenue` reads it on its inlined delivery path.
/// The listeners of a component's changes, in the order they were added, each with the id that
/// removes it: what an ``Avenue`` or a ``PagedRows`` tells of every change.
@usableFromInline
struct ListenerList<Listener> {
    @usableFromInline var entries: [(id: UInt64, listener: Listener)] = []
    @usableFromInline var lastID: UInt64 = 0

    @inlinable init() {}

    /// Adds `listener` after the others; returns its id.
    @inlinable
    mutating func add(_ listener: Listener) -> UInt64 {
        lastID &+= 1
        entries.append((lastID, listener))
        return lastID
    }

    /// Removes the listener `id`, returning it (`nil` if it was removed already). Ids only grow, so
    /// the entries are sorted by id and found by bisection (100,000 observers cancelled one by one
    /// were a quadratic search).
    @inlinable @discardableResult
    mutating func remove(_ id: UInt64) -> Listener? {
        var low = 0, high = entries.count
        while low < high {
            let middle = low + (high - low) / 2
            if entries[middle].id < id { low = middle + 1 } else { high = middle }
        }
        guard low < entries.count, entries[low].id == id else { return nil }
        return entries.remove(at: low).listener
    }
}
