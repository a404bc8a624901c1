// Inlinable because `Avenue` hands every change to it from its inlined delivery path (benchmark "100,000 distinct keys: Avenue rows").
/// One subscriber's buffer of row changes (see ``Avenue/subscribe()``): the newest event per row, in the
/// order rows first changed, so a reader that falls behind — or never reads — holds at most one
/// event per row. When the buffer grows, events of rows that were released or moved to another load
/// since (which the reader would skip anyway) are dropped, so it holds at most one event per row the
/// avenue still has, whatever the number of loads.
@usableFromInline
final class ChangeSubscription<Index: Hashable & Sendable>: Sendable {
    @usableFromInline typealias Tagged = AvenueChanges<Index>.Tagged

    @usableFromInline
    struct State {
        @usableFromInline var order = RingBuffer<Index>()
        @usableFromInline var latest: [Index: Tagged] = [:]
        @usableFromInline var waiter: UnsafeContinuation<Tagged?, Never>?
        @usableFromInline var finished = false
        /// Buffered rows above which stale events are dropped; doubles with what survives.
        @usableFromInline var purgeAt = 1_024
        @inlinable init() {}
    }

    @usableFromInline let state = Locked(State())
    /// Whether a row still has the ticket an event was made for (the avenue's row table).
    @usableFromInline let isCurrent: @Sendable (Index, UInt64) -> Bool

    @inlinable
    init(isCurrent: @escaping @Sendable (Index, UInt64) -> Bool) {
        self.isCurrent = isCurrent
    }

    /// Buffers `tagged` (replacing an older event of its row) or hands it to a waiting reader.
    @inlinable
    func yield(_ tagged: Tagged) {
        let (reader, purge) = state.withLock { state -> (UnsafeContinuation<Tagged?, Never>?, Bool) in
            guard !state.finished else { return (nil, false) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, false)
            }
            let index = tagged.event.index
            if state.latest.updateValue(tagged, forKey: index) == nil { state.order.append(index) }
            return (nil, state.latest.count >= state.purgeAt)
        }
        reader?.resume(returning: tagged)
        if purge { dropStaleEvents() }
    }

    /// The next buffered event, waiting for one; `nil` when finished or the task is cancelled.
    @inlinable
    func next() async -> Tagged? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Tagged?, Never>) in
                let ready = state.withLock { state -> Tagged?? in
                    while let index = state.order.popFirst() {
                        if let tagged = state.latest.removeValue(forKey: index) { return .some(tagged) }
                    }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> UnsafeContinuation<Tagged?, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Ends the subscription: a waiting reader gets `nil`, buffered events are dropped.
    @inlinable
    func finish() {
        let waiter = state.withLock { state -> UnsafeContinuation<Tagged?, Never>? in
            state.finished = true
            state.latest = [:]
            state.order = RingBuffer()
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The number of events buffered (for tests).
    @inlinable
    var bufferedCount: Int { state.withLock { $0.latest.count } }

    /// Drops buffered events whose row no longer has their ticket. The avenue's table is asked
    /// outside this buffer's lock.
    @usableFromInline
    func dropStaleEvents() {
        let candidates = state.withLock { state in state.latest.map { ($0.key, $0.value.ticket) } }
        let stale = candidates.filter { !isCurrent($0.0, $0.1) }
        state.withLock { state in
            for (index, ticket) in stale where state.latest[index]?.ticket == ticket {
                state.latest[index] = nil
            }
            var order = RingBuffer<Index>(minimumCapacity: state.latest.count)
            var seen = Set<Index>()
            while let index = state.order.popFirst() {
                if state.latest[index] != nil, seen.insert(index).inserted { order.append(index) }
            }
            state.order = order
            state.purgeAt = Swift.max(1_024, state.latest.count * 2)
        }
    }
}
