/// The changes of an ``Avenue``'s rows, as an async sequence; see ``Avenue/changes``.
///
/// An event is skipped if, by the time it is read, its row was released or moved to another load,
/// so a front end never hears about a row it already let go.
public struct AvenueChanges<Index: Sendable>: AsyncSequence, Sendable {
    /// A change of one row.
    public typealias Element = AvenueEvent<Index>
    /// The sequence never throws.
    public typealias Failure = Never

    @usableFromInline
    struct Tagged: Sendable {
        @usableFromInline let event: AvenueEvent<Index>
        @usableFromInline let ticket: UInt64
        @inlinable init(event: AvenueEvent<Index>, ticket: UInt64) { (self.event, self.ticket) = (event, ticket) }
    }

    private let stream: AsyncStream<Tagged>
    private let isCurrent: @Sendable (Index, UInt64) -> Bool

    init(stream: AsyncStream<Tagged>, isCurrent: @escaping @Sendable (Index, UInt64) -> Bool) {
        self.stream = stream
        self.isCurrent = isCurrent
    }

    /// Makes the iterator.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), isCurrent: isCurrent)
    }

    /// Reads the changes one by one.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var base: AsyncStream<Tagged>.AsyncIterator
        private let isCurrent: @Sendable (Index, UInt64) -> Bool

        fileprivate init(base: AsyncStream<Tagged>.AsyncIterator, isCurrent: @escaping @Sendable (Index, UInt64) -> Bool) {
            self.base = base
            self.isCurrent = isCurrent
        }

        /// The next current change, or `nil` when the avenue is gone or the task is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async -> AvenueEvent<Index>? {
            while let tagged = await base.next(isolation: actor) {
                if isCurrent(tagged.event.index, tagged.ticket) { return tagged.event }
            }
            return nil
        }

        /// The next current change, or `nil` when the avenue is gone or the task is cancelled.
        public mutating func next() async -> AvenueEvent<Index>? {
            await next(isolation: nil)
        }
    }
}
