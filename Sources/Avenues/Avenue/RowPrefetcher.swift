/// Drives an ``Avenue`` from what a list shows: the visible rows first, a few rows ahead in the
/// scroll direction and a few behind, and nothing else.
///
/// Call ``show(_:)`` whenever the visible rows change (every scroll step, jump or resize). It
/// prepares the visible rows at `.visible` priority, the next `ahead` rows in the direction of the
/// last move and the `behind` rows on the other side at `.prefetch`, and cancels every row that left
/// that window — so a fling or a jump to the end cancels the work of rows the user skipped. While
/// the list moves, visible rows are queued from the leading edge (they stay on screen longest);
/// at rest, in reading order.
///
/// It is UI-free, so any front end (a TUI table, a pager, a test) can drive it, and thread-safe:
/// `show` may be called from any thread, including from the avenue's callbacks. When calls
/// overlap, the latest window wins. Releasing the prefetcher cancels its window.
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

    /// The avenue whose rows are prepared and cancelled.
    public let avenue: Avenue<Int, Key, Value>

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

    private let key: @Sendable (Int) -> Key?
    private let state: Locked<State>

    private struct State {
        var ahead: Int
        var behind: Int
        /// The rows prepared now, with the priority each was prepared at.
        var applied: [Int: LoadPriority] = [:]
        var lastVisible: Range<Int>?
        var direction = Direction.down
        /// The newest window asked for and not applied yet.
        var pending: Range<Int>?
        /// Set while some caller is applying windows; others leave theirs in `pending`.
        var applying = false
        var stopped = false
    }

    /// Creates a prefetcher.
    ///
    /// - Parameters:
    ///   - avenue: the avenue to drive; its rows are `Int` indices.
    ///   - ahead: rows to prefetch past the visible ones in the scroll direction; 40 by default
    ///     (about a screen). In the scroll simulation (`Benchmarks/README.md`) 40/10 wastes 0.30× the
    ///     work of loading visible rows only, 20/5 wastes 0.35× and 10/2 0.39×.
    ///   - behind: rows to prefetch on the other side; 10 by default.
    ///   - key: the key of a row, or `nil` for a row that does not exist or needs nothing loaded
    ///     (asked for rows past either end of the list too).
    public init(
        avenue: Avenue<Int, Key, Value>,
        ahead: Int = 40,
        behind: Int = 10,
        key: @escaping @Sendable (Int) -> Key?
    ) {
        precondition(ahead >= 0 && behind >= 0, "RowPrefetcher ahead and behind must be 0 or more")
        self.avenue = avenue
        self.state = Locked(State(ahead: ahead, behind: behind))
        self.key = key
    }

    deinit {
        let rows = state.withLock { Array($0.applied.keys) }
        for row in rows { avenue.cancel(at: row) }
    }

    /// The list now shows `rows`: prepares them and the rows around them, and cancels the rest.
    public func show(_ rows: Range<Int>) {
        let isFirst = state.withLock { state -> Bool in
            state.pending = rows
            guard !state.applying else { return false }
            state.applying = true
            return true
        }
        guard isFirst else { return }
        // Apply windows until none is pending. Only this caller changes the window meanwhile, so
        // keys are looked up and the avenue called outside the lock.
        while let wanted = state.withLock({ state in nextWindow(&state) }) {
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
            for row in cancel { avenue.cancel(at: row) }
            for (row, key, priority) in prepare { avenue.prepareItem(for: key, at: row, priority: priority) }
        }
    }

    /// Cancels every row of the current window. A later ``show(_:)`` starts again.
    public func stop() {
        let rows = state.withLock { state -> [Int] in
            let rows = Array(state.applied.keys)
            state.applied = [:]
            state.lastVisible = nil
            state.pending = nil
            return rows
        }
        for row in rows { avenue.cancel(at: row) }
    }

    /// The direction of the last move (`.down` until the list first moves).
    public var direction: Direction { state.withLock { $0.direction } }

    /// The rows in the current window, each with the priority it was prepared at.
    public var window: [Int: LoadPriority] { state.withLock { $0.applied } }

    // MARK: Planning

    /// The rows wanted for the pending window, in the order they should be prepared: visible rows
    /// top to bottom, then prefetches nearest first. `nil` when nothing is pending.
    private func nextWindow(_ state: inout State) -> [(row: Int, priority: LoadPriority)]? {
        guard let visible = state.pending else {
            state.applying = false
            return nil
        }
        state.pending = nil
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
        state.lastVisible = visible

        let (ahead, behind) = (state.ahead, state.behind)
        // While moving, the rows at the leading edge stay on screen longest: they go first, and the
        // rows about to leave go last. At rest, reading order.
        let leadingFirst = moved && state.direction == .down
        var wanted: [(row: Int, priority: LoadPriority)] = (leadingFirst ? Array(visible.reversed()) : Array(visible)).map { ($0, .visible) }
        switch state.direction {
        case .down:
            wanted += (visible.upperBound ..< visible.upperBound + ahead).map { ($0, .prefetch) }
            wanted += (visible.lowerBound - behind ..< visible.lowerBound).reversed().map { ($0, .prefetch) }
        case .up:
            wanted += (visible.lowerBound - ahead ..< visible.lowerBound).reversed().map { ($0, .prefetch) }
            wanted += (visible.upperBound ..< visible.upperBound + behind).map { ($0, .prefetch) }
        }
        return wanted
    }
}