// Inlinable because the multiplexers' cache hit is (see `MuxCore`).
/// A key → value table that remembers use order, with O(1) lookup, insert, promote and evict.
///
/// Nodes live densely in one array and are linked by index (no per-entry allocation); removal
/// moves the last node into the hole. `head` is the most recently used entry, `tail` the least.
@usableFromInline
struct LRUTable<Key: Hashable, Value> {
    @usableFromInline
    struct Node {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        @usableFromInline var cost: Int
        @usableFromInline var newer: Int  // towards head; -1 at the head
        @usableFromInline var older: Int  // towards tail; -1 at the tail

        @inlinable
        init(key: Key, value: Value, cost: Int, newer: Int, older: Int) {
            (self.key, self.value, self.cost, self.newer, self.older) = (key, value, cost, newer, older)
        }
    }

    @usableFromInline var slots: [Key: Int] = [:]
    @usableFromInline var nodes: [Node] = []
    @usableFromInline var head = -1
    @usableFromInline var tail = -1
    @usableFromInline var totalCost = 0

    @inlinable init() {}

    @inlinable var count: Int { nodes.count }

    /// The value for `key`, marking it most recently used.
    @inlinable
    mutating func value(for key: Key) -> Value? {
        guard let slot = slots[key] else { return nil }
        promote(slot)
        return nodes[slot].value
    }

    /// The value for `key` without changing the use order.
    @inlinable
    func peek(_ key: Key) -> Value? {
        slots[key].map { nodes[$0].value }
    }

    /// Inserts or replaces the value for `key` as the most recently used entry.
    @inlinable
    mutating func set(_ value: Value, for key: Key, cost: Int) {
        if let slot = slots[key] {
            totalCost += cost - nodes[slot].cost
            nodes[slot].value = value
            nodes[slot].cost = cost
            promote(slot)
            return
        }
        let slot = nodes.count
        nodes.append(Node(key: key, value: value, cost: cost, newer: -1, older: head))
        if head >= 0 { nodes[head].newer = slot }
        head = slot
        if tail < 0 { tail = slot }
        slots[key] = slot
        totalCost += cost
    }

    /// Removes the value for `key`, returning it.
    @inlinable @discardableResult
    mutating func removeValue(for key: Key) -> Value? {
        guard let slot = slots[key] else { return nil }
        return remove(at: slot).value
    }

    /// Removes and returns the least recently used entry.
    @inlinable
    mutating func removeLeastRecentlyUsed() -> (key: Key, value: Value)? {
        guard tail >= 0 else { return nil }
        let node = remove(at: tail)
        return (node.key, node.value)
    }

    @inlinable
    mutating func removeAll() {
        self = LRUTable()
    }

    /// Keys from most to least recently used (for tests and diagnostics; O(n)).
    @inlinable
    var keysByRecency: [Key] {
        var keys: [Key] = []
        keys.reserveCapacity(nodes.count)
        var slot = head
        while slot >= 0 {
            keys.append(nodes[slot].key)
            slot = nodes[slot].older
        }
        return keys
    }

    @inlinable
    mutating func promote(_ slot: Int) {
        guard slot != head else { return }
        unlink(slot)
        nodes[slot].older = head
        nodes[slot].newer = -1
        if head >= 0 { nodes[head].newer = slot }
        head = slot
        if tail < 0 { tail = slot }
    }

    @inlinable
    mutating func unlink(_ slot: Int) {
        let newer = nodes[slot].newer
        let older = nodes[slot].older
        if newer >= 0 { nodes[newer].older = older } else { head = older }
        if older >= 0 { nodes[older].newer = newer } else { tail = newer }
    }

    @inlinable
    mutating func remove(at slot: Int) -> Node {
        unlink(slot)
        let last = nodes.count - 1
        if slot != last {
            nodes.swapAt(slot, last)
            // The node that moved into `slot` must be re-linked under its new index.
            let moved = nodes[slot]
            if moved.newer >= 0 { nodes[moved.newer].older = slot } else { head = slot }
            if moved.older >= 0 { nodes[moved.older].newer = slot } else { tail = slot }
            slots[moved.key] = slot
        }
        let node = nodes.removeLast()
        slots[node.key] = nil
        totalCost -= node.cost
        return node
    }
}
