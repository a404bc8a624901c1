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
        /// Readers waiting for an event, first come first served: each event goes to one of them.
        /// Several readers of one subscription split its events; none waits for ever.
        @usableFromInline var waiters: [(id: UInt64, continuation: UnsafeContinuation<Tagged?, Never>)] = []
        @usableFromInline var nextWaiter: UInt64 = 0
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
            if !state.waiters.isEmpty { return (state.waiters.removeFirst().continuation, false) }
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
        // Named before it waits, so that a cancel resumes this reader and no other.
        let id = state.withLock { state in
            defer { state.nextWaiter &+= 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Tagged?, Never>) in
                let ready = state.withLock { state -> Tagged?? in
                    while let index = state.order.popFirst() {
                        if let tagged = state.latest.removeValue(forKey: index) { return .some(tagged) }
                    }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiters.append((id, continuation))
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> UnsafeContinuation<Tagged?, Never>? in
                guard let position = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: position).continuation
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Ends the subscription: every waiting reader gets `nil`, buffered events are dropped.
    @inlinable
    func finish() {
        let waiters = state.withLock { state in
            state.finished = true
            state.latest = [:]
            state.order = RingBuffer()
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
    }

    /// The number of events buffered (for tests).
    @inlinable
    var bufferedCount: Int { state.withLock { $0.latest.count } }

    /// The number of readers waiting for an event (for tests).
    var waitingReaders: Int { state.withLock { $0.waiters.count } }

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
