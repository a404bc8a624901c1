/// Everything ``PagedRows`` decides, as a pure value: where the list is, what is known of its pages
/// (their cursors, the end, the count), the generations of refreshes, and which pages the window
/// needs now. It loads nothing and calls nobody; ``PagedRows`` feeds it events under its lock and
/// carries out the ``Plan`` it returns after leaving it.
///
/// Invariants:
/// - row `n` is on page `n / pageSize`; every number is computed without overflow, whatever a source
///   or a caller says (a count of `Int.max`, a window of `0 ..< Int.max`);
/// - a plan's pages — the visible pages and what the prefetcher holds around them — fit in
///   `maxResident` rows, plus one page while the list is walked to a window by cursors;
/// - a window that cannot be loaded directly is walked to from the **nearest** page whose key is
///   known below it, one page at a time (only that page is asked for), never from the start of the
///   list when a nearer page is known;
/// - the generations list holds at most ``maxGenerations`` entries, however often it is refreshed.
struct PagedRowsStateMachine<Cursor: Hashable & Sendable> {
    /// What the configuration says, in pages, with every product computed safely.
    struct Settings: Sendable {
        let pageSize: Int
        /// Pages prefetched past the visible ones, and on the other side.
        let aheadPages: Int
        let behindPages: Int
        /// Pages the first screen loads.
        let initialPages: Int
        let maxResidentRows: Int
        /// With an offset source: a page this many pages or fewer past a page that can be walked
        /// from is walked to; farther, it is loaded directly.
        let reachPages: Int
        /// Whether the source can start at any offset.
        let jumps: Bool
        /// The most visible pages in a window, so that it and its prefetch fit in `maxResidentRows`.
        let maxVisiblePages: Int

        init(_ configuration: PagingConfiguration, jumps: Bool) {
            let size = configuration.pageSize
            pageSize = size
            aheadPages = Self.pages(configuration.prefetchDistance, size)
            behindPages = Self.pages(configuration.prefetchDistance / 4, size)
            initialPages = max(1, Self.pages(configuration.initialLoadSize, size))
            maxResidentRows = configuration.maxResident
            // Checking more pages for a cursor than this would make every key a long search.
            reachPages = min(configuration.jumpThreshold / size, 1_024)
            self.jumps = jumps
            // A bound that saturated (a prefetch distance near Int.max) is no bound; otherwise the
            // configuration keeps it above the prefetch, and the subtraction cannot overflow. Either
            // way no more pages than the page prefetcher's window holds (``RowPrefetcher/maxRows``):
            // those beyond would never load, and a window of Int.max rows was planned page by page.
            let bound = configuration.maxResident == .max
                ? .max : max(1, configuration.maxResident / size - aheadPages - behindPages)
            maxVisiblePages = min(bound, Self.prefetcherPages)
        }

        /// The most pages the page prefetcher holds (its default ``RowPrefetcher/maxRows``).
        static var prefetcherPages: Int { RowPrefetcherDefaults.maxRows }

        /// The pages `rows` rows take, rounded up.
        static func pages(_ rows: Int, _ size: Int) -> Int {
            PagingConfiguration.pages(rows, size)
        }
    }

    /// What the window needs now.
    struct Plan: Equatable, Sendable {
        /// The pages to give the prefetcher as its visible range (it adds the prefetch around
        /// them), or `nil` when it is given ``alone`` or stopped.
        var prefetch: Range<Int>?
        /// Pages to load alone while the window cannot be loaded as a whole: the next page of a
        /// walk to it and the window's pages that can be loaded already, or a probe for an end not
        /// known yet. The pages around a walk's page or a probe are not the window's, nor where the
        /// list moves. Empty (and `prefetch` `nil`): stopped.
        var alone: [Int] = []
        /// The pages of the visible rows: kept in memory, whatever the bound.
        var visiblePages: Range<Int>
        /// The page the window centres on: pages farthest from it are dropped first.
        var center: Int
        /// The visible rows, for the details (`nil` once stopped).
        var visibleRows: Range<Int>?
    }

    /// What a stored page changed.
    struct Stored: Equatable, Sendable {
        /// The count changed (readers waiting for it must hear, even if no row was told).
        var countChanged = false
        /// The page's cursor was the one an earlier page gave (this page's number): the source
        /// loops, and the list ends at the page stored.
        var loopsBackTo: Int?
    }

    /// The most refresh generations kept; beyond, the oldest ranges merge into the next newer one
    /// (their pages load again when shown).
    static var maxGenerations: Int { 64 }

