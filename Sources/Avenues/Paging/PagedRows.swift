/// Rows by index over a ``PageSource``: a list whose rows come a page at a time, whose length is
/// unknown until its end, kept in bounded memory, that jumps straight to any row when the source can
/// start anywhere.
///
/// Drive it like a ``RowPrefetcher`` — ``show(_:)`` whenever the visible rows change — and read it
/// synchronously from a render loop: ``count`` (exact, or "at least" while the end has not been
/// seen), ``item(at:)``, ``state(at:)``.
///
/// - **Pages load through the core engine.** A page is a key of an ``Avenue`` over page numbers: one
///   load per page however many rows want it, the pages of visible rows at `.visible` and the next
///   ones (``PagingConfiguration/prefetchDistance`` rows in the scroll direction) at `.prefetch`,
///   cancelled when the rows that wanted them scroll away, failures never cached and retried after a
///   wait (``RetryPolicy``). The first screen loads ``PagingConfiguration/initialLoadSize`` rows.
/// - **Bounded memory.** At most ``PagingConfiguration/maxResident`` rows' pages are kept; beyond, the
///   pages farthest from the window go first, never one inside the window and its prefetch distance.
///   Memory follows `maxResident`, not the length of the list.
/// - **Jumps.** With an ``OffsetPageSource``, a window farther than
///   ``PagingConfiguration/jumpThreshold`` rows from the pages that can be walked to loads its own
///   pages directly (G to the end of a 10-million-row list asks for one page), and the pages
///   skipped are never requested. Other sources are walked, page after page, from the last page
///   known.
/// - **Refresh.** ``refresh()`` starts a new generation: rows on screen keep their old items (shown
///   as stale) until the new generation's visible pages arrive — those first; the rest only as the
///   user moves there. ``refresh(after:)`` does the same for the rows after one (a growing log), and
///   ``follow(every:)`` polls it, without moving the window.
/// - **Caching.** A `pageCache` (a ``MemoryStorage``, or a ``DiskStorage`` through `codable`) keeps
///   pages across runs: a second run shows the pages it saw at once, as stale, and loads them again.
/// - **Details.** ``detail(storage:processor:ahead:key:)`` gives each visible row's detail (a diff
///   stat, a thumbnail) its own avenue, loaded for the rows on screen only and cancelled off screen.
///
/// ```swift
/// let commits = PagedRows(source: GitLog(repository: "."))
/// commits.show(0..<40)                 // the first screen: 3 pages, then prefetch
/// print(commits.count)                  // "≥ 150" until the end is seen, if the source cannot say
/// let row = commits.item(at: 7)         // nil until its page arrives
/// ```
///
/// Thread-safe; callbacks follow ``Avenue``'s rules (never concurrent, may call back in).
public final class PagedRows<Source: PageSource>: Sendable {
    /// A row.
    public typealias Item = Source.Item
    /// What a page gives to reach the next.
    public typealias Cursor = Source.Cursor

    /// The source of the pages.
    public let source: Source
    /// How pages are loaded and kept.
    public let configuration: PagingConfiguration
    /// The avenue whose rows are page numbers (for diagnostics: its statistics count page loads).
    public let pages: Avenue<Int, PageKey<Cursor>, Page<Cursor, Item>>

    @usableFromInline let _store: PageStore<Cursor, Item>
    let prefetcher: RowPrefetcher<PageKey<Cursor>, Page<Cursor, Item>>
    let state: Locked<State>
    let listeners = Locked(Listeners())
    /// Whether the source can start at any offset.
    let jumps: Bool

