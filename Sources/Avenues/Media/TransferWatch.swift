import Foundation

/// One timer for the time limits of every transfer in the process, instead of a task and a timer
/// per transfer.
///
/// A timer per transfer cost each download a task, a `dispatch_after` (which wakes libdispatch's
/// manager thread to arm it) and a cancel: about one context switch per small file. Here one
/// sleeping check wakes at the earliest moment any watched transfer could pass a limit; each
/// transfer then says whether it failed or when to look again (its deadline moves with every
/// byte). Invariant: while a transfer is watched, a check of the current generation is scheduled
/// no later than its deadline.
final class TransferWatch: Sendable {
    static let shared = TransferWatch()

    private struct State {
        var transfers: [ObjectIdentifier: Transfer] = [:]
        /// When the current check wakes; `nil` while none is scheduled.
        var wake: ContinuousClock.Instant?
        /// Counts scheduled checks: a check that a sooner one replaced finds a newer generation
        /// when it wakes, and does nothing.
        var generation: UInt64 = 0
    }

    private let state = Locked(State())
    private let clock = ContinuousClock()

    /// Watches `transfer` until ``unwatch(_:)`` or until it is decided.
    func watch(_ transfer: Transfer) {
        guard let deadline = transfer.checkLimits(now: clock.now) else { return }
        state.withLock { $0.transfers[ObjectIdentifier(transfer)] = transfer }
        schedule(deadline)
    }

    func unwatch(_ transfer: Transfer) {
        state.withLock { _ = $0.transfers.removeValue(forKey: ObjectIdentifier(transfer)) }
    }

    /// Transfers watched now (for tests).
    var count: Int { state.withLock { $0.transfers.count } }

    private func schedule(_ deadline: ContinuousClock.Instant) {
        let generation = state.withLock { state -> UInt64? in
            if let wake = state.wake, wake <= deadline { return nil }
            state.wake = deadline
            state.generation &+= 1
            return state.generation
        }
        guard let generation else { return }
        // Detached: the check belongs to no download (nor to its priority or task-locals).
        Task.detached { [self, clock] in
            try? await Saturating.sleep(until: deadline, on: clock)
            check(generation)
        }
    }

    private func check(_ generation: UInt64) {
        let transfers = state.withLock { state -> [Transfer]? in
            guard state.generation == generation else { return nil }
            state.wake = nil
            return Array(state.transfers.values)
        }
        guard let transfers else { return }
        let now = clock.now
        var next: ContinuousClock.Instant?
        var decided: [ObjectIdentifier] = []
        for transfer in transfers {  // outside the lock: a failing transfer resumes its run
            if let deadline = transfer.checkLimits(now: now) {
                next = next.map { min($0, deadline) } ?? deadline
            } else {
                decided.append(ObjectIdentifier(transfer))
            }
        }
        if !decided.isEmpty {
            state.withLock { state in
                for id in decided { state.transfers[id] = nil }
            }
        }
        if let next { schedule(next) }
    }
}
