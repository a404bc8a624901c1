/// Which of one ``AsyncMedia``'s prepared transfers move bytes: at most `limit` at once. The others
/// wait here with their file open and their request made, so the moment a transfer ends, the
/// transport's own thread starts the next one: no hop through a worker task, no wakeup of the
/// transport between two requests on a kept-alive connection.
///
/// The next to move is the waiting transfer of highest priority (the earliest among equals), unless
/// the scheduler has queued work of a higher priority still: then the freed slot is kept for that
/// work, which the worker of the transfer that ended picks up next. A slot is kept only until the
/// next transfer enters or a worker retires for want of work, so prepared transfers never wait
/// behind a slot nobody will take.
final class TransferGate: Sendable {
    /// The most transfers moving at once.
    let limit: Int

    private struct Waiting {
        let id: UInt64
        let priority: RunPriority?
        let start: @Sendable () -> Void
    }

    private struct State {
        var moving = 0
        /// In the order they entered; a handful at most (one per prepared transfer).
        var waiting: [Waiting] = []
        var nextID: UInt64 = 0
        /// The highest priority of the work the scheduler has queued (not yet prepared).
        var queuedPriority: (@Sendable () -> LoadPriority?)?
        /// How many times a transfer that moved gave its slot back: which slots a fill may give
        /// away is said by this count (``FillRequest``).
        var freed: UInt64 = 0
        /// How many ``holding(_:)`` calls are under way: no slot is handed on meanwhile.
        var holds = 0
        /// The highest priority queued when a transfer gave its slot back, since the last enter or
        /// retirement: read before the leave returned, when its run could not yet have taken that
        /// work from the queue. Once the run has, the queue no longer shows it, and a fill under way
        /// on another thread would give the slot to a lower transfer waiting here. The work the
        /// run took enters next (or the run retires), which ends the keeping.
        var keptFor: LoadPriority?
    }

    /// What the requests to fill made meanwhile ask: the slots freed up to `givingAwayFreedUpTo` (a
    /// count of `State.freed`) go to waiting transfers even when queued work outranks them; a slot
    /// freed later (`nil`: any slot) is kept for that work. An entering transfer or a retiring
    /// worker gives away the slots free when it asked; a leaving transfer keeps its own, and a
    /// fill under way when a transfer leaves must not give that slot away for it.
    private struct FillRequest: Sendable {
        var givingAwayFreedUpTo: UInt64?
    }

    private let state = Locked(State())
    /// One caller fills at a time: a start that ends its transfer at once (a transport that fails
    /// synchronously) frees a slot from inside the fill, which the fill then hands on (or keeps,
    /// as that leave asks), instead of recursing once per waiting transfer.
    private let filling = SerialDrain<FillRequest>()

    init(limit: Int) {
        precondition(limit >= 1, "TransferGate needs at least one slot")
        self.limit = limit
    }

    /// Tells the gate where to read the priority of the work queued before it (set once, after the
    /// scheduler is made).
    func readQueuedPriority(from function: @escaping @Sendable () -> LoadPriority?) {
        state.withLock { $0.queuedPriority = function }
    }

    /// A ticket for a transfer about to enter.
    func ticket() -> UInt64 {
        state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
    }

    /// Lets the transfer of `ticket` move: `start` runs now, on this thread, if a slot is free (and
    /// nothing waiting comes first), else later on the thread of the transfer that frees one.
    func enter(_ ticket: UInt64, priority: RunPriority?, start: @escaping @Sendable () -> Void) {
        let freed = state.withLock { state in
            state.waiting.append(Waiting(id: ticket, priority: priority, start: start))
            state.keptFor = nil
            return state.freed
        }
        fill(givingAwayFreedUpTo: freed)
    }

    /// The transfer of `ticket` is over (ended, failed or cancelled): its slot goes to the next, or
    /// its place in the line is given up. Returns whether it was still waiting (it never started).
    @discardableResult
    func leave(_ ticket: UInt64) -> Bool {
        if leaveSlot(ticket) { return true }
        fill(givingAwayFreedUpTo: nil)
        return false
    }