    struct State {
        /// Page number → generation, as ranges starting at a page: the last entry whose `fromPage`
        /// is at or below a page gives its generation.
        var generations: [(fromPage: Int, generation: UInt64)] = [(0, 0)]
        var nextGeneration: UInt64 = 1
        /// How to reach page `n` by cursor (the cursor the page before gave).
        var cursors: [Int: Cursor] = [:]
        /// The highest page reachable by walking cursors from the first page.
        var walkedTo = 0
        /// The last page, once a page said nothing follows it.
        var endPage: Int?
        /// The exact number of rows, once known.
        var total: Int?
        /// The most rows there can be: an empty last page loaded past the rows known (a jump or a
        /// prefetch beyond the unknown end) says only that the list ends at or before its start.
        var endAtMost: Int?
        /// Rows known to exist (the end of the farthest page loaded).
        var knownRows = 0
        /// The visible rows last shown.
        var visible: Range<Int>?
        var shownBefore = false
        /// The first screen and the page its initial load reaches, while the list still shows it.
        var initial: (rows: Range<Int>, endPage: Int)?
        /// The window must be applied again (new rows shown, a cursor learned, a refresh).
        var dirty = false
        /// Set while a caller applies windows; others leave theirs to it (the latest one wins).
        var applying = false
        /// The details must be told the visible rows again; set while a caller tells them.
        var detailsPending = false
        var tellingDetails = false
        var following: Task<Void, Never>?
    }

    struct Listeners {
        var onChange: (@Sendable (PagedRowsChange) -> Void)?
        var details: [UInt64: @Sendable (Range<Int>?) -> Void] = [:]
        var nextDetail: UInt64 = 0
        /// The ``subscribe()`` subscriptions, by page number.
        var subscriptions: [UInt64: ChangeSubscription<Int>] = [:]
        var nextSubscription: UInt64 = 0
    }

    /// Creates rows over `source`.
    ///
    /// - Parameters:
    ///   - source: where the pages come from.
    ///   - configuration: page size, prefetch distance, memory bound, jump threshold.
    ///   - pageCache: where pages are also kept, by page number, so a later run (or a refresh) shows
    ///     them at once as stale while they load again; `nil` (the default) for none.
    ///   - maxConcurrentLoads: pages loaded at once; 2 by default.
    ///   - retryPolicy: how long a failed page waits before it is tried again; the default by default.
    public init(
        source: Source,
        configuration: PagingConfiguration = PagingConfiguration(),
        pageCache: (any Storage<Int, Page<Cursor, Item>>)? = nil,
        maxConcurrentLoads: Int = 2,
        retryPolicy: RetryPolicy = .default
    ) {
        self.source = source
        self.configuration = configuration
        jumps = source is any OffsetPageSource
        let store = PageStore<Cursor, Item>(cache: pageCache)
        self._store = store
        let size = configuration.pageSize
        let loader = AutoProcessor<PageKey<Cursor>, Page<Cursor, Item>>(maxConcurrent: maxConcurrentLoads) { key in
            try await Self.load(key, from: source, size: size)
        }
        pages = Avenue(storage: store, processor: loader, retryPolicy: retryPolicy)
        state = Locked(State())
        let ahead = (configuration.prefetchDistance + size - 1) / size
        let behind = (configuration.prefetchDistance / 4 + size - 1) / size
        let resolver = KeyResolver<Cursor>()
        prefetcher = RowPrefetcher(avenue: pages, ahead: ahead, behind: behind) { resolver.key(for: $0) }
        resolver.set { [weak self] number in self.flatMap { rows in rows.state.withLock { rows.key(for: number, in: $0) } } }
        store.onStore { [weak self] key, page in self?.stored(page, for: key) }
        pages.onStateChange = { [weak self] number in self?.pageChanged(number) }
    }

    deinit {
        state.withLock { $0.following?.cancel() }
        for subscription in listeners.withLock({ Array($0.subscriptions.values) }) { subscription.finish() }
    }

    // MARK: Reading

    /// How many rows there are: exact once the source said or the end was loaded, else at least the
    /// rows loaded so far.
    public var count: RowCount {
        state.withLock { state in
            if let total = state.total { return .exact(total) }
            return .atLeast(state.knownRows)
        }
    }