    let settings: Settings
    /// Page number → generation, as ranges starting at a page: the last entry whose `fromPage` is at
    /// or below a page gives its generation.
    private(set) var generations: [(fromPage: Int, generation: UInt64)] = [(0, 0)]
    private var nextGeneration: UInt64 = 1
    /// How to reach page `n` by cursor (the cursor the page before gave).
    private(set) var cursors: [Int: Cursor] = [:]
    /// Which page each cursor reaches, and the generation of the page that gave it: a page that
    /// gives the cursor of a page at or before it (a "next" link pointing back) would walk in a
    /// circle for ever. An entry whose page was refreshed since does not count.
    private var pageOfCursor: [Cursor: (page: Int, generation: UInt64)] = [:]
    /// The generation of the page that gave each page's cursor (`cursors[n]` came from page `n - 1`
    /// in `cursorGenerations[n]`).
    private var cursorGenerations: [Int: UInt64] = [:]
    /// The highest page reachable by walking cursors from the first page.
    private(set) var walkedTo = 0
    /// The last page, once a page said nothing follows it.
    private(set) var endPage: Int?
    /// The exact number of rows, once known.
    private(set) var total: Int?
    /// The most rows there can be: an empty page loaded past the rows known (a jump or a prefetch
    /// beyond the unknown end) says only that the list ends at or before its start.
    private(set) var endAtMost: Int?
    /// Rows known to exist (the end of the farthest page loaded).
    private(set) var knownRows = 0
    /// The visible rows last shown, clamped to rows that can exist.
    private(set) var visible: Range<Int>?
    private var shownBefore = false
    /// The first screen and the page its initial load reaches, while the list still shows it.
    private var initial: (rows: Range<Int>, endPage: Int)?
    /// The probe for an end not known yet that was asked for, until its page answers: it stays the
    /// probe while it lies in the range searched. Planned anew from each bound instead, pages of a
    /// window past the end that answered one by one each moved the probe by a page, cancelling the
    /// one that had started (2026-11-30: three probes started for one).
    private(set) var probe: (page: Int, generation: UInt64)?

    init(settings: Settings) {
        self.settings = settings
    }

    // MARK: Events

    /// The list shows `rows` (`nil`: nothing, after a stop).
    mutating func show(_ rows: Range<Int>?) {
        guard let rows else {
            visible = nil
            return
        }
        let lower = max(0, rows.lowerBound)
        visible = lower ..< max(lower, rows.upperBound)
    }

    /// A new generation from page `page` on: those pages load again when shown.
    mutating func refresh(fromPage page: Int) {
        var page = max(0, page)
        // From just past a full end page (`refresh(after:)` the last row, of a list whose last page
        // is full): whether anything follows is the end page's to say, and it said nothing did.
        // It loads again too; kept, it stayed the end while the count it gave was forgotten, and
        // nothing after it could ever load.
        let (first, overflows) = page.multipliedReportingOverflow(by: settings.pageSize)
        if !overflows, let end = endPage, end == page - 1, total == first {
            page = end
        }
        let generation = nextGeneration
        nextGeneration &+= 1
        if page == 0 {
            generations = [(0, generation)]
        } else {
            generations.removeAll { $0.fromPage >= page }
            generations.append((page, generation))
        }
        while generations.count > Self.maxGenerations {
            // The oldest range takes the next one's (newer) generation: its pages only load again.
            generations[1].fromPage = generations[0].fromPage
            generations.removeFirst()
        }
        // The end may have moved: pages at and after `page` say again.
        let (start, overflow) = page.multipliedReportingOverflow(by: settings.pageSize)
        if let end = endPage, end >= page { endPage = nil }
        if !overflow, let count = total, count >= start { total = nil }
        if !overflow, let bound = endAtMost, bound >= start { endAtMost = nil }
    }

