/// Drives an ``Avenue`` from what a list shows: the visible rows first, a few rows ahead in the
/// scroll direction and a few behind, and nothing else.
///
/// Call ``show(_:)`` whenever the visible rows change (every scroll step, jump or resize). It
/// prepares the visible rows at `.visible` priority, the next `ahead` rows in the direction of the
/// last move and the `behind` rows on the other side at `.prefetch`, and cancels every row that left
/// that window — so a fling or a jump to the end cancels the work of rows the user skipped. While
/// the list moves, visible rows are queued from the leading edge (they stay on screen longest);
/// at rest, in reading order. With ``Policy/adaptive`` the window is sized from the scroll rate and
/// the load latency instead (``AdaptiveWindow``); that policy wants a `show` when the list comes to
/// rest, so call it on every frame, or at least once after the user stops.
///
/// An app that can foresee a jump (the next search match, the end of a list whose length is now
/// known, a bookmark) says so with ``hint(_:)``: those screens are warmed at `.background` priority,
/// after everything the window wants, and cancelled when the hints change.
///
/// It is UI-free, so any front end (a TUI table, a pager, a test) can drive it, and thread-safe:
/// `show` and `stop` may be called from any thread, including from the avenue's callbacks. When
/// calls overlap, the latest one wins (a thread already applying a window applies the newer request
/// before it returns). A window holds at most ``maxRows`` rows, so a huge range cannot make it
/// prepare millions of rows (hinted screens included). Releasing the prefetcher cancels its window.
///
/// ```swift
/// let prefetcher = RowPrefetcher(avenue: avenue, ahead: 40, behind: 10) { row in
///     row < files.count ? files[row].path : nil
/// }
/// prefetcher.show(top..<top + screenRows)
/// ```
public final class RowPrefetcher<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Which way the list last moved.
    public enum Direction: Sendable, Hashable {
        /// Towards higher rows.
        case down
        /// Towards lower rows.
        case up
    }

    /// How the window around the visible rows is sized.
    public enum Policy: Sendable, Hashable {
        /// ``ahead`` rows past the visible ones in the scroll direction, ``behind`` on the other side.
        case fixed
        /// Sized from how fast the list moves and how long loads take (see ``AdaptiveWindow``).
        case adaptive
    }

    /// The avenue whose rows are prepared and cancelled.
    public let avenue: Avenue<Int, Key, Value>

    /// How the window is sized; a change applies from the next ``show(_:)``.
    public var policy: Policy {
        get { state.withLock { $0.policy } }
        set { state.withLock { $0.policy = newValue } }
    }

    /// What the adaptive policy estimated and chose at the last ``show(_:)`` it planned.
    public var estimates: AdaptiveWindow.Estimates {
        state.withLock { $0.adaptive.estimates }
    }

    /// Rows prefetched past the visible ones in the scroll direction; 40 by default. A change (say,
    /// after the window was resized) applies from the next ``show(_:)``.
    public var ahead: Int {
        get { state.withLock { $0.ahead } }
        set { state.withLock { $0.ahead = max(0, newValue) } }
    }

    /// Rows prefetched on the other side; 10 by default. A change applies from the next ``show(_:)``.
    public var behind: Int {
        get { state.withLock { $0.behind } }
        set { state.withLock { $0.behind = max(0, newValue) } }
    }

    /// The most rows in the window (visible, ahead and behind together); 4,096 by default. Visible
    /// rows beyond it are ignored (a range larger than any screen is cut to its first `maxRows`
    /// rows), and the prefetch shrinks to fit. A change applies from the next ``show(_:)``.
    public var maxRows: Int {
        get { state.withLock { $0.maxRows } }
        set { state.withLock { $0.maxRows = max(1, newValue) } }
    }

    /// The most screens ``hint(_:)`` warms at once; hints past the first eight are ignored.
    public static var maxHints: Int { 8 }

    private let key: @Sendable (Int) -> Key?
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state: Locked<State>
    /// The newest request not applied yet; only the caller applying requests changes the window.
    @usableFromInline let requests = SerialDrain<Request>()

    @usableFromInline
    enum Request: Sendable {
        case show(Range<Int>)
        /// ``showAlone(_:)``.
        case alone([Int])
        case stop
        /// The hints changed: plan the current window again (not a move of the list).
        case replan
    }

    private struct State {
        var ahead: Int
        var behind: Int
        var policy: Policy
        var adaptive = AdaptiveWindow()
        var maxRows = RowPrefetcherDefaults.maxRows
        /// The rows prepared now, with the priority each was prepared at.
        var applied: [Int: LoadPriority] = [:]
        var lastVisible: Range<Int>?
        /// Rows on screen at the last `show` (0 before the first): the height of a hinted screen.
        var screen = 0
        /// The first rows of the screens the app expects to show soon.
        var hints: [Int] = []
        var direction = Direction.down
    }

    /// Creates a prefetcher.
    ///
    /// - Parameters:
    ///   - avenue: the avenue to drive; its rows are `Int` indices.
    ///   - ahead: rows to prefetch past the visible ones in the scroll direction; 40 by default
    ///     (about a screen). What each window costs and saves, per kind of motion: "scroll-sim" in
    ///     Benchmarks/README.md.
    ///   - behind: rows to prefetch on the other side; 10 by default.
    ///   - policy: `.fixed` (the default) uses `ahead` and `behind`; `.adaptive` sizes the window
    ///     from the scroll rate and the load latency.
    ///   - now: the clock the adaptive policy reads (a simulation passes its own).
    ///   - key: the key of a row, or `nil` for a row that does not exist or needs nothing loaded
    ///     (asked for rows past either end of the list too).
    public init(
        avenue: Avenue<Int, Key, Value>,
        ahead: Int = 40,
        behind: Int = 10,
        policy: Policy = .fixed,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        key: @escaping @Sendable (Int) -> Key?
    ) {
        precondition(ahead >= 0 && behind >= 0, "RowPrefetcher ahead and behind must be 0 or more")
        self.avenue = avenue
        self.state = Locked(State(ahead: ahead, behind: behind, policy: policy))
        self.now = now
        self.key = key
    }

    deinit {
        let rows = state.withLock { Array($0.applied.keys) }
        for row in rows { avenue.cancel(at: row) }
    }

    /// The list now shows `rows`: prepares them and the rows around them, and cancels the rest.
    @inlinable
    public func show(_ rows: Range<Int>) {
        submit(.show(rows))
    }

    /// Prepares `rows` alone, at `.visible` in their order (the first ``maxRows``), and cancels the
    /// rest of the window: rows loaded on the way to the window (a paged list's walk or its search
    /// for the end), with no prefetch around them. The scroll direction, the rows last shown and the
    /// adaptive policy's samples stay as they were, so the next ``show(_:)`` moves from the rows the
    /// list last showed.
    func showAlone(_ rows: [Int]) {
        submit(.alone(rows))
    }

    /// Cancels every row of the current window. A later ``show(_:)`` starts again. If another thread
    /// is applying a window right now, that thread cancels the window before it returns.
    @inlinable
    public func stop() {
        dropHints()
        submit(.stop)
    }

    /// Forgets the hints (``stop()``).
    @usableFromInline
    func dropHints() {
        state.withLock { $0.hints = [] }
    }

    /// The app expects to show these screens soon: each is the first row of a screen (as tall as the
    /// last ``show(_:)``). With the fixed policy their rows are prepared at `.background` priority,
    /// after the visible rows and the window's prefetches, so they never delay either. The adaptive
    /// policy, at rest, prepares them at `.prefetch` after the first quarter screen ahead (right
    /// after the visible rows while the list moves by jumps): a hinted jump is then likelier than
    /// the far end of the window. A hinted row that is also in the window keeps the window's
    /// priority. The hints replace the previous ones (rows no longer hinted and not in the window
    /// are cancelled) and last until replaced; `hint([])` drops them, and so does ``stop()``. At most
    /// ``maxHints`` screens, within ``maxRows``.
    ///
    /// ```swift
    /// prefetcher.hint([nextMatch - screen / 2, count - screen])  // the next hit, and the end
    /// ```
    @inlinable
    public func hint(_ tops: [Int]) {
        if replaceHints(tops) { submit(.replan) }
    }

    /// Takes the hints; `false` when they are the ones already taken (an app hinting on every
    /// frame changes nothing: no replan).
    @usableFromInline
    func replaceHints(_ tops: [Int]) -> Bool {
        let hints = Array(tops.prefix(Self.maxHints))
        return state.withLock { state -> Bool in
            defer { state.hints = hints }
            return state.hints != hints
        }
    }

    /// The first rows of the hinted screens (see ``hint(_:)``).
    public var hints: [Int] { state.withLock { $0.hints } }

    /// Applies requests until none is pending. Only the applying caller changes the window, so keys
    /// are looked up and the avenue is called outside the lock. Inlinable, like the avenue's calls
    /// it makes for every row of the window on every frame: specialized in the app, they cost a
    /// tenth of what they cost in generic code (see benchmark `prefetcher-show`).
    @inlinable
    func submit(_ request: Request) {
        requests.submit({ pending in
            // A show or stop already pending reads the new hints when it is applied; a replan must
            // not replace it.
            if case .replan = request, pending != nil {} else { pending = request }
        }, drain: { request in
            let plan = self.plan(request)
            for row in plan.cancel { avenue.cancel(at: row) }
            avenue.prepare(plan.prepare)
            guard let time = plan.adaptive else { return }
            var waiting: [(row: Int, visible: Bool)] = []
            for (row, _, priority) in plan.prepare where priority != .background && avenue.item(at: row) == nil {
                waiting.append((row, priority == .visible))
            }
            asked(waiting, at: time, window: plan.window)
        })
    }

    /// What one pass of ``submit(_:)`` does to the avenue.
    @usableFromInline
    struct Plan {
        /// Rows that left the window.
        @usableFromInline var cancel: [Int]
        /// The window's rows in the order they are prepared, each with its key and priority.
        @usableFromInline var prepare: [(row: Int, key: Key, priority: LoadPriority)]
        /// The window, by row.
        @usableFromInline var window: [Int: LoadPriority]
        /// When the adaptive policy planned it (`nil` for the fixed policy).
        @usableFromInline var adaptive: ContinuousClock.Instant?
    }

    /// `request` as a plan, the window taken as applied.
    @usableFromInline
    func plan(_ request: Request) -> Plan {
        // The adaptive policy's latency samples and clock; the fixed policy needs neither.
        // Rows loaded alone are not where the list moves: the adaptive policy does not hear of them.
        let alone = if case .alone = request { true } else { false }
        let adaptive = !alone && state.withLock { $0.policy == .adaptive }
        if adaptive { sampleLatencies() }
        let time = now()
        let wanted = state.withLock { state in nextWindow(request, &state, at: time) }
        var next: [Int: LoadPriority] = [:]
        var prepare: [(row: Int, key: Key, priority: LoadPriority)] = []
        for (row, priority) in wanted where row >= 0 && next[row] == nil {
            guard let key = key(row) else { continue }
            next[row] = priority
            prepare.append((row, key, priority))
        }
        let cancel = state.withLock { state -> [Int] in
            defer { state.applied = next }
            return state.applied.keys.filter { next[$0] == nil }.sorted()
        }
        return Plan(cancel: cancel, prepare: prepare, window: next, adaptive: adaptive ? time : nil)
    }

    /// Tells the adaptive policy which of the rows just asked for are waiting.
    @usableFromInline
    func asked(_ waiting: [(row: Int, visible: Bool)], at time: ContinuousClock.Instant, window: [Int: LoadPriority]) {
        state.withLock { $0.adaptive.asked(waiting, at: time, window: window) }
    }

    /// Times the loads of visible rows asked earlier that have arrived since (the latency the
    /// adaptive window plans with). The avenue is read outside this prefetcher's lock.
    private func sampleLatencies() {
        let asked = state.withLock { $0.adaptive.waitingRows }
        guard !asked.isEmpty else { return }
        let arrived = asked.filter { avenue.item(at: $0) != nil || avenue.state(at: $0).error != nil }
        let time = now()
        state.withLock { $0.adaptive.arrived(arrived, at: time) }
    }

    /// The direction of the last move (`.down` until the list first moves).
    public var direction: Direction { state.withLock { $0.direction } }

    /// The rows in the current window, each with the priority it was prepared at.
    public var window: [Int: LoadPriority] { state.withLock { $0.applied } }

    // MARK: Planning

    /// The rows wanted for `request`, in the order they should be prepared: visible rows top to
    /// bottom, then prefetches nearest first (only hinted rows for a stop).
    private func nextWindow(_ request: Request, _ state: inout State, at time: ContinuousClock.Instant) -> [(row: Int, priority: LoadPriority)] {
        let asked: Range<Int>
        switch request {
        case .stop:
            state.lastVisible = nil
            return hinted(state, room: state.maxRows)  // hints given after the stop
        case .replan:
            guard let last = state.lastVisible else { return hinted(state, room: state.maxRows) }
            return withHints(window(around: last, moved: false, &state), state)
        case .alone(let rows):
            return rows.prefix(state.maxRows).map { ($0, .visible) }
        case .show(let rows):
            asked = rows
        }
        // `asked.count` itself traps for ranges wider than Int.max.
        let (width, tooWide) = asked.upperBound.subtractingReportingOverflow(asked.lowerBound)
        let visible = asked.lowerBound ..< asked.lowerBound + (tooWide ? state.maxRows : min(width, state.maxRows))
        var moved = false
        if let last = state.lastVisible {
            // A jump moves the window wholesale; its direction is where it went, like a scroll.
            if visible.lowerBound > last.lowerBound {
                state.direction = .down
                moved = true
            } else if visible.lowerBound < last.lowerBound {
                state.direction = .up
                moved = true
            }
        }
        let previousTop = state.lastVisible?.lowerBound
        state.lastVisible = visible
        state.screen = visible.count
        state.adaptive.shown(top: visible.lowerBound, previousTop: previousTop, screen: visible.count, at: time)
        return withHints(window(around: visible, moved: moved, &state), state)
    }

    /// The window and the hinted screens: after the window at `.background`. The adaptive policy
    /// at rest puts them at `.prefetch` right after the visible rows while the list moves by jumps
    /// (the next move is more likely a hinted jump than a step past the edge), and otherwise after
    /// the first quarter screen ahead (a few ↓ presses are covered, then the hinted jump, then the
    /// rest of the screen ahead).
    private func withHints(_ window: [(row: Int, priority: LoadPriority)], _ state: State) -> [(row: Int, priority: LoadPriority)] {
        let hints = hinted(state, room: state.maxRows - window.count)
        let estimates = state.adaptive.estimates
        guard state.policy == .adaptive, estimates.rowsPerSecond == 0, !estimates.seeking, !hints.isEmpty else { return window + hints }
        let visible = window.prefix { $0.priority == .visible }.count
        let first = visible + (estimates.jumping ? 0 : min(estimates.ahead, state.screen / 4))
        return window.prefix(first) + hints.map { ($0.row, .prefetch) } + window.dropFirst(first)
    }

    /// The rows of the hinted screens at `.background`, in the order hinted, within `room` rows
    /// (what `maxRows` leaves after the window, whose rows come first and keep their priority).
    private func hinted(_ state: State, room: Int) -> [(row: Int, priority: LoadPriority)] {
        let height = state.screen
        guard height > 0, !state.hints.isEmpty else { return [] }
        var budget = max(0, room)
        var rows: [(row: Int, priority: LoadPriority)] = []
        for top in state.hints where budget > 0 {
            let (end, overflow) = top.addingReportingOverflow(min(height, budget))
            let screen = top ..< (overflow ? Int.max : end)
            budget -= screen.count
            rows += screen.map { ($0, .background) }
        }
        return rows
    }

    /// The window's rows around `visible`: visible first, then the prefetches, by the policy.
    private func window(around visible: Range<Int>, moved: Bool, _ state: inout State) -> [(row: Int, priority: LoadPriority)] {
        if state.policy == .adaptive {
            return state.adaptive.plan(visible: visible, down: state.direction == .down, maxRows: state.maxRows, moved: moved, applied: state.applied)
        }

        let ahead = min(state.ahead, state.maxRows - visible.count)
        let behind = min(state.behind, state.maxRows - visible.count - ahead)
        // Saturating bounds: a window near Int.max or Int.min is cut at the end of the integers.
        func after(_ count: Int) -> Range<Int> {
            let (end, overflow) = visible.upperBound.addingReportingOverflow(count)
            return visible.upperBound ..< (overflow ? Int.max : end)
        }
        func before(_ count: Int) -> Range<Int> {
            let (start, overflow) = visible.lowerBound.subtractingReportingOverflow(count)
            return (overflow ? Int.min : start) ..< visible.lowerBound
        }
        // While moving, the rows at the leading edge stay on screen longest: they go first, and the
        // rows about to leave go last. At rest, reading order.
        let leadingFirst = moved && state.direction == .down
        var wanted: [(row: Int, priority: LoadPriority)] = (leadingFirst ? Array(visible.reversed()) : Array(visible)).map { ($0, .visible) }
        switch state.direction {
        case .down:
            wanted += after(ahead).map { ($0, .prefetch) }
            wanted += before(behind).reversed().map { ($0, .prefetch) }
        case .up:
            wanted += before(ahead).reversed().map { ($0, .prefetch) }
            wanted += after(behind).map { ($0, .prefetch) }
        }
        return wanted
    }
}

/// What a ``RowPrefetcher`` starts with (its type is generic: a stored static cannot live there).
enum RowPrefetcherDefaults {
    /// ``RowPrefetcher/maxRows`` until it is set.
    static let maxRows = 4_096
}
