@testable import Avenues
import Testing
/// A thread-safe append-only log that tests can await on ("until three rows were told"), instead of
/// sleeping and hoping.
final class EventLog<Element: Sendable>: Sendable {
    private struct Waiter {
        let id: Int
        let condition: @Sendable ([Element]) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var elements: [Element] = []
        var waiters: [Waiter] = []
        var nextID = 0
    }

    private let state = Locked(State())

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

    /// Suspends until `condition` holds for the log, or the test's time limit cancels the wait (then
    /// the test fails instead of hanging).
    func wait(
        until condition: @escaping @Sendable ([Element]) -> Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let satisfied = state.withLock { state -> Bool in
                    if condition(state.elements) || Task.isCancelled { return true }
                    state.waiters.append(Waiter(id: id, condition: condition, continuation: continuation))
                    return false
                }
                if satisfied { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume()
        }
        if !condition(elements) {
            Issue.record("Gave up waiting (cancelled) with log \(elements)", sourceLocation: sourceLocation)
        }
    }

    /// Suspends until the log holds at least `count` elements.
    func wait(forCount count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        await wait(until: { $0.count >= count }, sourceLocation: sourceLocation)
    }
}

extension EventLog where Element: Equatable {
    /// Suspends until `element` was appended at least `times` times.
    func wait(for element: Element, times: Int = 1, sourceLocation: SourceLocation = #_sourceLocation) async {
        await wait(until: { log in log.lazy.filter { $0 == element }.count >= times }, sourceLocation: sourceLocation)
    }
}
