// Inlinable because `MemoryStorage` is (see there).
/// A key → value table with CLOCK eviction (a second-chance approximation of least recently used).
///
/// A read only sets the entry's reference bit (and only if it is clear), so reads stay as cheap as a
/// dictionary lookup — what a render loop calling `item(at:)` every frame needs. To evict, a hand
/// sweeps the entries: a referenced entry has its bit cleared and is passed over once, the first
/// unreferenced one goes. Entries live densely in one array; removal moves the last into the hole.
@usableFromInline
struct ClockTable<Key: Hashable, Value> {
    @usableFromInline
    struct Entry {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        @usableFromInline var cost: Int
        @usableFromInline var referenced: Bool

        @inlinable
        init(key: Key, value: Value, cost: Int, referenced: Bool) {
            (self.key, self.value, self.cost, self.referenced) = (key, value, cost, referenced)
        }
    }

    @usableFromInline var slots: [Key: Int] = [:]
    @usableFromInline var entries: [Entry] = []
    @usableFromInline var hand = 0
    @usableFromInline var totalCost = 0

    @inlinable init() {}

    @inlinable var count: Int { entries.count }

    /// The value for `key`, marking it used.
    @inlinable
    mutating func value(for key: Key) -> Value? {
        guard let slot = slots[key] else { return nil }
        if !entries[slot].referenced { entries[slot].referenced = true }
        return entries[slot].value
    }

    /// What `body` makes of the value for `key`, read in place (never copied into an optional),
    /// marking it used.
    @inlinable
    mutating func read<Result>(_ key: Key, _ body: (Value) -> Result?) -> Result? {
        guard let slot = slots[key] else { return nil }
        if !entries[slot].referenced { entries[slot].referenced = true }
        return body(entries[slot].value)
    }

    /// The value for `key` without marking it used.
    @inlinable
    func peek(_ key: Key) -> Value? {
        slots[key].map { entries[$0].value }
    }

    /// Inserts or replaces the value for `key`. A replaced entry counts as used; a new one is not
    /// marked until it is read, so a burst of writes nobody reads is evicted first. A new entry goes
    /// just behind the hand, as in CLOCK a page takes the frame the hand freed: the sweep reaches it
    /// last, so it is never the next victim because it is new. (Appended where the hand would meet
    /// it first, each write evicted the one before it, and a value stored for a row about to be read
    /// was gone when the row read it.)
    @inlinable
    mutating func set(_ value: Value, for key: Key, cost: Int) {
        if let slot = slots[key] {
            totalCost = totalCost &+ (cost &- entries[slot].cost)
            entries[slot].value = value
            entries[slot].cost = cost
            entries[slot].referenced = true
            return
        }
        let last = entries.count
        slots[key] = last
        entries.append(Entry(key: key, value: value, cost: cost, referenced: false))
        totalCost = totalCost &+ cost  // wrapping: without a cost limit the total is only reported
        if hand < last {
            entries.swapAt(hand, last)
            slots[entries[hand].key] = hand
            slots[entries[last].key] = last
        }
        hand += 1
    }

    /// Removes the value for `key`, returning it.
    @inlinable @discardableResult
    mutating func removeValue(for key: Key) -> Value? {
        guard let slot = slots[key] else { return nil }
        return remove(at: slot).value
    }

    /// Removes and returns the entry the clock hand picks: the first one not used since the hand
    /// last passed it.
    @inlinable
    mutating func evict() -> (key: Key, value: Value)? {
        guard !entries.isEmpty else { return nil }
        while true {
            if hand >= entries.count { hand = 0 }
            if entries[hand].referenced {
                entries[hand].referenced = false
                hand += 1
            } else {
                let entry = remove(at: hand)
                return (entry.key, entry.value)
            }
        }
    }

    @inlinable
    mutating func removeAll() {
        self = ClockTable()
    }

    /// Every key, in storage order (for tests and diagnostics).
    @inlinable
    var keys: [Key] { entries.map(\.key) }

    @inlinable
    mutating func remove(at slot: Int) -> Entry {
        let last = entries.count - 1
        if slot != last {
            entries.swapAt(slot, last)
            slots[entries[slot].key] = slot
        }
        let entry = entries.removeLast()
        slots[entry.key] = nil
        totalCost = totalCost &- entry.cost
        return entry
    }
}