    /// Page `key.number` arrived with `itemCount` items (a page the loader already made whole: at
    /// most `pageSize` items, fewer only when it is the last), its cursor and what it said follows.
    mutating func stored(_ key: PageKey<Cursor>, itemCount: Int, cursorAfter: Cursor?, itemsAfter: Int?) -> Stored {
        let before = (total, knownRows)
        if probe?.page == key.number { probe = nil }
        let (start, overflow) = key.number.multipliedReportingOverflow(by: settings.pageSize)
        guard !overflow else { return Stored() }
        let end = Saturating.add(start, itemCount)
        let pastTheRowsKnown = itemCount == 0 && start > knownRows
        knownRows = max(knownRows, pastTheRowsKnown ? 0 : end)
        var loopsBackTo: Int?
        // A page loaded with a cursor replaced since (a refresh's first page gave a new one) may
        // be another page's rows: what it gives says nothing of a loop.
        let current: Bool
        switch key.origin {
        case .after(let asked): current = cursors[key.number] == asked
        case .start, .offset: current = true
        }
        if current, let next = cursorAfter, let earlier = pageOfCursor[next], earlier.page <= key.number,
           earlier.generation == generation(ofPage: max(0, earlier.page - 1)) {
            loopsBackTo = earlier.page
        }
        // The next page's cursor, learned before this page's refresh, is not the one it gives now
        // (a feed whose newest items were deleted or added): the next pages, loaded or asked for
        // with the old cursor, hold other rows than their numbers say. They load again.
        var reloadFrom: Int?
        // Where the list ended, as far as was known before this page: its end page and rows, or
        // the bound an empty page set.
        let endBefore = endPage.flatMap { page in total.map { (page: page, rows: $0) } }
        // The bound counts even beside an end page: an empty page past that end, held as loaded, is
        // outdated too once the end page itself goes on past it (the list grew).
        let boundBefore = endAtMost
        if current, let next = cursorAfter, key.number < Int.max, let old = cursors[key.number + 1], old != next,
           let learned = cursorGenerations[key.number + 1], learned != key.generation {
            reloadFrom = key.number + 1
        }
        if let next = cursorAfter, key.number < Int.max, loopsBackTo == nil {
            if let old = cursors[key.number + 1], pageOfCursor[old]?.page == key.number + 1 { pageOfCursor[old] = nil }
            cursors[key.number + 1] = next
            cursorGenerations[key.number + 1] = key.generation
            pageOfCursor[next] = (key.number + 1, key.generation)
            if walkedTo == key.number { walkedTo = key.number + 1 }
            // The count this page says (a negative `itemsAfter` says nothing).
            let said = itemsAfter.flatMap { $0 >= 0 ? Saturating.add(end, $0) : nil }
            if let said {
                total = said
                // Rows known from before a refresh may be gone (the list shrank): a count the source
                // gives now bounds them, or an empty page asked for before it came would read as an
                // end far past it, and raise the count to its first row.
                knownRows = min(knownRows, said)
            }
            if endPage == key.number {
                // The end page itself now goes on: the count it gave goes, unless this one said one.
                endPage = nil
                if said == nil { total = nil }
            }
        } else if pastTheRowsKnown {
            endAtMost = min(endAtMost ?? start, start)
            // A count the source gave before, past this empty page, is outdated: the list shrank
            // since. Kept, its rows past this page stayed counted and could never load.
            if let count = total, count > start { total = nil }
        } else {
            endPage = key.number
            total = end
            knownRows = end
        }
        if let bound = endAtMost, total == nil, knownRows >= bound {
            // The rows known reach the bound: it was the end (or the list grew past it).
            if knownRows == bound { total = bound }
            endAtMost = nil
        }
        // This page says the list goes on past where another page said it ended — the end page,
        // or an empty page past the rows then known: the list grew between their answers (they
        // crossed). That page is held as loaded, and the rows after it could never load, nor be
        // walked to, while the count said they exist. It loads again, in a new generation; what
        // this page said stands.
        var outdatedEnd: Int?
        if current, reloadFrom == nil {
            let reaches = max(total ?? 0, knownRows)
            if let old = endBefore, key.number != old.page, reaches > old.rows {
                reloadFrom = old.page
                outdatedEnd = old.rows
            } else if let bound = boundBefore, reaches > bound, key.number != bound / settings.pageSize {
                reloadFrom = bound / settings.pageSize
                outdatedEnd = bound
            }
        }
        if let reloadFrom {
            let count = total
            refresh(fromPage: reloadFrom)
            // A count this page gave stands; the one the outdated end gave goes with it.
            if let outdatedEnd, let count, count > outdatedEnd { total = count }
        }
        return Stored(countChanged: before != (total, knownRows), loopsBackTo: loopsBackTo)
    }

    /// The generation page `number` loads in now.
    func generation(ofPage number: Int) -> UInt64 {
        generations.last { $0.fromPage <= number }?.generation ?? 0
    }

    // MARK: Planning

    /// What the window needs for the rows last shown.
    mutating func plan() -> Plan {
        guard let rows = visible else { return Plan(prefetch: nil, visiblePages: 0..<0, center: 0, visibleRows: nil) }
        let size = settings.pageSize
        let first = rows.lowerBound / size
        var end = max(Saturating.add(first, 1), Settings.pages(rows.upperBound, size))
        // The first screen loads `initialLoadSize` rows, as long as the list still shows it.
        if initial == nil, !shownBefore {
            initial = (rows, Saturating.add(first, settings.initialPages))
        } else if initial?.rows != rows {
            initial = nil
        }
        shownBefore = true
        if let initial { end = max(end, initial.endPage) }
        end = min(end, Saturating.add(first, settings.maxVisiblePages))
        var plan = Plan(prefetch: first ..< end, visiblePages: first ..< end, center: first, visibleRows: rows)
        if let probe = endProbe(forWindowAt: first) {
            // The window is past an end not known yet: find it (the window shows nothing meanwhile).
            self.probe = (probe, generation(ofPage: probe))
            plan.prefetch = nil
            plan.alone = [probe]
            return plan
        }
        // No search now: a probe left from one (cancelled as the window left) is not reused by a
        // later search, whose range it may cut badly.
        probe = nil
        if first > 0, !isPastTheEnd(first), key(for: first) == nil, let frontier = walkFrontier(below: first) {
            // A window whose first page cannot be loaded yet is walked to, one page at a time; its
            // pages that can be loaded already (an offset source's, past the walk's reach) load
            // meanwhile. The prefetcher skips those that cannot.
            plan.prefetch = nil
            plan.alone = [frontier] + Array(first ..< end)
        }
        return plan
    }

