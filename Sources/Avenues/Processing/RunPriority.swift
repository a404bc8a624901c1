/// The priority of the run a piece of work belongs to, as it changes: how an ``AutoProcessor``
/// running a chain tells a scheduler *inside* that chain (``AsyncMedia``'s downloads, a
/// ``MultiplexerMap``'s fetches) how urgently the row that asked is wanted.
///
/// An outer processor that propagates priorities runs each job with ``current`` set; a scheduler
/// asked from inside that job claims at ``value`` and follows ``observe(_:)`` — so a prefetch stays a
/// prefetch down to the download slot, and a row raised to visible moves its download forward.
@usableFromInline
final class RunPriority: Sendable {
    @TaskLocal private static var local: RunPriority?

    /// The run the current task works for, if an outer processor set one.
    @usableFromInline static var current: RunPriority? { local }

    /// Runs `body` with ``current`` set to `run`.
    @usableFromInline
    static func running<Result: Sendable>(_ run: RunPriority, _ body: () async throws -> Result) async rethrows -> Result {
        try await $local.withValue(run, operation: body)
    }

    private struct State {
        var priority: LoadPriority
        var nextObserver: UInt64 = 0
        var observers: [UInt64: @Sendable (LoadPriority) -> Void] = [:]
    }

    private let state: Locked<State>

    @usableFromInline
    init(_ priority: LoadPriority) {
        state = Locked(State(priority: priority))
    }

    /// The run's priority now.
    @usableFromInline var value: LoadPriority { state.withLock { $0.priority } }

    /// Changes the run's priority and tells the observers (outside the lock) if it changed.
    @usableFromInline
    func update(_ priority: LoadPriority) {
        let observers = state.withLock { state -> [@Sendable (LoadPriority) -> Void] in
            guard state.priority != priority else { return [] }
            state.priority = priority
            return Array(state.observers.values)
        }
        for observer in observers { observer(priority) }
    }

    /// Calls `observer` with every later change until ``stopObserving(_:)``.
    @usableFromInline
    func observe(_ observer: @escaping @Sendable (LoadPriority) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextObserver &+= 1
            state.observers[state.nextObserver] = observer
            return state.nextObserver
        }
    }

    @usableFromInline
    func stopObserving(_ id: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }
}
