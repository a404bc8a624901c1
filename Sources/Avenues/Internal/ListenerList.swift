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

    /// Removes the listener `id`, returning it (`nil` if it was removed already).
    @inlinable @discardableResult
    mutating func remove(_ id: UInt64) -> Listener? {
        guard let position = entries.firstIndex(where: { $0.id == id }) else { return nil }
        return entries.remove(at: position).listener
    }
}
