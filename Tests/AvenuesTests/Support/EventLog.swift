import Synchronization

/// A thread-safe append-only log that tests can await on ("until three rows were told"), instead of
/// sleeping and hoping.
final class EventLog<Element: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable ([Element]) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var elements: [Element] = []
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())

    init() {}

    func append(_ element: Element) {
        let ready = state.withLock { state -> [Waiter] in
            state.elements.append(element)
            let elements = state.elements
            let ready = state.waiters.filter { $0.condition(elements) }
            state.waiters.removeAll { $0.condition(elements) }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    var elements: [Element] { state.withLock { $0.elements } }
    var count: Int { state.withLock { $0.elements.count } }

    /// Suspends until `condition` holds for the log.
    func wait(until condition: @escaping @Sendable ([Element]) -> Bool) async {
        await withCheckedContinuation { continuation in
            let satisfied = state.withLock { state -> Bool in
                if condition(state.elements) { return true }
                state.waiters.append(Waiter(condition: condition, continuation: continuation))
                return false
            }
            if satisfied { continuation.resume() }
        }
    }

    /// Suspends until the log holds at least `count` elements.
    func wait(forCount count: Int) async {
        await wait { $0.count >= count }
    }
}

extension EventLog where Element: Equatable {
    /// Suspends until `element` was appended at least `times` times.
    func wait(for element: Element, times: Int = 1) async {
        await wait { log in log.lazy.filter { $0 == element }.count >= times }
    }
}
