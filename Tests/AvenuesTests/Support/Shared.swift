@testable import Avenues

/// Lock-guarded state that closures and tasks can share (a `Locked` is non-copyable).
final class Shared<State: Sendable>: Sendable {
    private let state: Locked<State>

    init(_ initial: State) { state = Locked(initial) }

    func withLock<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        state.withLock { body(&$0) }
    }

    var value: State { state.withLock { $0 } }
}