    /// For a window at page `first` past the bound an empty page set (the end is at or before it, the
    /// count not known), the page to load next to find the end: halfway between the rows known and
    /// the bound when the source can start anywhere (the end is found in a logarithmic number of
    /// loads), else the next page of the walk. A probe asked for stays until its page answers, as
    /// long as it lies between the rows known and the bound.
    func endProbe(forWindowAt first: Int) -> Int? {
        guard total == nil, endPage == nil, let bound = endAtMost else { return nil }
        let (start, overflow) = first.multipliedReportingOverflow(by: settings.pageSize)
        guard overflow || start >= bound else { return nil }
        guard settings.jumps else { return walkedTo }
        let low = knownRows / settings.pageSize
        let high = max(low + 1, Settings.pages(bound, settings.pageSize))
        if let probe, low <= probe.page, probe.page < high, probe.generation == generation(ofPage: probe.page),
           key(for: probe.page) != nil {
            return probe.page
        }
        let middle = low + (high - low) / 2
        if key(for: middle) != nil { return middle }
        return walkFrontier(below: middle) ?? low
    }

    /// The highest page below `first` from which the list can be walked to it: the page whose
    /// cursor is known nearest below (an offset source's jump leaves islands of known cursors).
    func walkFrontier(below first: Int) -> Int? {
        guard settings.jumps else { return min(walkedTo, first - 1) }
        var number = first - 1
        let lowest = max(0, first - settings.reachPages)
        while number >= lowest {
            if number == 0 || cursors[number] != nil { return number }
            number -= 1
        }
        return nil
    }

    /// The page that visible page `number` waits for: `number` cannot be loaded until the list is
    /// walked to it, page by page from this one. `nil` when `number` is not on screen, can be
    /// loaded, or lies past the end.
    func walkPage(toReach number: Int) -> Int? {
        guard number > 0, !isPastTheEnd(number), let pages = visiblePages, pages.contains(number), key(for: number) == nil else { return nil }
        return walkFrontier(below: number)
    }

    /// The pages of the visible rows (at most ``Settings/maxVisiblePages``), `nil` when nothing is
    /// shown.
    var visiblePages: ClosedRange<Int>? {
        guard let rows = visible else { return nil }
        let size = settings.pageSize
        let first = rows.lowerBound / size
        return first ... min(max(first, max(rows.lowerBound, rows.upperBound - 1) / size), Saturating.add(first, settings.maxVisiblePages - 1))
    }

    // MARK: Reading

    /// How many rows there are: exact once the source said or the end was loaded.
    var count: RowCount {
        if let total { return .exact(total) }
        return .atLeast(knownRows)
    }

    /// Whether page `number` lies past the end of the list, as far as is known.
    func isPastTheEnd(_ number: Int) -> Bool {
        if let end = endPage, number > end { return true }
        let (start, overflow) = number.multipliedReportingOverflow(by: settings.pageSize)
        if overflow { return true }
        if let total, number > 0, start >= total { return true }
        if let bound = endAtMost, number > 0, start >= bound { return true }
        return false
    }

    /// The key of page `number` now, if it can be loaded: the first page; a page whose cursor is
    /// known; or, with an offset source, a page farther than the reach from the pages that can be
    /// walked to.
    func key(for number: Int) -> PageKey<Cursor>? {
        guard number >= 0, !isPastTheEnd(number) else { return nil }
        let generation = generations.last { $0.fromPage <= number }?.generation ?? 0
        if number == 0 { return PageKey(generation: generation, number: 0, origin: .start) }
        if let cursor = cursors[number] { return PageKey(generation: generation, number: number, origin: .after(cursor)) }
        guard settings.jumps else { return nil }
        let lowest = max(0, number - settings.reachPages)
        var candidate = number - 1
        while candidate >= lowest {
            if candidate == 0 || cursors[candidate] != nil { return nil }  // walk from there
            candidate -= 1
        }
        return PageKey(generation: generation, number: number, origin: .offset)
    }
}