    /// The item of `row`, or `nil` when its page is not loaded (or `row` does not exist). A page from
    /// an older generation or the page cache is used while its fresh copy loads.
    @inlinable
    public func item(at row: Int) -> Item? {
        guard row >= 0 else { return nil }
        let size = configuration.pageSize
        guard let page = _store.anyPage(row / size) else { return nil }
        let offset = row % size
        return offset < page.items.count ? page.items[offset] : nil
    }

    /// What `row` shows: its page's state (`.loaded`, `.stale` while a refresh or a cached page is
    /// being replaced, `.loading`, `.failed` with when it is tried again), or `.empty`.
    public func state(at row: Int) -> ItemState {
        guard row >= 0 else { return .empty }
        let number = row / configuration.pageSize
        let assigned = pages.state(at: number)
        if case .empty = assigned, _store.anyPage(number) != nil { return .loaded }
        return assigned
    }

    /// Whether pages are loading, failed or ended, for the visible rows and either side of them.
    public var loadStates: PageLoadStates {
        let size = configuration.pageSize
        let (visible, endPage) = state.withLock { ($0.visible, $0.endPage) }
        guard let visible else { return PageLoadStates(refresh: .idle, before: .idle, after: .idle) }
        let first = visible.lowerBound / size, last = max(first, (visible.upperBound - 1) / size)
        func combined(_ numbers: [Int]) -> PageLoadState {
            var result = PageLoadState.idle
            for number in numbers {
                switch pages.state(at: number) {
                case .failed(let error, _), .stale(false, let error?): return .failed(error)
                case .loading, .stale(true, _): result = .loading
                default: break
                }
            }
            return result
        }
        let window = prefetcher.window.keys
        let before = first == 0 ? PageLoadState.endReached : combined(window.filter { $0 < first })
        var after = combined(window.filter { $0 > last })
        // Nothing pending after the window, and the last page is here: the end is reached.
        if case .idle = after, let endPage, last >= endPage || _store.anyPage(endPage) != nil { after = .endReached }
        return PageLoadStates(refresh: combined(Array(first...last)), before: before, after: after)
    }

    /// Pages in memory now, and the rows they hold.
    public var resident: (pages: Int, rows: Int) {
        _store.residentSize
    }

    // MARK: Driving

    /// The list now shows `rows`: loads their pages and those within the prefetch distance, and
    /// releases the pages of rows that left. Call it on every scroll step, jump or resize.
    public func show(_ rows: Range<Int>) {
        apply { $0.visible = rows }
    }

    /// Changes the state, then applies the window — unless another caller is applying one, which
    /// then applies the latest state before it returns (so an older window never wins).
    private func apply(_ change: (inout State) -> Void) {
        let isFirst = state.withLock { state -> Bool in
            change(&state)
            state.dirty = true
            guard !state.applying else { return false }
            state.applying = true
            return true
        }
        guard isFirst else { return }
        while let (pageWindow, _) = state.withLock({ state in nextWindow(&state) }) {
            prefetcher.show(pageWindow)
            dropPages()
            refreshDetails()
        }
    }

    /// The page window for the latest visible rows, or `nil` (and no longer applying) when nothing
    /// changed since the last one.
    private func nextWindow(_ state: inout State) -> (Range<Int>, Range<Int>)? {
        guard state.dirty, let rows = state.visible else {
            state.applying = false
            return nil
        }
        state.dirty = false
        let size = configuration.pageSize
        let clamped = max(0, rows.lowerBound) ..< max(max(0, rows.lowerBound), rows.upperBound)
        let first = clamped.lowerBound / size
        var end = max(first + 1, (clamped.upperBound + size - 1) / size)
        // The first screen loads `initialLoadSize` rows, as long as the list still shows it.
        if state.initial == nil, !state.shownBefore {
            state.initial = (clamped, first + (configuration.initialLoadSize + size - 1) / size)
        } else if state.initial?.rows != clamped {
            state.initial = nil
        }
        state.shownBefore = true
        if let initial = state.initial { end = max(end, initial.endPage) }
        // A window past the pages that can be reached is walked to, from the last one reached,
        // unless the source can start there (then its pages are loaded directly).
        var start = first
        if first > 0, key(for: first, in: state) == nil { start = min(first, state.walkedTo) }
        return (start ..< end, clamped)
    }

