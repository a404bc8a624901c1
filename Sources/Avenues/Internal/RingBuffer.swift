// Inlinable because `AutoProcessor`'s queues and `Avenue`'s change buffers are (see there).
/// A growable FIFO queue with O(1) amortized `append` and `popFirst`.
///
/// The library has no package dependencies, so this stands in for `Deque` from swift-collections.
@usableFromInline
struct RingBuffer<Element> {
    @usableFromInline var storage: ContiguousArray<Element?>
    @usableFromInline var head = 0
    @usableFromInline private(set) var count = 0

    @inlinable
    init(minimumCapacity: Int = 8) {
        storage = ContiguousArray(repeating: nil, count: Swift.max(1, minimumCapacity))
    }

    @inlinable var isEmpty: Bool { count == 0 }

    @inlinable
    mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = element
        count += 1
    }

    @inlinable
    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        return element
    }

    /// Removes the elements for which `isRemoved` is true, keeping the others in order.
    @inlinable
    mutating func removeAll(where isRemoved: (Element) -> Bool) {
        var kept = RingBuffer(minimumCapacity: Swift.max(8, count))
        while let element = popFirst() {
            if !isRemoved(element) { kept.append(element) }
        }
        self = kept
    }

    @inlinable
    mutating func removeAll() {
        self = RingBuffer()
    }

    @inlinable
    mutating func grow() {
        var bigger = ContiguousArray<Element?>(repeating: nil, count: storage.count * 2)
        for offset in 0..<count {
            bigger[offset] = storage[(head + offset) % storage.count]
        }
        storage = bigger
        head = 0
    }
}