    /// ``leave(_:)`` but its fill: returns whether the transfer was waiting. A slot given back
    /// records what is queued (`State.keptFor`) if a transfer waits below `.visible`: none other
    /// can be kept out of a slot, and a list of visible downloads, which leaves at every file's
    /// end, takes no scheduler lock. A function of its own so that its view of the waiting list is
    /// gone before the fill removes from that list (a copy of it otherwise).
    private func leaveSlot(_ ticket: UInt64) -> Bool {
        let left = state.withLock { state -> (wasWaiting: Bool, waiting: [Waiting], queued: (@Sendable () -> LoadPriority?)?) in
            if let index = state.waiting.firstIndex(where: { $0.id == ticket }) {
                state.waiting.remove(at: index)
                return (true, [], nil)
            }
            state.moving -= 1
            state.freed &+= 1
            return (false, state.waiting, state.queuedPriority)
        }
        if left.wasWaiting { return true }
        if left.waiting.contains(where: { ($0.priority?.value ?? .visible) < .visible }), let queued = left.queued?() {
            state.withLock { $0.keptFor = Self.larger($0.keptFor, queued) }
        }
        return false
    }

    /// A worker of the scheduler retired for want of work: a slot kept for queued work that was
    /// cancelled meanwhile goes to a waiting transfer.
    func workerRetired() {
        fill(givingAwayFreedUpTo: state.withLock { state in
            state.keptFor = nil
            return state.freed
        })
    }

    /// Runs `body` with no freed slot handed to a waiting transfer until it returns; then the free
    /// slots are filled as a transfer's leave fills them. For a caller that withdraws many
    /// transfers at once: those waiting leave before a moving one's slot could start them.
    func holding(_ body: () -> Void) {
        state.withLock { $0.holds += 1 }
        body()
        let held = state.withLock { state -> Bool in
            state.holds -= 1
            return state.holds > 0
        }
        if !held { fill(givingAwayFreedUpTo: nil) }
    }

    /// Transfers waiting for a slot now.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Transfers moving now.
    var movingCount: Int { state.withLock { $0.moving } }

    /// Starts waiting transfers while slots are free; a slot is kept for queued work only if no
    /// request to fill made meanwhile gives it away (``FillRequest``), for work of a higher priority
    /// than the waiting transfer's, queued now or when the slot was freed (`State.keptFor`).
    private func fill(givingAwayFreedUpTo count: UInt64?) {
        filling.submit({ pending in
            // What any of them gives away is given away: `nil` gives nothing, a larger count more.
            pending = FillRequest(givingAwayFreedUpTo: Self.larger(pending?.givingAwayFreedUpTo, count))
        }, drain: { fillNow($0) })
    }

    private static func larger<T: Comparable>(_ a: T?, _ b: T?) -> T? {
        guard let a, let b else { return a ?? b }
        return max(a, b)
    }

    /// ``fill(givingAwayFreedUpTo:)``'s work. Priorities are read outside the lock (each
    /// ``RunPriority`` has a lock of its own), then the choice is taken if it is still there.
    private func fillNow(_ request: FillRequest) {
        while true {
            var best: UInt64 = 0
            var bestPriority = LoadPriority.visible
            var queued: (@Sendable () -> LoadPriority?)?
            do {
                // The list itself, shared (not a mapped copy: an allocation per transfer); gone at
                // the end of this block, so removing from it below copies nothing.
                let snapshot = state.withLock { state -> [Waiting]? in
                    guard state.moving < limit, !state.waiting.isEmpty, state.holds == 0 else { return nil }
                    queued = state.queuedPriority
                    return state.waiting
                }
                guard let snapshot else { return }
                // The highest priority; among equals the first to enter (the list is in entry order).
                best = snapshot[0].id
                bestPriority = snapshot[0].priority?.value ?? .visible
                for waiting in snapshot.dropFirst() {
                    let value = waiting.priority?.value ?? .visible
                    if value > bestPriority { (best, bestPriority) = (waiting.id, value) }
                }
            }
            // Nothing queued outranks `.visible`: the scheduler's lock is not taken (a list of
            // visible downloads asks at every transfer's end, on the transport's thread).
            let queuedNow = bestPriority < .visible ? queued?() : nil
            enum Taken { case start(@Sendable () -> Void), full, kept, left }
            let taken = state.withLock { state -> Taken in
                guard state.moving < limit, state.holds == 0 else { return .full }
                // Slots freed since the request (a transport ended a transfer on another thread, or
                // inside the start just made) are kept as their leaves asked. `keptFor` is read here,
                // after the queue: a leave whose run took its work before the queue was read had
                // recorded it by then.
                let keeping = request.givingAwayFreedUpTo.map { state.freed > $0 } ?? true
                if keeping, let wanted = Self.larger(queuedNow, state.keptFor), wanted > bestPriority { return .kept }
                guard let index = state.waiting.firstIndex(where: { $0.id == best }) else { return .left }
                state.moving += 1
                return .start(state.waiting.remove(at: index).start)
            }
            switch taken {
            case .start(let start): start()
            case .full, .kept: return
            case .left: continue  // it left meanwhile: choose again
            }
        }
    }
}
