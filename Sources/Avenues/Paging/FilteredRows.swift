/// How far a ``FilteredRows`` scan got.
public struct FilterProgress: Sendable, Hashable, CustomStringConvertible {
    /// Rows of the source tested so far.
    public var scanned: Int
    /// The source's rows (at least, while it is still being read).
    public var total: RowCount
    /// Whether the scan is over: the match count is exact.
    public var isComplete: Bool

    /// `34000 of ≥ 80000 scanned` or `80000 scanned`.
    public var description: String {
        isComplete ? "\(scanned) scanned" : "\(scanned) of \(total) scanned"
    }
}

/// What changed in a ``FilteredRows``: its matches, its progress, or the items of visible matches.
public struct FilteredRowsChange: Sendable, Hashable {
    /// The matches found so far (exact once the scan ended).
    public var count: RowCount
    /// How far the scan got.
    public var progress: FilterProgress
}

/// How much work a ``FilteredRows`` did, for tests and benchmarks.
public struct FilterStatistics: Sendable, Hashable {
    /// Scans started (one per query that needed one).
    public var scansStarted = 0
    /// Scans that ran to the end of the source.
    public var scansCompleted = 0
    /// Rows read from the source by scans (cancelled ones included).
    public var rowsRead = 0
}

/// The rows of a source that match a query, found while the source is still being read: a filter
/// over *every* row of a list of any length — including rows not loaded yet — streaming its
/// matches in order, cancelled and restarted on every keystroke, in bounded memory.
///
/// - **Scanning.** ``filter(_:)`` starts a scan of the source in order, `chunk` rows at a time, in
///   a task of its own at a low priority (`.utility` by default), so the rows on screen of the
///   unfiltered list never wait behind it. A new query cancels the old scan's task at once (its
///   source reads see the cancellation), so at most one chunk of work is spent after a keystroke.
/// - **Narrowing.** Typing more of the same text (``TextQuery/narrows(_:)``) re-checks only the
///   rows the last query matched among those it had scanned, then scans on from where it stopped.
/// - **Rows of its own.** Match `i` is source row ``row(at:)``; ``count`` says "≥ N" while the scan
///   runs and is exact when it ends; ``progress`` says how far it got. ``item(at:)`` is a visible
///   match's item: ``show(_:)`` the matches on screen and their items load (those the scan saw are
///   kept, up to `maxResident`).
/// - **Memory.** Matches are row numbers — 8 bytes each, 8 MB for a million — and at most
///   `maxResident` items are kept, whatever the source's length.
///
/// ```swift
/// let filtered = FilteredRows(rows: commits) { commit, query in
///     query.matches(commit.subject) || query.matches(commit.author)
/// }
/// filtered.filter(TextQuery("fix"))
/// filtered.show(0..<40)
/// for await change in filtered.subscribe() where change.progress.isComplete { print(change.count); break }
/// ```
///
/// Thread-safe. The matching closure runs on the scan's task, never under a lock.
public final class FilteredRows<Item: Sendable>: Sendable {
    /// Reads rows `range` of the source, in order; fewer at its end.
    public typealias Read = @Sendable (Range<Int>) async throws -> [Item]

    let read: Read
    let sourceCount: @Sendable () -> RowCount
    let test: @Sendable (Item, TextQuery) -> Bool
    let maxResident: Int
    let priority: TaskPriority
    let state: Locked<State>

    struct State {
        var machine: RowFilterStateMachine
        var scan: Task<Void, Never>?
        /// Which scan is current: each started, and each dropped, moves it on.
        var scanID: UInt64 = 0
        /// Items by source row: those the scan matched and those loaded for the screen.
        var items: [Int: Item] = [:]
        /// The matches on screen.
        var window: Range<Int> = 0 ..< 0
        var loading: Task<Void, Never>?
        var listeners: [UInt64: AsyncStream<Void>.Continuation] = [:]
        var nextListener: UInt64 = 0
        var error: (any Error)?
        var statistics = FilterStatistics()
    }

