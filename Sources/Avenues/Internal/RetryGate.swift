/// Keys a server asked to leave alone for a while (HTTP 429 or 503 with `Retry-After`, or any
/// ``RetryAfterError``): until then, asking for the key again answers with the same error without
/// going to the server. Bounded: expired entries are dropped as new ones arrive.
@usableFromInline
final class RetryGate<Key: Hashable & Sendable>: Sendable {
    private struct Closed {
        let until: ContinuousClock.Instant
        let error: any Error
    }

    private let closed = Locked([Key: Closed]())
    private let now: @Sendable () -> ContinuousClock.Instant

    init(now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.now = now
    }

    /// The error to answer with while `key` waits, if it does.
    @usableFromInline
    func blocked(_ key: Key) -> (any Error)? {
        let now = now()
        return closed.withLock { closed in
            guard let entry = closed[key] else { return nil }
            guard now < entry.until else {
                closed[key] = nil
                return nil
            }
            return entry.error
        }
    }

    /// Notes a failure of `key`: if it asks for a wait, the key waits.
    @usableFromInline
    func note(_ error: any Error, for key: Key) {
        guard let delay = error.retryDelay, delay > .zero else { return }
        let now = now()
        closed.withLock { closed in
            if closed.count >= 1_024 { closed = closed.filter { now < $0.value.until } }
            closed[key] = Closed(until: now.advanced(by: delay), error: error)
        }
    }

    /// `key` loaded: it waits no more.
    @usableFromInline
    func open(_ key: Key) {
        _ = closed.withLock { $0.removeValue(forKey: key) }
    }
}
