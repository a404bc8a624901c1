/// A growable FIFO queue with O(1) amortized `append` and `popFirst`.
///
/// The library has no package dependencies, so this stands in for `Deque` from swift-collections.
struct RingBuffer<Element> {
    private var storage: ContiguousArray<Element?>
    private var head = 0
    private(set) var count = 0

    init(minimumCapacity: Int = 8) {
        storage = ContiguousArray(repeating: nil, count: Swift.max(1, minimumCapacity))
    }

    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = element
        count += 1
    }

    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        return element
    }

    /// Removes the elements for which `isRemoved` is true, keeping the others in order.
    mutating func removeAll(where isRemoved: (Element) -> Bool) {
        var kept = RingBuffer(minimumCapacity: Swift.max(8, count))
        while let element = popFirst() {
            if !isRemoved(element) { kept.append(element) }
        }
        self = kept
    }

    mutating func removeAll() {
        self = RingBuffer()
    }

    private mutating func grow() {
        var bigger = ContiguousArray<Element?>(repeating: nil, count: storage.count * 2)
        for offset in 0..<count {
            bigger[offset] = storage[(head + offset) % storage.count]
        }
        storage = bigger
        head = 0
    }
}

extension RingBuffer: Sequence {
    struct Iterator: IteratorProtocol {
        fileprivate let buffer: RingBuffer
        fileprivate var offset = 0
        mutating func next() -> Element? {
            guard offset < buffer.count else { return nil }
            defer { offset += 1 }
            return buffer.storage[(buffer.head + offset) % buffer.storage.count]
        }
    }

    func makeIterator() -> Iterator { Iterator(buffer: self) }
}