    /// A filter over any source.
    ///
    /// - Parameters:
    ///   - chunk: rows read per step of a scan (1,000 by default): the work a cancelled scan may
    ///     still do.
    ///   - maxResident: the most items kept (1,000 by default).
    ///   - priority: the scans' priority; `.utility` by default, below the screen's loads.
    ///   - count: the source's row count as known now.
    ///   - read: reads rows of the source in order (fewer at its end; rows past those asked are
    ///     dropped); it should stop with `CancellationError` when its task is cancelled.
    ///   - matches: whether an item matches a query.
    public init(
        chunk: Int = 1_000,
        maxResident: Int = 1_000,
        priority: TaskPriority = .utility,
        count: @escaping @Sendable () -> RowCount,
        read: @escaping Read,
        matches: @escaping @Sendable (Item, TextQuery) -> Bool
    ) {
        precondition(chunk >= 1, "FilteredRows.chunk must be at least 1")
        precondition(maxResident >= 1, "FilteredRows.maxResident must be at least 1")
        self.read = read
        self.sourceCount = count
        self.test = matches
        self.maxResident = maxResident
        self.priority = priority
        state = Locked(State(machine: RowFilterStateMachine(chunk: chunk)))
    }

    /// A filter over the rows of a ``PagedRows`` whose source can start anywhere: the scan reads the
    /// source's pages itself, so the list's own pages and memory bound are left alone.
    public convenience init<Source: OffsetPageSource>(
        rows: PagedRows<Source>,
        chunk: Int = 1_000,
        maxResident: Int = 1_000,
        priority: TaskPriority = .utility,
        matches: @escaping @Sendable (Item, TextQuery) -> Bool
    ) where Source.Item == Item {
        let source = rows.source
        self.init(
            chunk: chunk, maxResident: maxResident, priority: priority, count: { [weak rows] in rows?.count ?? .atLeast(0) },
            read: { range in try await source.page(at: range.lowerBound, size: range.count).items }, matches: matches
        )
    }

    /// A filter over rows held in memory.
    public convenience init(
        items: [Item],
        chunk: Int = 1_000,
        maxResident: Int = 1_000,
        priority: TaskPriority = .utility,
        matches: @escaping @Sendable (Item, TextQuery) -> Bool
    ) {
        self.init(
            chunk: chunk, maxResident: maxResident, priority: priority, count: { .exact(items.count) },
            read: { range in
                let lower = min(range.lowerBound, items.count)
                return Array(items[lower ..< min(range.upperBound, items.count)])
            },
            matches: matches
        )
    }

    deinit {
        let (scan, loading, listeners) = state.withLock { ($0.scan, $0.loading, Array($0.listeners.values)) }
        scan?.cancel()
        loading?.cancel()
        for listener in listeners { listener.finish() }
    }

    // MARK: Querying

    /// Filters by `query` (`nil`: no filter, no matches). The old scan is cancelled at once; a query
    /// that narrows the last re-checks its matches first.
    public func filter(_ query: TextQuery?) {
        // The old scan is taken out in the look that changes the query, also when the new one is
        // `nil`: taken in a second look, it could be the scan a query typed meanwhile on another
        // thread had just started, and that query would have been left with nothing scanning.
        let (old, restart) = state.withLock { state -> (Task<Void, Never>?, Bool) in
            guard state.machine.query != query else { return (nil, false) }
            let restart = state.machine.setQuery(query)
            state.error = nil
            let old = state.scan
            state.scan = nil
            state.scanID &+= 1  // the old scan, if it runs on, is no longer the current one
            return (old, restart)
        }
        old?.cancel()
        if restart { startScan() }
        notify()
    }

    /// The query being filtered by.
    public var query: TextQuery? { state.withLock { $0.machine.query } }

