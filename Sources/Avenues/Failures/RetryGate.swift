import Synchronization

// Inlinable: `blocked` and `open` are on every multiplexer miss (see `MuxCore`).
/// Keys a server asked to leave alone for a while (HTTP 429 or 503 with `Retry-After`, or any
/// ``RetryAfterError``): until then, asking for the key again answers with the same error without
/// going to the server. Bounded: expired entries are dropped as new ones arrive, and at most
/// ``limit`` keys wait — past it, those that wait longest are kept (a server asking every key of a
/// long list to wait made the table grow, and each new key filter all of it).
@usableFromInline
final class RetryGate<Key: Hashable & Sendable>: Sendable {
    @usableFromInline
    struct Closed {
        @usableFromInline let until: ContinuousClock.Instant
        @usableFromInline let error: any Error
    }

    /// The most keys kept waiting. One dropped early is asked again, and told to wait again.
    @usableFromInline static var limit: Int { 1_024 }

    @usableFromInline let closed = Locked([Key: Closed]())
    /// How many keys `closed` holds, written under its lock: while it is zero — nearly always —
    /// a miss passes the gate without taking the lock.
    @usableFromInline let closedCount = Atomic<Int>(0)
    @usableFromInline let now: @Sendable () -> ContinuousClock.Instant

    init(now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.now = now
    }

    /// The error to answer with while `key` waits, if it does.
    @inlinable
    func blocked(_ key: Key) -> (any Error)? {
        // The lock and the clock only when some key waits: every miss asks.
        guard closedCount.load(ordering: .acquiring) > 0, let entry = closed.withLock({ $0[key] }) else { return nil }
        if now() < entry.until { return entry.error }
        closed.withLock { closed in
            if closed[key]?.until == entry.until { closed[key] = nil }
            closedCount.store(closed.count, ordering: .releasing)
        }
        return nil
    }

    /// Notes a failure of `key`: if it asks for a wait, the key waits.
    @usableFromInline
    func note(_ error: any Error, for key: Key) {
        guard let delay = error.retryDelay, delay > .zero else { return }
        let now = now()
        closed.withLock { closed in
            if closed[key] == nil, closed.count >= Self.limit {
                closed = closed.filter { now < $0.value.until }
                if closed.count > Self.limit / 2 {
                    // Still full of waits: the half that waits longest stays, so the next trim is
                    // `limit / 2` notes away (a sort per 512 notes, not a filter per note).
                    let kept = closed.sorted { $0.value.until > $1.value.until }.prefix(Self.limit / 2)
                    closed = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
                }
            }
            closed[key] = Closed(until: now.advanced(by: delay), error: error)
            closedCount.store(closed.count, ordering: .releasing)
        }
    }

    /// `key` loaded: it waits no more.
    @inlinable
    func open(_ key: Key) {
        guard closedCount.load(ordering: .acquiring) > 0 else { return }
        closed.withLock { closed in
            closed[key] = nil
            closedCount.store(closed.count, ordering: .releasing)
        }
    }
}
