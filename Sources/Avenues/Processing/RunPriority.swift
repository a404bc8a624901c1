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
        /// The priority the observers were last told.
        var told: LoadPriority
        var nextObserver: UInt64 = 0
        var observers: [UInt64: @Sendable (LoadPriority) -> Void] = [:]
        /// Nobody wants the run's value any more: its task is being cancelled.
        var withdrawn = false
    }

    /// Where a change to tell is read: the priority set with ``update(_:)``, or the scheduler that
    /// owns the run (``follow(_:)``).
    enum Source: Sendable {
        case updated
        case read(@Sendable () -> LoadPriority?)
    }

    private let state: Locked<State>
    /// One caller tells the observers at a time, each change read when it is told, so two updates
    /// racing on two threads can never leave the observers on the older one.
    private let telling = SerialDrain<Source>()

    /// A run at `priority`; its owner raises or lowers it with ``update(_:)``.
    public init(_ priority: LoadPriority) {
        state = Locked(State(priority: priority, told: priority))
    }

    /// The run's priority now.
    public var value: LoadPriority { state.withLock { $0.priority } }

    /// Whether the run was withdrawn (its last claim released, or its key cancelled): set before
    /// its task is cancelled, and readable from any thread, so work handed to another thread (a
    /// transfer waiting for a slot) can see it before the task itself does.
    var isWithdrawn: Bool { state.withLock { $0.withdrawn } }

    /// Marks the run withdrawn (its scheduler, before it cancels the run's task).
    @usableFromInline
    func withdraw() {
        state.withLock { $0.withdrawn = true }
    }

    /// Changes the run's priority and, if it changed, calls the observers (outside the lock, in no
    /// particular order). Updates made on several threads at once are told one at a time, and the
    /// observers are always told the priority last set: an update that finds another being told
    /// returns at once, and the caller telling tells its priority next.
    public func update(_ priority: LoadPriority) {
        let changed = state.withLock { state -> Bool in
            guard state.priority != priority else { return false }
            state.priority = priority
            return true
        }
        if changed { tell(.updated) }
    }

    /// Follows the priority `read` gives — the priority of the run in its scheduler, read there when
    /// the change is told (`nil`: the run is over, nothing changes) — so a change computed before
    /// another one but told after it cannot undo it.
    @usableFromInline
    func follow(_ read: @escaping @Sendable () -> LoadPriority?) {
        tell(.read(read))
    }

    private func tell(_ source: Source) {
        telling.submit({ $0 = source }) { source in
            // Read outside this lock: `read` takes its scheduler's.
            var read: LoadPriority?
            if case .read(let current) = source { read = current() }
            let change = state.withLock { state -> (LoadPriority, [@Sendable (LoadPriority) -> Void])? in
                if let read { state.priority = read }
                guard state.priority != state.told else { return nil }
                state.told = state.priority
                return (state.priority, Array(state.observers.values))
            }
            guard let (priority, observers) = change else { return }
            for observer in observers { observer(priority) }
        }
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