    /// Goes on scanning after a finished scan, for a source that grew (a log, a followed file); at
    /// once, even from the change that said the scan was complete. Said while the scan runs, it is
    /// not lost: a read out at that moment may come back short at the old end, and a narrowing
    /// query may be re-checking the last one's matches; either way the scan reads on past the old end.
    public func sourceGrew() {
        // A scan still running (one that just took its last chunk, say) goes on by itself.
        let resume = state.withLock { state -> Bool in
            state.machine.sourceGrew() && state.scan == nil
        }
        if resume { startScan() }
    }

    /// Stops the scan and the loads (the matches found stay readable).
    public func stop() {
        cancelScan()
        state.withLock { $0.loading }?.cancel()
    }

    private func cancelScan() {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer {
                state.scan = nil
                state.scanID &+= 1
            }
            return state.scan
        }
        task?.cancel()
    }

    // MARK: Reading

    /// The matches found: exact once the scan ended.
    public var count: RowCount { state.withLock { Self.count(of: $0.machine) } }

    private static func count(of machine: RowFilterStateMachine) -> RowCount {
        machine.isScanning ? .atLeast(machine.matches.count) : .exact(machine.matches.count)
    }

    /// How far the scan got.
    public var progress: FilterProgress {
        let total = sourceCount()
        return state.withLock { Self.progress(of: $0.machine, total: total) }
    }

    private static func progress(of machine: RowFilterStateMachine, total: RowCount) -> FilterProgress {
        let complete = !machine.isScanning
        // The scan reads the source itself: a count known apart from it (a paged list's, the rows
        // the list loaded) can be below what it read ("3000 of ≥ 0 scanned"). It is at least that.
        let known = total.isExact || total.value >= machine.scanned ? total : .atLeast(machine.scanned)
        return FilterProgress(scanned: complete ? max(machine.scanned, known.value) : machine.scanned, total: known, isComplete: complete)
    }

    /// Why the scan stopped early, if a read failed.
    public var error: (any Error)? { state.withLock { $0.error } }

    /// The work done so far.
    public var statistics: FilterStatistics { state.withLock { $0.statistics } }

    /// The source row of match `index`, if found yet.
    public func row(at index: Int) -> Int? {
        state.withLock { state in state.machine.matches.indices.contains(index) ? state.machine.matches[index] : nil }
    }

    /// Which match source row `row` is, if it matches (to keep the selection on the same row when
    /// the query changes).
    public func index(ofRow row: Int) -> Int? {
        state.withLock { $0.machine.index(ofRow: row) }
    }

    /// Match `index`'s item, once found and loaded (``show(_:)`` loads those on screen).
    public func item(at index: Int) -> Item? {
        state.withLock { state in
            guard state.machine.matches.indices.contains(index) else { return nil }
            return state.items[state.machine.matches[index]]
        }
    }

    /// The matches on screen: their items load (at the caller's priority), those far from them may go.
    /// A range wider than `maxResident` is cut to its first `maxResident` matches (a screen cannot
    /// show more, and loading them all would read the whole source).
    public func show(_ indices: Range<Int>) {
        let lower = max(0, indices.lowerBound)
        let indices = lower ..< max(lower, min(indices.upperBound, Saturating.add(lower, maxResident)))
        let missing = state.withLock { state -> [Int] in
            state.window = indices
            let matches = state.machine.matches
            let visible = max(0, min(indices.lowerBound, matches.count)) ..< max(0, min(indices.upperBound, matches.count))
            return visible.map { matches[$0] }.filter { state.items[$0] == nil }
        }
        guard !missing.isEmpty else { return }
        let task = Task { [weak self] in
            guard let self else { return }
            await self.load(missing)
        }
        // Swapped in one look at the lock, so of two screens shown at once the load swapped out is
        // cancelled and none runs on unseen; cancelled outside it: cancelling runs the read's
        // cancellation handlers, user code.
        let old = state.withLock { state -> Task<Void, Never>? in
            defer { state.loading = task }
            return state.loading
        }
        old?.cancel()
    }

    // MARK: Changes

    /// Changes as they happen (the newest only, when the reader is slower): matches found, progress,
    /// items loaded. Any number of subscribers.
    public func subscribe() -> AsyncStream<FilteredRowsChange> {
        // The listeners get only a signal; each change is made when its reader takes it. A change
        // made by the notifier and yielded later could replace, in the one-change buffer, a newer
        // one yielded meanwhile by another task (a scan's last change, by a subscribe's first), and
        // its reader then waited for ever on a stale state.
        let (signals, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> UInt64 in
            state.nextListener &+= 1
            state.listeners[state.nextListener] = signal
            return state.nextListener
        }
        signal.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        signal.yield()
        return AsyncStream { [weak self] in
            // A new iterator each time reads the same buffer; the stream's end (the filter gone,
            // the reader cancelled) ends this one.
            var next = signals.makeAsyncIterator()
            guard await next.next() != nil else { return nil }
            return self?.change()
        }
    }

    /// The state now, from one look at it (a count and a progress from two could disagree).
    private func change() -> FilteredRowsChange {
        let total = sourceCount()
        return state.withLock { state in
            FilteredRowsChange(count: Self.count(of: state.machine), progress: Self.progress(of: state.machine, total: total))
        }
    }

    private func notify() {
        let listeners = state.withLock { Array($0.listeners.values) }
        for listener in listeners { listener.yield() }
    }

    // MARK: Scanning

    private func startScan() {
        // The scan holds the filter only during a step: one dropped mid-scan is deinitialized, and
        // its deinit cancels the task.
        // Made and stored under the lock, so a scan that ends finds its own handle there. The old
        // one is cancelled after it: cancelling runs the read's cancellation handlers, user code.
        let previous = state.withLock { state -> Task<Void, Never>? in
            let previous = state.scan
            state.scanID &+= 1
            let id = state.scanID
            state.scan = Task(priority: priority) { [weak self] in
                while !Task.isCancelled {
                    guard let filtered = self else { break }
                    switch await filtered.scanStep(id) {
                    case .stepped: continue
                    case .stopped: return
                    case .planEnded:
                        // Over, unless the source grew since the last step ended it: then this scan
                        // goes on (``sourceGrew()`` starts none while it runs).
                        if filtered.scanEnded(id) { return }
                    }
                }
            }
            state.statistics.scansStarted += 1
            return previous
        }
        previous?.cancel()
    }

    /// How a step of a scan went.
    private enum Step {
        /// A chunk was read and tested.
        case stepped
        /// Nothing left to read in the plan.
        case planEnded
        /// The task was cancelled, or a read failed.
        case stopped
    }

    /// What a step of a scan is to do.
    private enum Plan {
        /// Read and test these rows for this query.
        case read(RowFilterStateMachine.Read, TextQuery)
        /// Nothing left to read.
        case ended
        /// Another scan is the current one.
        case replaced
    }

    /// Reads and tests the next chunk, if scan `id` is still the current one.
    private func scanStep(_ id: UInt64) async -> Step {
        // A replaced scan plans nothing: it may be past its last look at cancellation before the
        // new query cancels it, and would read and take a chunk of the new scan's plan, twice.
        let plan = state.withLock { state -> Plan in
            guard state.scanID == id else { return .replaced }
            guard let step = state.machine.nextRead(), let query = state.machine.query else { return .ended }
            return .read(step, query)
        }
        let step: RowFilterStateMachine.Read, query: TextQuery
        switch plan {
        case .read(let planned, let plannedQuery): (step, query) = (planned, plannedQuery)
        case .ended: return .planEnded
        case .replaced: return .stopped
        }
        var items: [Item]
        do {
            items = try await read(step.range)
        } catch {
            if !Task.isCancelled, !(error is CancellationError) {
                state.withLock { state in
                    if state.machine.generation == step.generation { state.error = error }
                }
                notify()
            }
            return .stopped
        }
        if Task.isCancelled { return .stopped }
        // Rows past those asked are not the next ones for sure: they would be found twice.
        if items.count > step.range.count { items.removeLast(items.count - step.range.count) }
        // Plain index loops and no tuples: this runs unspecialized, once per row of the source.
        var matched: [Int] = []
        var offsets: [Int] = []
        let lower = step.range.lowerBound
        if let candidates = step.candidates {
            for row in candidates {
                let offset = row - lower
                guard offset < items.count else { break }
                if test(items[offset], query) {
                    matched.append(row)
                    offsets.append(offset)
                }
            }
        } else {
            var offset = 0
            while offset < items.count {
                if test(items[offset], query) {
                    matched.append(lower + offset)
                    offsets.append(offset)
                }
                offset += 1
            }
        }
        let taken = state.withLock { state -> Bool in
            state.statistics.rowsRead += items.count
            guard state.scanID == id, state.machine.take(step, matched: matched, rowsRead: items.count) else { return false }
            // The new matches' items are kept while there is room, or when they are near the
            // screen (a screen at the top keeps the first matches; later ones load if shown).
            let firstIndex = state.machine.matches.count - offsets.count
            // Saturating, and never below 0: a screen may be any range, up to the ends of the integers.
            let lowerNear = max(0, Saturating.subtract(state.window.lowerBound, maxResident / 2))
            let near = lowerNear ..< max(lowerNear, Saturating.add(state.window.upperBound, maxResident / 2))
            for (position, offset) in offsets.enumerated() where state.items.count < maxResident || near.contains(firstIndex + position) {
                state.items[lower + offset] = items[offset]
            }
            evict(&state)
            if !state.machine.isScanning { state.statistics.scansCompleted += 1 }
            return true
        }
        guard taken else { return .stopped }
        notify()
        await Task.yield()
        return .stepped
    }

    /// Scan `id` found nothing left to read: it lets go of its handle unless the source grew
    /// meanwhile. Returns whether it is over.
    private func scanEnded(_ id: UInt64) -> Bool {
        state.withLock { state in
            guard state.scanID == id else { return true }  // replaced: the new scan carries on
            if state.machine.isScanning { return false }
            state.scan = nil
            return true
        }
    }

    /// Drops the items farthest from the screen's matches until `maxResident` are left.
    private func evict(_ state: inout State) {
        guard state.items.count > maxResident else { return }
        let window = state.window
        let machine = state.machine
        func distance(_ row: Int) -> Int {
            guard let index = machine.index(ofRow: row) else { return .max }  // not a match of this query
            if index < window.lowerBound { return window.lowerBound - index }
            if index >= window.upperBound { return Saturating.add(Saturating.subtract(index, window.upperBound), 1) }
            return 0
        }
        // Down to three quarters, so the next matches do not evict again at once.
        let keep = maxResident - maxResident / 4
        let ordered = state.items.keys.map { ($0, distance($0)) }.sorted { $0.1 < $1.1 }
        for (row, _) in ordered.dropFirst(keep) { state.items.removeValue(forKey: row) }
    }

    /// Loads the items of `rows` (ascending source rows), nearby rows in one read.
    private func load(_ rows: [Int]) async {
        var index = 0
        while index < rows.count, !Task.isCancelled {
            var end = index + 1
            while end < rows.count, rows[end] - rows[index] < 64 { end += 1 }
            let range = rows[index] ..< rows[end - 1] + 1
            guard let items = try? await read(range), !Task.isCancelled else { return }
            state.withLock { state in
                for row in rows[index ..< end] where row - range.lowerBound < items.count {
                    state.items[row] = items[row - range.lowerBound]
                }
                evict(&state)
            }
            notify()
            index = end
        }
    }
}
