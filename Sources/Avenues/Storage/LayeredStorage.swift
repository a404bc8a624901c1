// Inlinable: a multiplexer's miss reads and writes its copies through it, specialized in the client
// (see `MuxCache`).
/// A fast storage in front of a slower one; see ``Storage/layered(over:)``.
public struct LayeredStorage<Front: Storage, Back: Storage>: Storage
where Front.Key == Back.Key, Front.Value == Back.Value {
    /// The storage read first and written with every value.
    public let front: Front
    /// The storage read on a miss in front.
    public let back: Back
    /// Whether writes stay in front until their owner copies them back (write-back: a multiplexer's
    /// memory over its disk copies, written by `save()`), instead of going to both (write-through).
    @usableFromInline let writesBack: Bool

    /// Creates `front` layered over `back`.
    @inlinable
    public init(front: Front, back: Back) {
        self.init(front: front, back: back, writesBack: false)
    }

    @inlinable
    init(front: Front, back: Back, writesBack: Bool) {
        self.front = front
        self.back = back
        self.writesBack = writesBack
    }

    /// The front's value; on a miss, the back's value, which is then copied into the front.
    @inlinable
    public func value(for key: Front.Key) -> Front.Value? {
        if let value = front.value(for: key) { return value }
        guard let value = back.value(for: key) else { return nil }
        front.set(value, for: key)
        return value
    }

    /// The front's fresh value; else the back's, copied forward if fresh; else a stale value of either
    /// (the front's first).
    @inlinable
    public func lookup(_ key: Front.Key) -> StoredValue<Front.Value>? {
        let front = front.lookup(key)
        if let front, !front.isStale { return front }
        guard let back = back.lookup(key) else { return front }
        if !back.isStale {
            self.front.set(back.value, for: key)
            return back
        }
        return front ?? back
    }

    /// Stores `value` in both layers (in front only, when the layering writes back).
    @inlinable
    public func set(_ value: Front.Value, for key: Front.Key) {
        front.set(value, for: key)
        if !writesBack { back.set(value, for: key) }
    }

    /// Removes the value from both layers.
    @inlinable
    public func removeValue(for key: Front.Key) {
        front.removeValue(for: key)
        back.removeValue(for: key)
    }

    /// Removes every value from both layers.
    @inlinable
    public func removeAll() {
        front.removeAll()
        back.removeAll()
    }
}

extension Storage {
    /// This storage in front of `back`: reads try this storage first and, on a miss, read `back`
    /// and copy the value forward; writes and removals go to both.
    ///
    /// Layering is associative, and ``EmptyStorage`` is its identity, so a stack such as memory
    /// over disk can be built in any grouping.
    ///
    /// ```swift
    /// let cache = MemoryStorage<String, Data>(countLimit: 200).layered(over: disk)
    /// ```
    public func layered<Back: Storage>(over back: Back) -> LayeredStorage<Self, Back>
    where Back.Key == Key, Back.Value == Value {
        LayeredStorage(front: self, back: back)
    }
}
