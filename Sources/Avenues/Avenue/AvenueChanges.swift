/// The changes of an ``Avenue``'s rows, as an async sequence; see ``Avenue/subscribe()``.
///
/// An event is skipped if, by the time it is read, its row was released or moved to another load,
/// so a front end never hears about a row it already let go. A reader that falls behind gets the
/// newest event of each row (older events of the same row are replaced), so the buffer holds at most
/// one event per row the avenue still has. One subscription is meant for one reader; readers that
/// iterate it at once split its events (each goes to one of them), and each can be cancelled alone.
public struct AvenueChanges<Index: Hashable & Sendable>: AsyncSequence, Sendable {
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

    let subscription: Subscription

    /// Ends the subscription when the last copy of the sequence and its iterators are gone.
    final class Subscription: Sendable {
        let buffer: ChangeSubscription<Index>
        let onEnd: @Sendable () -> Void

        init(buffer: ChangeSubscription<Index>, onEnd: @escaping @Sendable () -> Void) {
            self.buffer = buffer
            self.onEnd = onEnd
        }

        deinit { onEnd() }
    }

    init(subscription: Subscription) {
        self.subscription = subscription
    }

    /// An iterator over this subscription's events. The events are buffered per subscription, so a
    /// second iterator shares (and splits) them: subscribe once per reader.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(subscription: subscription)
    }

    /// Reads the changes one by one, suspending while none is waiting; ends when the avenue is gone.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: Subscription

        fileprivate init(subscription: Subscription) {
            self.subscription = subscription
        }

        /// The next current change, or `nil` when the avenue is gone or the task is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async -> AvenueEvent<Index>? {
            let buffer = subscription.buffer
            while let tagged = await buffer.next() {
                if buffer.isCurrent(tagged.event.index, tagged.ticket) { return tagged.event }
            }
            return nil
        }

        /// The next current change, or `nil` when the avenue is gone or the task is cancelled.
        public mutating func next() async -> AvenueEvent<Index>? {
            await next(isolation: nil)
        }
    }
}
