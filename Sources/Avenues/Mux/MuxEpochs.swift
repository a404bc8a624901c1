import Synchronization

// Inlinable: `number(for:)` is on every multiplexer hit (see `MuxCache.freshValue(for:)`).
/// When a multiplexer's keys were last refreshed or cleared, as epochs: one for each key refreshed or
/// cleared alone, and one for every key. A copy fetched in an older epoch than its key's is stale, and
/// a fetch that began in one never stores its value.
///
/// Epochs are numbered in order, and each records the instant it began, which is how a disk copy
/// (which carries no number: it may come from another run) is judged. The per-key table is bounded:
/// when it is full, entries that began longer than the time-to-live ago are dropped (every copy
/// fetched before them has expired anyway); if that is not enough, every key moves to one new epoch —
/// more fetches, never a stale copy served as fresh.
@usableFromInline
final class MuxEpochs<Key: Hashable & Sendable>: Sendable {
    @usableFromInline
    struct Epoch: Sendable {
        /// Later epochs have larger numbers.
        @usableFromInline let number: UInt64
        /// When it began (``MuxFreshness/now()``); `nil` for the first one (nothing was refreshed or
        /// cleared yet).
        @usableFromInline let began: Duration?
        @inlinable init(number: UInt64, began: Duration?) { (self.number, self.began) = (number, began) }
    }

    @usableFromInline
    struct State {
        @usableFromInline var latest: UInt64 = 0
        @usableFromInline var everyKey = Epoch(number: 0, began: nil)
        /// Keys refreshed or cleared alone since `everyKey` began; each number is larger than its.
        @usableFromInline var keys: [Key: Epoch] = [:]
        @inlinable init() {}
    }

    @usableFromInline let state = Locked(State())
    /// `everyKey.number` and `keys.count`, stored under the lock: while no key has an epoch of its own
    /// (nearly always), a hit reads these two instead of taking the lock.
    @usableFromInline let everyKeyNumber = Atomic<UInt64>(0)
    @usableFromInline let keyCount = Atomic<Int>(0)
    /// The most keys with an epoch of their own.
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// The number of `key`'s epoch now: a request made now belongs to it.
    @inlinable
    func number(for key: Key) -> UInt64 {
        if keyCount.load(ordering: .acquiring) == 0 { return everyKeyNumber.load(ordering: .acquiring) }
        return state.withLock { Self.epoch(of: key, in: $0).number }
    }

    /// `key`'s epoch now, with when it began.
    func epoch(for key: Key) -> Epoch {
        state.withLock { Self.epoch(of: key, in: $0) }
    }

    @inlinable
    static func epoch(of key: Key, in state: State) -> Epoch {
        state.keys[key] ?? state.everyKey
    }

    /// Moves `key` (or, for `nil`, every key) to a new epoch beginning `now`. Returns its number:
    /// every request made from now on belongs to that epoch or a later one.
    @discardableResult
    func advance(_ key: Key?, now: Duration, timeToLive: Duration) -> UInt64 {
        state.withLock { state in
            state.latest &+= 1
            let epoch = Epoch(number: state.latest, began: now)
            if let key {
                if state.keys.count >= limit, state.keys[key] == nil {
                    state.keys = state.keys.filter { _, epoch in epoch.began.map { now - $0 < timeToLive } ?? true }
                }
                if state.keys.count < limit || state.keys[key] != nil {
                    state.keys[key] = epoch
                } else {
                    state.everyKey = epoch
                    state.keys = [:]
                }
            } else {
                state.everyKey = epoch
                state.keys = [:]
            }
            everyKeyNumber.store(state.everyKey.number, ordering: .releasing)
            keyCount.store(state.keys.count, ordering: .releasing)
            return epoch.number
        }
    }
}