    /// Releases every page load and detail load; a later ``show(_:)`` starts again. Loaded pages stay.
    public func stop() {
        state.withLock { $0.visible = nil }
        prefetcher.stop()
        refreshDetails()
    }

    /// Loads the list again: a new generation. The rows on screen keep showing their old items until
    /// the new generation's visible pages arrive (those load first); other pages load again only as
    /// the user moves to them. The count is kept until the new pages say otherwise.
    public func refresh() {
        refresh(fromPage: 0)
    }

    /// Loads the rows after `row` again (a new generation from `row`'s page on), for a list that grows
    /// at its end (a log, a stream): new items appear without moving the window the user reads.
    public func refresh(after row: Int) {
        refresh(fromPage: max(0, row) / configuration.pageSize)
    }

    /// Calls ``refresh(after:)`` for the last known row every `interval` until ``stopFollowing()``:
    /// `tail -f` for a growing source.
    public func follow(every interval: Duration) {
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                self.refresh(after: max(0, self.count.value - 1))
            }
        }
        let previous = state.withLock { state -> Task<Void, Never>? in
            defer { state.following = task }
            return state.following
        }
        previous?.cancel()
    }

    /// Stops ``follow(every:)``.
    public func stopFollowing() {
        state.withLock { state in
            state.following?.cancel()
            state.following = nil
        }
    }

    /// Called with the rows whose page changed (loaded, failed, cancelled) and the new count.
    /// Runs where the page avenue's callbacks run; never concurrently with itself.
    public var onChange: (@Sendable (PagedRowsChange) -> Void)? {
        get { listeners.withLock { $0.onChange } }
        set { listeners.withLock { $0.onChange = newValue } }
    }

    // MARK: Details

    /// An avenue for a detail of each row — a diff stat, a thumbnail, metrics — loaded for the
    /// visible rows (and `ahead` rows past them) as the list shows them, and cancelled when they
    /// scroll away. Its rows are the list's rows; `key` says what a row's item needs loaded (`nil`:
    /// nothing).
    ///
    /// ```swift
    /// let stats = commits.detail(storage: MemoryStorage(), processor: numstat) { $0.hash }
    /// let stat = stats.item(at: row)
    /// ```
    public func detail<Key: Hashable & Sendable, Value: Sendable>(
        storage: some Storage<Key, Value>,
        processor: some Processor<Key, Value>,
        ahead: Int = 0,
        key: @escaping @Sendable (Item) -> Key?
    ) -> Avenue<Int, Key, Value> {
        let avenue = Avenue<Int, Key, Value>(storage: storage, processor: processor)
        let prefetcher = RowPrefetcher(avenue: avenue, ahead: ahead, behind: 0) { [weak self] row in
            self?.item(at: row).flatMap(key)
        }
        listeners.withLock { listeners in
            listeners.nextDetail &+= 1
            listeners.details[listeners.nextDetail] = { rows in
                if let rows { prefetcher.show(rows) } else { prefetcher.stop() }
            }
        }
        if let rows = state.withLock({ $0.visible }) { prefetcher.show(rows) }
        return avenue
    }

    // MARK: Internals

    /// Loads one page.
    static func load(_ key: PageKey<Cursor>, from source: Source, size: Int) async throws -> Page<Cursor, Item> {
        switch key.origin {
        case .start:
            return try await source.page(PageRequest(position: .start, size: size))
        case .after(let cursor):
            return try await source.page(PageRequest(position: .after(cursor), size: size))
        case .offset:
            // Offset keys are only made for offset sources (`jumps`), whose cursor type is `Cursor`.
            guard let offsets = source as? any OffsetPageSource,
                  let page = try await offsets.erasedPage(at: key.number * size, size: size) as? Page<Cursor, Item>
            else { preconditionFailure("Invalid state: an offset load of a source that cannot start anywhere") }
            return page
        }
    }

    /// The key of page `number` now, if it can be loaded: the first page; a page whose cursor is
    /// known; or, with an offset source, a page far enough from the pages that can be walked to.
    func key(for number: Int, in state: State) -> PageKey<Cursor>? {
        guard number >= 0 else { return nil }
        if let end = state.endPage, number > end { return nil }
        if let total = state.total, number > 0, number * configuration.pageSize >= total { return nil }
        if let bound = state.endAtMost, number > 0, number * configuration.pageSize >= bound { return nil }
        let generation = state.generations.last { $0.fromPage <= number }?.generation ?? 0
        if number == 0 { return PageKey(generation: generation, number: 0, origin: .start) }
        if let cursor = state.cursors[number] { return PageKey(generation: generation, number: number, origin: .after(cursor)) }
        guard jumps else { return nil }
        // Walk when a page that can be walked from is within the jump threshold; else jump.
        let reach = configuration.jumpThreshold / configuration.pageSize
        let walkable = (max(0, number - reach) ..< number).contains { $0 == 0 || state.cursors[$0] != nil }
        return walkable ? nil : PageKey(generation: generation, number: number, origin: .offset)
    }

    private func refresh(fromPage page: Int) {
        state.withLock { state in
            let generation = state.nextGeneration
            state.nextGeneration &+= 1
            state.generations.removeAll { $0.fromPage >= page }
            state.generations.append((page, generation))
            if page == 0 { state.generations = [(0, generation)] }
            // The end may have moved: pages at and after `page` say again.
            if let end = state.endPage, end >= page { state.endPage = nil }
            if let total = state.total, total >= page * configuration.pageSize { state.total = nil }
            if let bound = state.endAtMost, bound >= page * configuration.pageSize { state.endAtMost = nil }
        }
        reshow()
    }

    /// A page arrived (in the store, before its load completes and its rows are told): learn its
    /// cursor and the count, and walk on if the window is past it — before the load leaves the
    /// table, so the list never looks idle in the middle of a walk.
    func stored(_ page: Page<Cursor, Item>, for key: PageKey<Cursor>) {
        let size = configuration.pageSize
        let countChanged = state.withLock { state -> Bool in
            let before = (state.total, state.knownRows)
            let start = key.number * size
            let end = start + page.items.count
            let pastTheRowsKnown = page.items.isEmpty && start > state.knownRows
            state.knownRows = max(state.knownRows, pastTheRowsKnown ? 0 : end)
            if let next = page.cursorAfter {
                state.cursors[key.number + 1] = next
                if state.walkedTo == key.number { state.walkedTo = key.number + 1 }
                if let after = page.itemsAfter { state.total = end + after }
            } else if pastTheRowsKnown {
                state.endAtMost = min(state.endAtMost ?? start, start)
            } else {
                state.endPage = key.number
                state.total = end
                state.knownRows = end
            }
            if let bound = state.endAtMost, state.total == nil, state.knownRows >= bound {
                // The rows known reach the bound: it was the end (or the list grew past it).
                if state.knownRows == bound { state.total = bound }
                state.endAtMost = nil
            }
            return before != (state.total, state.knownRows)
        }
        reshow()
        // A page loaded for nobody (its rows scrolled away first) tells no row, yet may change the
        // count — that its end was reached, say — which a reader waiting for the count must hear.
        if countChanged { notify(key.number) }
    }

    /// The page avenue told `number`'s row: its items are readable (details can load), tell the
    /// listener. (A failure does not show the window again: the page waits for its retry.)
    private func pageChanged(_ number: Int) {
        refreshDetails()
        notify(number)
    }

    /// Tells the ``onChange`` callback and every ``subscribe()`` reader that page `number` changed.
    private func notify(_ number: Int) {
        let size = configuration.pageSize
        let change = PagedRowsChange(rows: number * size ..< (number + 1) * size, count: count)
        let (onChange, subscriptions) = listeners.withLock { ($0.onChange, Array($0.subscriptions.values)) }
        onChange?(change)
        let event = AvenueChanges<Int>.Tagged(event: AvenueEvent(index: number, change: .loaded), ticket: 0)
        for subscription in subscriptions { subscription.yield(event) }
    }

    /// Applies the window again (its pages' keys may have changed: a cursor learned, a refresh).
    private func reshow() {
        apply { _ in }
    }

    /// Tells the details the visible rows (none after `stop`), read when they are told: one caller
    /// tells them at a time and tells them again if the rows changed meanwhile, so a window read
    /// before a newer `show` never reaches them after it.
    private func refreshDetails() {
        let isFirst = state.withLock { state -> Bool in
            state.detailsPending = true
            guard !state.tellingDetails else { return false }
            state.tellingDetails = true
            return true
        }
        guard isFirst else { return }
        while let visible = state.withLock({ state -> Range<Int>?? in
            guard state.detailsPending else {
                state.tellingDetails = false
                return nil
            }
            state.detailsPending = false
            return .some(state.visible)
        }) {
            tellDetails(visible)
        }
    }

    private func tellDetails(_ rows: Range<Int>?) {
        let details = listeners.withLock { Array($0.details.values) }
        for detail in details { detail(rows) }
    }

    /// Keeps at most `maxResident` rows' pages: drops those farthest from the window first, never one
    /// the prefetcher holds (the window and its prefetch distance).
    private func dropPages() {
        let protected = Set(prefetcher.window.keys)
        let center = state.withLock { $0.visible.map { $0.lowerBound / configuration.pageSize } } ?? 0
        _store.drop(keepingRows: configuration.maxResident, protected: protected, center: center)
    }
}

