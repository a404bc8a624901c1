import Synchronization

/// Time that passes only when told to: work sleeps on it, and ``advance(to:)`` wakes what is due, in
/// deadline order (then in the order the sleeps began).
public final class VirtualClock: Sendable {
    private struct Sleeper {
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Duration.zero
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
    }

    private let state = Mutex(State())

    /// Creates a clock at zero.
    public init() {}

    /// The current virtual time.
    public var now: Duration { state.withLock { $0.now } }

    /// Suspends until the clock reaches `now + duration`; throws `CancellationError` if the task is
    /// cancelled first.
    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    state.sleepers[id] = Sleeper(deadline: state.now + duration, continuation: continuation)
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves to `time`, waking every sleep due by then.
    public func advance(to time: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = max(state.now, time)
            let due = state.sleepers.filter { $0.value.deadline <= state.now }.sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
            for (id, _) in due { state.sleepers[id] = nil }
            return due.map(\.value)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// The earliest deadline of a sleep, if any.
    public var nextDeadline: Duration? {
        state.withLock { $0.sleepers.values.map(\.deadline).min() }
    }
}
