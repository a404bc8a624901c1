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
///   known; meanwhile the rows on screen are `.loading` (``loadStates`` `refresh` too), and show
///   the walk's failure if a page of it fails. A window past an end not known yet (a source that
///   says no count, after a jump) finds the end by bisection between the rows known and the empty
///   page. A walk's page or a probe loads with no prefetch around it; the window's pages that can
///   be loaded already (by offset) load beside a walk.
/// - **Refresh.** ``refresh()`` starts a new generation: rows on screen keep their old items (shown
///   as stale) until the new generation's visible pages arrive — those first; the rest only as the
///   user moves there. A refreshed page that gives the next page another cursor than before (a
///   feed whose newest items changed) makes the pages after it load again. ``refresh(after:)``
///   does the same for the rows after one (a growing log), and ``follow(every:)`` polls it,
///   without moving the window. A page that shows the list goes on past where another page said it
///   ended (their answers crossed while it grew: a count or rows past the end page, or past an
///   empty page) makes that page load again, so the rows past it can load.
/// - **Caching.** A `pageCache` (a ``MemoryStorage``, or a ``DiskStorage`` through `codable`) keeps
///   pages across runs: a second run shows the pages it saw at once, as stale, and loads them again.
/// - **Details.** ``detail(storage:processor:maxConcurrent:ahead:key:)`` gives each visible row's detail (a diff
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
    let machine: Locked<PagedRowsStateMachine<Cursor>>
    /// Applies the window, one caller at a time (the latest rows win).
    let windows = SerialDrain<Void>()
    /// Tells the details the visible rows, one caller at a time.
    let detailsDrain = SerialDrain<Void>()
    /// Tells the listeners the pages that changed, one caller at a time.
    let notices = SerialDrain<[Notice]>()
    let listeners = Locked(Listeners())
    let following = Locked<Task<Void, Never>?>(nil)
    /// The kinds of contract breach already reported (each is reported once).
    let breachesReported = Locked(Set<String>())

    /// One of the rows' listeners: each is told every change, in the order they were added.
    enum Listener {
        /// Added with ``observe(_:)``.
        case observer(@Sendable (PagedRowsChange) -> Void)
        /// A ``subscribe()`` reader's buffer, by page number.
        case subscription(ChangeSubscription<Int>)
        /// ``onChange``: an adapter that calls whatever it holds when told.
        case onChange
    }

    struct Listeners {
        var list = ListenerList<Listener>()
        var onChange: (@Sendable (PagedRowsChange) -> Void)?
        var onChangeID: UInt64?
        var details: [UInt64: @Sendable (Range<Int>?) -> Void] = [:]
        var nextDetail: UInt64 = 0
        /// The errors to hand subscribers with their page's change, newest per page.
        var errors: [Int: any Error] = [:]
    }

    /// The shortest interval of ``follow(every:)``.
    public static var shortestFollowInterval: Duration { .milliseconds(100) }

    /// Creates rows over `source`.
    ///
    /// - Parameters:
    ///   - source: where the pages come from.
    ///   - configuration: page size, prefetch distance, memory bound, jump threshold.
    ///   - pageCache: where pages are also kept, by page number, so a later run (or a refresh) shows
    ///     them at once as stale while they load again; `nil` (the default) for none. Pages another
    ///     page size made are not shown (their numbers meant other rows), nor is a last page after
    ///     the first (it cannot tell which size made it): those load first.
    ///   - maxConcurrentLoads: pages loaded at once; 2 by default.
    ///   - retryPolicy: how long a failed page waits before it is tried again; the default by default.
    public convenience init(
        source: Source,
        configuration: PagingConfiguration = PagingConfiguration(),
        pageCache: (any Storage<Int, Page<Cursor, Item>>)? = nil,
        maxConcurrentLoads: Int = 2,
        retryPolicy: RetryPolicy = .default
    ) {
        self.init(
            source: source, configuration: configuration, pageCache: pageCache, maxConcurrentLoads: maxConcurrentLoads,
            retryPolicy: retryPolicy, executor: nil, retrySleep: { try await Saturating.sleep(until: $0, on: ContinuousClock()) }
        )
    }

    /// `executor`: where page loads run; `retrySleep`: how the pages' retry timer waits (a test
    /// holds both until it says).
    init(
        source: Source,
        configuration: PagingConfiguration,
        pageCache: (any Storage<Int, Page<Cursor, Item>>)?,
        maxConcurrentLoads: Int,
        retryPolicy: RetryPolicy,
        executor: (any TaskExecutor)?,
        retrySleep: @escaping @Sendable (ContinuousClock.Instant) async throws -> Void
    ) {
        self.source = source
        self.configuration = configuration
        let settings = PagedRowsStateMachine<Cursor>.Settings(configuration, jumps: source is any OffsetPageSource)
        let store = PageStore<Cursor, Item>(cache: pageCache, limit: configuration.maxResident, pageSize: configuration.pageSize)
        self._store = store
        let size = configuration.pageSize
        let breaches = LateBound<any PageContractBreach, Void>()
        let loader = AutoProcessor<PageKey<Cursor>, Page<Cursor, Item>>(maxConcurrent: maxConcurrentLoads, executor: executor) { key in
            try await Self.load(key, from: source, size: size) { breaches($0) }
        }
        pages = Avenue(storage: store, processor: loader, callbackMode: .completingThread, retryPolicy: retryPolicy, now: { .now }, sleep: retrySleep)
        machine = Locked(PagedRowsStateMachine(settings: settings))
        let resolver = KeyResolver<Cursor>()
        prefetcher = RowPrefetcher(avenue: pages, ahead: settings.aheadPages, behind: settings.behindPages) { resolver.key(for: $0) }
        resolver.set { [weak self] number in self?.machine.withLock { $0.key(for: number) } }
        store.onStore { [weak self] key, page in self?.stored(page, for: key) }
        breaches.set { [weak self] breach in self?.report(breach) }
        // A listener of its own, the first: `onStateChange` is the user's slot (setting it once
        // unhooked the paging).
        pages.observe { [weak self] event in self?.pageChanged(event.index) }
    }

    deinit {
        following.withLock { $0 }?.cancel()
        for case .subscription(let buffer) in listeners.withLock({ $0.list.entries.map(\.listener) }) { buffer.finish() }
    }

    // MARK: Reading

    /// How many rows there are: exact once the source said or the end was loaded, else at least the
    /// rows loaded so far.
    public var count: RowCount {
        machine.withLock { $0.count }
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
    /// being replaced, `.loading`, `.failed` with when it is tried again), or `.empty`. A row on
    /// screen whose page waits for the list to be walked to it (a cursor source shown first far
    /// from its start) is `.loading` while the walk goes on, and `.failed` when a page of the walk
    /// failed.
    public func state(at row: Int) -> ItemState {
        guard row >= 0 else { return .empty }
        let number = row / configuration.pageSize
        let assigned = pages.state(at: number)
        guard case .empty = assigned else { return assigned }
        // A page held that has the row shows it. One that does not (an empty page from before the
        // list grew, kept while the rows after it wait for a walk) is not this row's load.
        if let page = _store.anyPage(number), row % configuration.pageSize < page.items.count { return .loaded }
        return walkState(ofPage: number) ?? .empty
    }

    /// What visible page `number` shows while it waits for a walk: `.loading`, or the failure of the
    /// walk's page; `nil` if it waits for none (or the walk's page is not asked for: stopped).
    private func walkState(ofPage number: Int) -> ItemState? {
        guard let leading = machine.withLock({ $0.walkPage(toReach: number) }) else { return nil }
        switch pages.state(at: leading) {
        case .failed(let error, let retryAt): return .failed(error, retryAt: retryAt)
        case .empty: return _store.anyPage(leading) == nil ? nil : .loading  // loaded: the next step is being asked
        default: return .loading
        }
    }

    /// Whether pages are loading, failed or ended, for the visible rows and either side of them.
    public var loadStates: PageLoadStates {
        let size = configuration.pageSize
        let (visible, visiblePages, endPage) = machine.withLock { ($0.visible, $0.visiblePages, $0.endPage) }
        guard let visible, let visiblePages else { return PageLoadStates(refresh: .idle, before: .idle, after: .idle) }
        let first = visiblePages.lowerBound, last = max(first, max(visible.lowerBound, visible.upperBound - 1) / size)
        func combined(_ numbers: some Sequence<Int>) -> PageLoadState {
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
        var refresh = combined(visiblePages)
        // The rows on screen wait for a walk to reach them: they are what is being loaded. Each
        // page is asked once: a walk can move between two asks (`lazy.compactMap(...).first` asks
        // twice and traps when the second answer is nil).
        if case .idle = refresh {
            for page in visiblePages {
                guard let waiting = walkState(ofPage: page) else { continue }
                refresh = waiting.error.map { .failed($0) } ?? .loading
                break
            }
        }
        return PageLoadStates(refresh: refresh, before: before, after: after)
    }

    /// Pages in memory now, and the rows they hold.
    public var resident: (pages: Int, rows: Int) {
        _store.residentSize
    }

    // MARK: Driving

    /// The list now shows `rows`: loads their pages and those within the prefetch distance, and
    /// releases the pages of rows that left. Call it on every scroll step, jump or resize. A range
    /// wider than ``PagingConfiguration/maxResident`` allows is cut to its first rows.
    public func show(_ rows: Range<Int>) {
        machine.withLock { $0.show(rows) }
        applyWindow()
    }

    /// Applies the window the machine plans, unless another caller is applying one, which then
    /// applies the latest before it returns (so an older window never wins).
    private func applyWindow() {
        windows.submit({ $0 = () }) { _ in
            let plan = machine.withLock { $0.plan() }
            if let prefetch = plan.prefetch {
                // Protected before their loads start: a page that arrives before the window is
                // protected below must not be dropped as far from the old one (its row would stay
                // loaded in the page avenue with nothing in the store, for ever).
                let around = max(prefetcher.ahead, prefetcher.behind)
                let reach = max(0, Saturating.add(prefetch.lowerBound, -around)) ..< Saturating.add(prefetch.upperBound, around)
                _store.protect(arriving: [reach, plan.visiblePages])
                prefetcher.show(prefetch)
            } else if !plan.alone.isEmpty {
                // On the way to the window: no prefetch around a probe or a walk's page, which
                // loaded pages nobody shows (a jump past an unknown end cost about three times the
                // loads with a prefetch of three pages).
                _store.protect(arriving: plan.alone.map { $0 ..< $0 + 1 } + [plan.visiblePages])
                prefetcher.showAlone(plan.alone)
            } else {
                prefetcher.stop()
            }
            _store.protect(Set(prefetcher.window.keys).union(plan.visiblePages), center: plan.center)
            refreshDetails()
        }
    }

    /// Releases every page load and detail load; a later ``show(_:)`` starts again. Loaded pages stay.
    public func stop() {
        machine.withLock { $0.show(nil) }
        applyWindow()
    }

    /// Loads again, at once, the pages of the window whose load failed, whatever their wait: for a
    /// "try again" key. A page that failed for good (``PermanentError``, or too many times) is
    /// loaded again only by this or by ``refresh()``; moving the list does not.
    public func retry() {
        for number in prefetcher.window.keys.sorted() where pages.state(at: number).error != nil {
            pages.retry(at: number)
        }
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

    /// Calls ``refresh(after:)`` for the last known row every `interval` (at least
    /// ``shortestFollowInterval``) until ``stopFollowing()``: `tail -f` for a growing source.
    public func follow(every interval: Duration) {
        let interval = max(interval, Self.shortestFollowInterval)
        let task = Task { [weak self] in
            let clock = ContinuousClock()
            while !Task.isCancelled {
                do { try await Saturating.sleep(for: interval, on: clock) } catch { return }
                guard let self, !Task.isCancelled else { return }
                self.refresh(after: max(0, self.count.value - 1))
            }
        }
        let previous = following.withLock { following -> Task<Void, Never>? in
            defer { following = task }
            return following
        }
        previous?.cancel()
    }

    /// Stops ``follow(every:)``.
    public func stopFollowing() {
        let task = following.withLock { following -> Task<Void, Never>? in
            defer { following = nil }
            return following
        }
        task?.cancel()
    }

    /// Called with the rows whose page changed (loaded, failed, cancelled) and the new count, and
    /// with a page source's contract breach (``PagedRowsChange/error``).
    /// Runs where the page avenue's callbacks run. One slot, for the simple case: setting it
    /// replaces the handler before; it is an adapter over the rows' listeners (``observe(_:)`` adds
    /// any number), told in the place it was first set.
    public var onChange: (@Sendable (PagedRowsChange) -> Void)? {
        get { listeners.withLock { $0.onChange } }
        set {
            // The handler replaced is released after the lock: its captures' deinit is user code.
            let replaced = listeners.withLock { listeners in
                defer { listeners.onChange = newValue }
                if newValue != nil, listeners.onChangeID == nil {
                    listeners.onChangeID = listeners.list.add(.onChange)
                } else if newValue == nil, let id = listeners.onChangeID {
                    listeners.list.remove(id)
                    listeners.onChangeID = nil
                }
                return listeners.onChange
            }
            _ = replaced
        }
    }

    /// Tells `observer` every change from now on — the rows whose page loaded, failed or was
    /// cancelled with the count when it is told, or a page source's contract breach — until the
    /// returned observation is cancelled or the rows are gone. Any number of observers may be added;
    /// they are told in the order they were added, where the page avenue's callbacks run, one change
    /// at a time: a change made while another is being told is told next, by the same thread, so the
    /// last change an observer gets carries the current count.
    @discardableResult
    public func observe(_ observer: @escaping @Sendable (PagedRowsChange) -> Void) -> ChangeObservation {
        let id = listeners.withLock { $0.list.add(.observer(observer)) }
        return ChangeObservation { [weak self] in
            _ = self?.listeners.withLock { $0.list.remove(id) }
        }
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
    ///
    /// `storage`, `processor` and `maxConcurrent` are the detail avenue's, as in
    /// ``Avenue/init(storage:processor:maxConcurrent:callbackMode:retryPolicy:)``.
    public func detail<Key: Hashable & Sendable, Value: Sendable>(
        storage: some Storage<Key, Value>,
        processor: some Processor<Key, Value>,
        maxConcurrent: Int? = nil,
        ahead: Int = 0,
        key: @escaping @Sendable (Item) -> Key?
    ) -> Avenue<Int, Key, Value> {
        let avenue = Avenue<Int, Key, Value>(storage: storage, processor: processor, maxConcurrent: maxConcurrent)
        let prefetcher = RowPrefetcher(avenue: avenue, ahead: ahead, behind: 0) { [weak self] row in
            self?.item(at: row).flatMap(key)
        }
        listeners.withLock { listeners in
            listeners.nextDetail &+= 1
            listeners.details[listeners.nextDetail] = { rows in
                if let rows { prefetcher.show(rows) } else { prefetcher.stop() }
            }
        }
        if let rows = machine.withLock({ $0.visible }) { prefetcher.show(rows) }
        return avenue
    }

    // MARK: Internals

    /// The most follow-up requests made to complete a short page.
    static var completionRequests: Int { 8 }

    /// Loads one page and makes it whole: at most `size` items, and `size` unless it is the last
    /// (a short page is completed from the pages after it, asked with its cursor). What the
    /// source got wrong is handed to `breach`.
    static func load(
        _ key: PageKey<Cursor>, from source: Source, size: Int, breach: @Sendable (any PageContractBreach) -> Void
    ) async throws -> Page<Cursor, Item> {
        var page: Page<Cursor, Item>
        switch key.origin {
        case .start:
            page = try await source.page(PageRequest(position: .start, size: size))
        case .after(let cursor):
            page = try await source.page(PageRequest(position: .after(cursor), size: size))
        case .offset:
            // Offset keys are only made for offset sources, whose cursor type is `Cursor`.
            guard let offsets = source as? any OffsetPageSource,
                  let loaded = try await offsets.erasedPage(at: key.number * size, size: size) as? Page<Cursor, Item>
            else { preconditionFailure("Invalid state: an offset load of a source that cannot start anywhere") }
            page = loaded
        }
        if case .after(let asked) = key.origin, page.cursorAfter == asked, page.items.count >= size {
            // A full page with the cursor it was asked with: asked again, the source would give this
            // page again, for ever (an API that ignores its cursor parameter does). The list ends
            // here, as a scan's walk ends (`CursorWalk`); a jump past it walked on without end. (A
            // short one is a short page: completed if it can be, else the end, and reported.)
            page.cursorAfter = nil
            page.itemsAfter = nil
            breach(PageSourceLoopError(page: key.number, loopsTo: key.number))
        }
        if page.items.count > size {
            breach(PageSourceError.tooManyItems(page: key.number, asked: size, got: page.items.count))
            page.items.removeLast(page.items.count - size)
        }
        var requests = 0
        while page.items.count < size, let cursor = page.cursorAfter, requests < completionRequests {
            try Task.checkCancellation()
            requests += 1
            let missing = size - page.items.count
            let more = try await source.page(PageRequest(position: .after(cursor), size: missing))
            page.items += more.items.prefix(missing)
            page.cursorAfter = more.cursorAfter
            page.itemsAfter = more.itemsAfter
            if more.items.count > missing { breach(PageSourceError.tooManyItems(page: key.number, asked: missing, got: more.items.count)) }
            if more.items.isEmpty { break }
        }
        if page.items.count < size, page.cursorAfter != nil {
            breach(PageSourceError.shortPage(page: key.number, asked: size, got: page.items.count))
            page.cursorAfter = nil  // the list ends here: rows that cannot be numbered are not shown
            page.itemsAfter = nil
        }
        if let after = page.itemsAfter, after < 0 {
            breach(PageSourceError.negativeItemsAfter(page: key.number, value: after))
            page.itemsAfter = nil
        }
        return page
    }

    private func refresh(fromPage page: Int) {
        machine.withLock { $0.refresh(fromPage: page) }
        applyWindow()
    }

    /// A page arrived (in the store, before its load completes and its rows are told): learn its
    /// cursor and the count, and walk on if the window is past it — before the load leaves the
    /// table, so the list never looks idle in the middle of a walk.
    func stored(_ page: Page<Cursor, Item>, for key: PageKey<Cursor>) {
        let outcome = machine.withLock {
            $0.stored(key, itemCount: page.items.count, cursorAfter: page.cursorAfter, itemsAfter: page.itemsAfter)
        }
        if let loopsTo = outcome.loopsBackTo { report(PageSourceLoopError(page: key.number, loopsTo: loopsTo)) }
        applyWindow()
        // A page loaded for nobody (its rows scrolled away first) tells no row, yet may change the
        // count — that its end was reached, say — which a reader waiting for the count must hear.
        if outcome.countChanged { notify(key.number) }
    }

    /// The page avenue told `number`'s row: its items are readable (details can load), tell the
    /// listener. (A failure does not show the window again: the page waits for its retry.)
    private func pageChanged(_ number: Int) {
        refreshDetails()
        notify(number, error: pages.state(at: number).error)
    }

    /// A page source broke the contract: told once per kind of breach.
    private func report(_ breach: any PageContractBreach) {
        let kind = String(describing: breach).prefix(24)
        guard breachesReported.withLock({ $0.insert(String(kind)).inserted }) else { return }
        notify(breach.page, error: breach)
    }

    /// Tells every listener (``observe(_:)``, ``onChange``, ``subscribe()``) that page `number` changed.
    /// One caller tells at a time, in the order the changes came, each with the count read when it
    /// is told: changes made on two threads at once can never leave an observer on the older count.
    private func notify(_ number: Int, error: (any Error)? = nil) {
        listeners.withLock { listeners in
            if let error { listeners.errors[number] = error } else { listeners.errors[number] = nil }
        }
        notices.submit({ pending in
            var all = pending.take() ?? []  // taken, so the append does not copy
            all.append(Notice(page: number, error: error))
            pending = all
        }) { batch in
            for notice in batch { tell(notice) }
        }
    }

    /// A page's change waiting to be told.
    struct Notice: Sendable {
        let page: Int
        let error: (any Error)?
    }

    private func tell(_ notice: Notice) {
        let size = configuration.pageSize
        let start = Saturating.multiply(notice.page, size)
        let (list, onChange) = listeners.withLock { ($0.list.entries, $0.onChange) }
        let change = PagedRowsChange(rows: start ..< Saturating.add(start, size), count: count, error: notice.error)
        let event = AvenueChanges<Int>.Tagged(event: AvenueEvent(index: notice.page, change: .loaded), ticket: 0)
        for (_, listener) in list {
            switch listener {
            case .observer(let observer): observer(change)
            case .subscription(let buffer): buffer.yield(event)
            case .onChange: onChange?(change)
            }
        }
    }

    /// The error last reported with page `number`'s change, for ``subscribe()``'s readers.
    func error(ofPage number: Int) -> (any Error)? {
        listeners.withLock { $0.errors[number] }
    }

    /// Tells the details the visible rows (none after `stop`), read when they are told: one caller
    /// tells them at a time and tells them again if the rows changed meanwhile, so a window read
    /// before a newer `show` never reaches them after it.
    private func refreshDetails() {
        detailsDrain.submit({ $0 = () }) { _ in
            let visible = machine.withLock { $0.visible }
            let details = listeners.withLock { Array($0.details.values) }
            for detail in details { detail(visible) }
        }
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
    /// Why the page failed to load, or how its source broke the paging contract
    /// (``PageSourceError``, ``PageSourceLoopError``, told once per kind); `nil` for a page that loaded.
    public let error: (any Error)?

    /// A change.
    public init(rows: Range<Int>, count: RowCount, error: (any Error)? = nil) {
        self.rows = rows
        self.count = count
        self.error = error
    }
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