/// The prefetcher's page keys, which need the ``PagedRows`` that owns the prefetcher: set once it
/// exists.
final class KeyResolver<Cursor: Hashable & Sendable>: Sendable {
    private let resolve = LateBound<Int, PageKey<Cursor>?>()

    func set(_ resolve: @escaping @Sendable (Int) -> PageKey<Cursor>?) {
        self.resolve.set(resolve)
    }

    func key(for number: Int) -> PageKey<Cursor>? {
        resolve(number) ?? nil
    }
}

extension OffsetPageSource {
    /// `page(at:size:)` with its cursor type erased, for ``PagedRows``'s jumps.
    func erasedPage(at offset: Int, size: Int) async throws -> any Sendable {
        try await page(at: offset, size: size)
    }
}

/// Rows of a ``PagedRows`` whose page changed, and the count then.
public struct PagedRowsChange: Sendable {
    /// The rows of the page that changed (the last page may hold fewer).
    public let rows: Range<Int>
    /// The list's count after the change.
    public let count: RowCount
}

/// The key of a page in a ``PagedRows``'s avenue: its number in a generation (a refresh starts a new
/// one), and how it is reached. Two keys are equal when number and generation are.
public struct PageKey<Cursor: Hashable & Sendable>: Hashable, Sendable, CustomStringConvertible {
    /// How a page is loaded.
    public enum Origin: Sendable {
        /// The first page.
        case start
        /// After the cursor the page before gave.
        case after(Cursor)
        /// By offset, directly (a jump).
        case offset
    }

    /// The generation the page belongs to.
    public let generation: UInt64
    /// The page's number: rows `number × pageSize` onward.
    public let number: Int
    /// How it is loaded.
    public let origin: Origin

    /// Equal when number and generation are (however the page is reached).
    public static func == (lhs: PageKey, rhs: PageKey) -> Bool {
        lhs.number == rhs.number && lhs.generation == rhs.generation
    }

    /// Hashes number and generation.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(number)
        hasher.combine(generation)
    }

    /// `page 7 (generation 2)`.
    public var description: String { "page \(number) (generation \(generation))" }
}
