import Synchronization

// Inlinable: `blocked` and `open` are on every multiplexer miss (see `MuxCore`).
/// Keys a server asked to leave alone for a while (HTTP 429 or 503 with `Retry-After`, or any
/// ``RetryAfterError``): until then, asking for the key again answers with the same error without
/// going to the server. Bounded: expired entries are dropped as new ones arrive.
@usableFromInline
final class RetryGate<Key: Hashable & Sendable>: Sendable {
    @usableFromInline
    struct Closed {
        @usableFromInline let until: ContinuousClock.Instant
        @usableFromInline let error: any Error
    }

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
            if closed.count >= 1_024 { closed = closed.filter { now < $0.value.until } }
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
