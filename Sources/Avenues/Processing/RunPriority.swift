/// The priority of one run of work, as it changes: what one scheduler tells the next one down a
/// chain.
///
/// An ``AutoProcessor`` whose work is a ``SchedulingProcessor`` — an ``Avenue`` over ``AsyncMedia``
/// or a ``MultiplexerMap``, or their transforms — hands each job's `RunPriority` to
/// ``SchedulingProcessor/process(_:priority:)``. The inner scheduler claims at ``value`` and follows
/// ``observe(_:)`` until its value is made, so a prefetch stays a prefetch down to the download slot,
/// and a row scrolled into view moves its download forward. A scheduling processor of your own does
/// the same:
///
/// ```swift
/// func process(_ key: Key, priority: RunPriority) async throws -> Value {
///     let ticket = queue.enqueue(key, at: priority.value)
///     let observation = priority.observe { queue.move(ticket, to: $0) }
///     defer { priority.stopObserving(observation) }
///     return try await ticket.value
/// }
/// ```
public final class RunPriority: Sendable {
    /// What ``observe(_:)`` returns, to stop observing with ``stopObserving(_:)``.
    public struct Observation: Hashable, Sendable {
        let id: UInt64
    }

    private struct State {
        var priority: LoadPriority
        var nextObserver: UInt64 = 0
        var observers: [UInt64: @Sendable (LoadPriority) -> Void] = [:]
    }

    private let state: Locked<State>

    /// A run at `priority`; its owner raises or lowers it with ``update(_:)``.
    public init(_ priority: LoadPriority) {
        state = Locked(State(priority: priority))
    }

    /// The run's priority now.
    public var value: LoadPriority { state.withLock { $0.priority } }

    /// Changes the run's priority and, if it changed, calls the observers (outside the lock, in no
    /// particular order).
    public func update(_ priority: LoadPriority) {
        let observers = state.withLock { state -> [@Sendable (LoadPriority) -> Void] in
            guard state.priority != priority else { return [] }
            state.priority = priority
            return Array(state.observers.values)
        }
        for observer in observers { observer(priority) }
    }

    /// Calls `observer` with every later change of the priority, until ``stopObserving(_:)``. Read
    /// ``value`` after observing: a change made in between is not reported.
    public func observe(_ observer: @escaping @Sendable (LoadPriority) -> Void) -> Observation {
        state.withLock { state in
            state.nextObserver &+= 1
            state.observers[state.nextObserver] = observer
            return Observation(id: state.nextObserver)
        }
    }

    /// Stops calling the observer that `observation` names; a call under way may still finish.
    public func stopObserving(_ observation: Observation) {
        _ = state.withLock { $0.observers.removeValue(forKey: observation.id) }
    }
}
