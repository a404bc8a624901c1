/// Work that one caller at a time carries out, without any caller waiting for another: a caller
/// adds to what is pending and, if nobody is draining, drains until nothing is left; a caller that
/// finds someone draining leaves its addition to them and returns at once.
///
/// What is pending merges as its owner says: the latest request wins (a window to show), additions
/// pile up (changes to tell), or a flag says "look again". Because the drainer takes each batch
/// under the lock and works outside it, the work may call back in (a callback re-entering its
/// avenue adds to the pending batch and returns; the outer drain picks it up), and a newer request
/// is always carried out after an older one.
///
/// Inlinable where the hot paths use it (``Avenue``'s deliveries, ``RowPrefetcher``'s windows), so
/// the drain closures they pass specialize with them.
@usableFromInline
final class SerialDrain<Pending: Sendable>: Sendable {
    @usableFromInline
    struct State {
        @usableFromInline var pending: Pending?
        @usableFromInline var draining = false
        @inlinable init() {}
    }

    @usableFromInline let state = Locked(State())

    @inlinable init() {}

    /// Whether a caller is draining now, or work is pending (for tests that wait for quiet).
    var isBusy: Bool { state.withLock { $0.draining || $0.pending != nil } }

    /// Whether work waits for the caller draining (for tests).
    var hasPending: Bool { state.withLock { $0.pending != nil } }

    /// Merges an addition into what is pending (`merge` runs under the lock: it must be quick and
    /// must not call out), then drains if nobody else is: `drain` is called, outside the lock, with
    /// each batch taken, until none is left.
    @inlinable
    func submit(_ merge: (inout Pending?) -> Void, drain: (Pending) -> Void) {
        let isFirst = state.withLock { state -> Bool in
            merge(&state.pending)
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        guard isFirst else { return }
        while let batch = state.withLock({ state -> Pending? in
            guard let pending = state.pending else {
                state.draining = false
                return nil
            }
            state.pending = nil
            return pending
        }) {
            drain(batch)
        }
    }
}
