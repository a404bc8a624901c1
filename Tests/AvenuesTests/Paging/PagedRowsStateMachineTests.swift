import Testing
@testable import Avenues

/// `PagedRowsStateMachine` as a plain value: events in, plans and keys out, no threads, no loads.
@Suite("Paged rows state machine")
struct PagedRowsStateMachineTests {
    typealias Machine = PagedRowsStateMachine<Int>

    /// 100-row pages, prefetch 100 rows ahead (25 behind), initial load 300 rows.
    func machine(jumps: Bool, maxResident: Int? = nil) -> Machine {
        let configuration = PagingConfiguration(pageSize: 100, prefetchDistance: 100, initialLoadSize: 300, maxResident: maxResident, jumpThreshold: 1_000)
        return Machine(settings: .init(configuration, jumps: jumps))
    }

    /// Stores page `number` as a full page whose cursor leads to the next (`itemsAfter` if given).
    func store(_ number: Int, in machine: inout Machine, items: Int = 100, last: Bool = false, itemsAfter: Int? = nil) -> Machine.Stored {
        let key = machine.key(for: number) ?? PageKey(generation: 0, number: number, origin: .offset)
        return machine.stored(key, itemCount: items, cursorAfter: last ? nil : (number + 1) * 100, itemsAfter: itemsAfter)
    }

    @Test func theFirstScreenPlansItsInitialLoadAndOnlyPageZeroHasAKeyAtFirst() {
        var m = machine(jumps: false)
        #expect(m.plan().prefetch == nil)  // nothing shown yet
        m.show(0..<40)
        let plan = m.plan()
        #expect(plan.visiblePages == 0..<3)  // 300 rows of initial load
        #expect(plan.prefetch == 0..<3)
        #expect(plan.visibleRows == 0..<40)
        if case .start = m.key(for: 0)?.origin {} else { Issue.record("page 0 is not loaded from the start") }
        #expect(m.key(for: 1) == nil)  // a cursor source: reached only through page 0's cursor
        #expect(m.count == .atLeast(0))
    }

    @Test func storedPagesTeachCursorsAndTheCountAndSayWhenItChanged() {
        var m = machine(jumps: false)
        m.show(0..<40)
        #expect(store(0, in: &m).countChanged)
        if case .after(let cursor) = m.key(for: 1)?.origin { #expect(cursor == 100) } else { Issue.record("page 1 has no cursor key") }
        #expect(m.count == .atLeast(100))
        #expect(store(1, in: &m, itemsAfter: 50).countChanged)
        #expect(m.count == .exact(250))
        #expect(!store(1, in: &m, itemsAfter: 50).countChanged)  // the same page again changes nothing
        #expect(m.isPastTheEnd(3) && !m.isPastTheEnd(2))
    }

    @Test func aFarWindowOfACursorSourceIsWalkedToOnePageAtATimeFromTheNearestKnownPage() {
        var m = machine(jumps: false)
        m.show(0..<40)
        _ = store(0, in: &m)
        _ = store(1, in: &m)
        m.show(5_000..<5_040)  // page 50: no cursor known for it
        // The walk goes on from page 2, the frontier, alone (no prefetch around it), with the
        // window's page, which loads once it can.
        #expect(m.plan().prefetch == nil)
        #expect(m.plan().alone == [2, 50, 51, 52])  // the first screen: 300 rows
        _ = store(2, in: &m)
        #expect(m.plan().alone == [3, 50, 51, 52])
    }

    @Test func aFarWindowOfAnOffsetSourceLoadsDirectlyAndANearOneWalksFromTheNearestIsland() {
        var m = machine(jumps: true)
        m.show(0..<40)
        _ = m.plan()
        _ = store(0, in: &m)
        m.show(50_000..<50_040)  // page 500: far beyond the reach (10 pages) of page 1
        #expect(m.plan().prefetch == 500..<501)
        if case .offset = m.key(for: 500)?.origin {} else { Issue.record("page 500 is not loaded by offset") }
        _ = store(500, in: &m)  // an island: page 501's cursor is known now
        m.show(50_500..<50_540)  // page 505: near that island, walked from it
        #expect(m.key(for: 505) == nil)
        #expect(m.plan().alone == [501, 505])
    }

    /// Found by `aSearchForAnUnknownEndLoadsOnlyItsProbes` under ThreadSanitizer (2026-11-30): the
    /// empty pages of a window past an unknown end answered one by one, and each lowered the bound
    /// by a page; the probe was planned anew from each, so the probe that had started was cancelled
    /// for one a page lower (three probes started for one). The probe asked for stays until its page
    /// answers, while it lies in the range searched.
    @Test func aProbeStaysUntilItsPageAnswersWhileTheBoundComesDown() {
        var m = machine(jumps: true)
        m.show(0..<40)
        _ = m.plan()
        _ = store(0, in: &m)
        _ = store(1, in: &m)  // 200 rows known
        m.show(100_000..<100_040)  // page 1,000, past an end not known yet
        _ = m.plan()
        _ = store(1_001, in: &m, items: 0, last: true)  // the window's prefetch answers first: empty
        #expect(m.endAtMost == 100_100)
        #expect(m.plan().alone.isEmpty, "the window's own page still loads")
        _ = store(1_000, in: &m, items: 0, last: true)  // empty too: the end is below the window
        #expect(m.plan().alone == [501])  // halfway between page 2 and page 1,000
        _ = store(999, in: &m, items: 0, last: true)  // the page behind: the bound comes down a page
        #expect(m.endAtMost == 99_900)
        #expect(m.plan().alone == [501], "the probe that started stays")  // before: 500
        _ = store(501, in: &m, items: 0, last: true)  // it answers: empty, so the end is below it
        #expect(m.plan().alone == [251])
        _ = store(251, in: &m, items: 0, last: true)
        #expect(m.plan().alone == [126])
        // A probe the range no longer holds is planned anew: another empty page came below it.
        _ = store(100, in: &m, items: 0, last: true)
        #expect(m.plan().alone == [51])
        // After a refresh the probe of the generation before is not kept: the search starts over.
        m.refresh(fromPage: 0)
        _ = store(0, in: &m)
        _ = store(1, in: &m)
        _ = store(1_000, in: &m, items: 0, last: true)
        #expect(m.probe?.page == 51)
        #expect(m.plan().alone == [501])
        // A window that leaves the search lets its probe go (the prefetcher cancels it): back past
        // the end, the search plans from the range as it is then.
        _ = store(999, in: &m, items: 0, last: true)
        #expect(m.plan().alone == [501])
        m.show(0..<40)
        #expect(m.plan().alone.isEmpty && m.probe == nil)
        m.show(100_000..<100_040)
        #expect(m.plan().alone == [500])
    }

    @Test func aRefreshStartsANewGenerationFromItsPageAndForgetsTheEndAfterIt() {
        var m = machine(jumps: true)
        m.show(0..<40)
        _ = store(0, in: &m)
        _ = store(1, in: &m, items: 30, last: true)
        #expect(m.count == .exact(130))
        m.refresh(fromPage: 1)
        #expect(m.key(for: 0)?.generation == 0)
        #expect(m.key(for: 1)?.generation == 1)
        #expect(m.count == .atLeast(130))  // the end after page 1 may have moved
        for page in 2...200 { m.refresh(fromPage: page) }
        #expect(m.generations.count <= Machine.maxGenerations)
        // The oldest ranges merged into newer ones (their pages load again when shown); the newest
        // range keeps the newest generation.
        #expect((m.key(for: 0)?.generation ?? 0) > 0)
        #expect(m.key(for: 0).map { $0.generation < m.key(for: 200)?.generation ?? 0 } == true)
    }

    /// Found by the property test run over 480 seeds (seed 22): two pages' answers crossed while
    /// the list grew. The last page said it was the end; the page before it, answered later, said
    /// 187 rows follow it. The count took the new length, but the end page stayed the end, so the
    /// rows past its old end showed as loaded with nothing in them until a refresh.
    @Test(arguments: [false, true])
    func aPageThatSaysTheListGrewPastItsEndLoadsTheEndPageAgain(jumps: Bool) {
        var m = machine(jumps: jumps)
        m.show(300..<340)
        for page in 0..<3 { _ = store(page, in: &m) }
        _ = store(3, in: &m, items: 44, last: true)
        #expect(m.count == .exact(344))
        #expect(m.isPastTheEnd(4))
        let endKey = m.key(for: 3)
        #expect(store(2, in: &m, itemsAfter: 187).countChanged)
        #expect(m.count == .exact(487))
        #expect(!m.isPastTheEnd(4))
        #expect(m.key(for: 3) != nil && m.key(for: 3)?.generation != endKey?.generation, "the end page loads again")
        #expect(m.plan().prefetch?.contains(3) == true)
        _ = store(3, in: &m, itemsAfter: 87)  // whole now, with the cursor on
        #expect(m.key(for: 4) != nil)
        #expect(m.count == .exact(487))

        // A page before the end that says what the end page says changes nothing.
        var same = machine(jumps: jumps)
        same.show(300..<340)
        for page in 0..<3 { _ = store(page, in: &same) }
        _ = store(3, in: &same, items: 44, last: true)
        let key = same.key(for: 3)
        #expect(!store(2, in: &same, itemsAfter: 44).countChanged)
        #expect(same.key(for: 3) == key)
        #expect(same.isPastTheEnd(4))
    }

    /// The same with the bound an empty page sets (seed 55 of that run, an offset source): a jump
    /// past the end found an empty page, the list grew, and a page then said it had more rows than
    /// that bound. The count took them, but the bound kept every page past it from loading.
    @Test func aPageThatSaysTheListGrewPastTheBoundOfAnEmptyPageLiftsIt() {
        var m = machine(jumps: true)
        m.show(0..<40)
        _ = store(0, in: &m)
        m.show(5_000..<5_040)
        _ = m.plan()
        _ = store(50, in: &m, items: 0, last: true)  // empty: the list ends at or before row 5,000
        #expect(m.endAtMost == 5_000)
        #expect(m.isPastTheEnd(51))
        #expect(store(1, in: &m, itemsAfter: 5_100).countChanged)  // 200 + 5,100 rows
        #expect(m.count == .exact(5_300))
        #expect(m.endAtMost == nil)
        #expect(!m.isPastTheEnd(51) && !m.isPastTheEnd(52) && m.isPastTheEnd(53))
        m.show(5_250..<5_290)
        #expect(m.plan().prefetch?.contains(52) == true)
    }

    /// And with an end page and an empty page past it, both held as loaded (seed 7 with
    /// `AVENUES_TEST_SEED=2`, once the property test checked every step): the list grew, the end
    /// page loaded again and said it goes on, but the bound the empty page set stayed, so the rows
    /// from it on were past the end — never to load — while the count said they exist.
    @Test func anEndPageThatGoesOnPastAnEmptyPageLoadsTheEmptyPageAgain() {
        var m = machine(jumps: true)
        m.show(0..<40)
        _ = store(0, in: &m)
        m.show(1_400..<1_440)
        _ = store(14, in: &m, items: 41, last: true)  // the end: 1,441 rows
        _ = store(15, in: &m, items: 0, last: true)  // asked for before the end was known: empty
        #expect(m.count == .exact(1_441))
        #expect(m.endAtMost == 1_500)
        // The list grew to 2,790 rows; page 14 loads again (dropped from memory, say) and goes on.
        let generation = m.generation(ofPage: 15)
        _ = store(14, in: &m, itemsAfter: 1_290)
        #expect(m.count == .exact(2_790))
        #expect(m.endAtMost == nil)
        #expect(!m.isPastTheEnd(15) && !m.isPastTheEnd(27) && m.isPastTheEnd(28))
        // The empty page 15 loads again: its key is of a new generation, not the one held.
        #expect(m.generation(ofPage: 15) > generation && m.generation(ofPage: 14) == generation)
        m.show(1_500..<1_540)
        #expect(m.key(for: 15) != nil)
    }

    /// And with a page past the end page (seed 11 with `AVENUES_TEST_SEED=2`, an offset source):
    /// asked for before the end was known and answered after the list grew, it held rows past
    /// the end, but the end page stayed loaded, and the rows after it could not be walked to.
    @Test func aPagePastTheEndPageWithRowsLoadsTheEndPageAgain() {
        var m = machine(jumps: true)
        m.show(300..<340)
        for page in 0..<3 { _ = store(page, in: &m) }
        _ = store(3, in: &m, items: 44, last: true)
        let endKey = m.key(for: 3)
        #expect(m.count == .exact(344))
        _ = m.stored(PageKey(generation: 0, number: 5, origin: .offset), itemCount: 100, cursorAfter: 600, itemsAfter: nil)
        #expect(m.count == .atLeast(600), "the end page's count went with it")
        #expect(!m.isPastTheEnd(4) && m.key(for: 3) != nil && m.key(for: 3)?.generation != endKey?.generation)
        _ = store(3, in: &m)  // whole now
        #expect(m.key(for: 4) != nil)

        // The end page itself answered again, whole now and going on: its old count goes.
        var again = machine(jumps: false)
        again.show(300..<340)
        for page in 0..<3 { _ = store(page, in: &again) }
        _ = store(3, in: &again, items: 44, last: true)
        #expect(again.count == .exact(344))
        _ = store(3, in: &again)
        #expect(again.count == .atLeast(400))
        #expect(!again.isPastTheEnd(4) && again.key(for: 4) != nil)

        // The same past the bound of an empty page.
        var bounded = machine(jumps: true)
        bounded.show(0..<40)
        _ = store(0, in: &bounded)
        _ = bounded.stored(PageKey(generation: 0, number: 3, origin: .offset), itemCount: 0, cursorAfter: nil, itemsAfter: nil)
        #expect(bounded.endAtMost == 300)
        _ = bounded.stored(PageKey(generation: 0, number: 5, origin: .offset), itemCount: 100, cursorAfter: 600, itemsAfter: nil)
        #expect(bounded.count == .atLeast(600))
        #expect(bounded.endAtMost == nil && bounded.generation(ofPage: 3) != 0, "the empty page loads again")
    }

    /// Found by `.ci/soak` (seed 20 with `AVENUES_TEST_SEED=93`, seed 12 with 99; both as old as
    /// the refresh): a refresh from just past a full end page (`refresh(after:)` the row after the
    /// last) forgot the count but kept the end page, so nothing after it could ever load.
    @Test func aRefreshFromJustPastAFullEndPageLoadsTheEndPageAgain() {
        var m = machine(jumps: false)
        m.show(0..<40)
        for page in 0..<2 { _ = store(page, in: &m) }
        _ = store(2, in: &m, last: true)  // full, and the last: 300 rows
        #expect(m.count == .exact(300) && m.isPastTheEnd(3))
        m.refresh(fromPage: 3)
        #expect(m.generation(ofPage: 2) != 0, "the end page loads again")
        #expect(m.endPage == nil && m.count == .atLeast(300))
        _ = store(2, in: &m)  // it goes on now
        #expect(m.key(for: 3) != nil)
        // A refresh farther past the end leaves the end as it is.
        var far = machine(jumps: false)
        far.show(0..<40)
        for page in 0..<2 { _ = store(page, in: &far) }
        _ = store(2, in: &far, items: 40, last: true)
        far.refresh(fromPage: 3)
        #expect(far.generation(ofPage: 2) == 0 && far.count == .exact(240))
    }

    @Test func hostileWindowsAndCountsNeverOverflow() {
        var m = machine(jumps: true, maxResident: 1_000)
        m.show(0..<Int.max)
        let plan = m.plan()
        #expect(plan.visiblePages.count <= 10)  // within maxResident, whatever the window
        m.show(Int.max - 10 ..< Int.max)
        _ = m.plan()
        #expect(m.key(for: Int.max) == nil)
        _ = m.stored(PageKey(generation: 0, number: Int.max, origin: .offset), itemCount: 100, cursorAfter: nil, itemsAfter: nil)
        _ = m.stored(PageKey(generation: 0, number: 3, origin: .offset), itemCount: 100, cursorAfter: 400, itemsAfter: Int.max)
        #expect(m.count == .exact(Int.max))
        // An empty page far out, past the rows known, takes that count back: no trap, a bound.
        let far = Int.max / 100 - 1
        _ = m.stored(PageKey(generation: 0, number: far, origin: .offset), itemCount: 0, cursorAfter: nil, itemsAfter: Int.max)
        #expect(m.count == .atLeast(400) && m.endAtMost == far * 100 && m.isPastTheEnd(far))
        // A count as large as can be, from a page with a cursor: the rows known stay those loaded.
        _ = m.stored(PageKey(generation: 0, number: 4, origin: .offset), itemCount: 100, cursorAfter: 500, itemsAfter: Int.max)
        #expect(m.count == .exact(Int.max) && m.knownRows == 500)
        _ = m.stored(PageKey(generation: 0, number: 4, origin: .offset), itemCount: 100, cursorAfter: 500, itemsAfter: -7)
        #expect(m.count == .exact(Int.max), "a negative count says nothing")
        m.show(-5 ..< -1)
        #expect(m.plan().visibleRows == 0..<0)
    }

    /// The walk's plan at the end of the integers: a source that must be walked, shown its last
    /// rows, plans the walk's page and the window's pages, none past `Int.max`, as many as a window
    /// holds.
    @Test func aWalkToTheEndOfTheIntegersPlansWithoutOverflow() {
        for pageSize in [1, 100] {
            let configuration = PagingConfiguration(pageSize: pageSize, prefetchDistance: .max, initialLoadSize: .max, maxResident: .max, jumpThreshold: .max)
            var m = Machine(settings: .init(configuration, jumps: false))
            m.show(0 ..< 10)
            _ = m.stored(PageKey(generation: 0, number: 0, origin: .start), itemCount: pageSize, cursorAfter: pageSize, itemsAfter: nil)
            m.show(Int.max - 10 ..< Int.max)
            let plan = m.plan()
            #expect(plan.prefetch == nil)
            #expect(plan.alone.first == 1)  // the walk goes on from page 1
            #expect(plan.alone.count <= m.settings.maxVisiblePages + 1)
            #expect(plan.alone.dropFirst().allSatisfy { $0 >= (Int.max - 10) / pageSize })
        }
    }

    /// A list that shrank (12,100 rows known, 752 now), refreshed: a page asked for before the new
    /// end was known answers empty after it. It agrees with the end the newer pages gave; the
    /// count stays theirs, not the empty page's first row.
    @Test func anEmptyPagePastAnEndAlreadyKnownLeavesTheCount() {
        for saysCount in [true, false] {
            var m = machine(jumps: true)
            m.show(12_000..<12_040)
            _ = store(0, in: &m)
            _ = store(120, in: &m)
            #expect(m.count == .atLeast(12_100))
            m.refresh(fromPage: 0)
            m.show(8_000..<8_040)
            let asked = m.key(for: 80)  // before anything of the new generation came back
            #expect(asked != nil)
            if saysCount {
                _ = store(0, in: &m, itemsAfter: 652)
            } else {
                m.show(700..<740)
                _ = store(7, in: &m, items: 52, last: true)
            }
            #expect(m.count == .exact(752))
            if let asked { _ = m.stored(asked, itemCount: 0, cursorAfter: nil, itemsAfter: nil) }
            #expect(m.count == .exact(752), "the first page \(saysCount ? "said" : "did not say") the count")
            #expect(m.isPastTheEnd(8) && !m.isPastTheEnd(7))
        }
    }

    /// A list that shrank, grew and shrank again (found by `.ci/soak`, seed 20 with
    /// `AVENUES_TEST_SEED=157`, once the count bounded the rows known): an empty page past the
    /// rows known, at a cursor learned before, left standing a count the source gave before it
    /// shrank again. The rows between stayed in the count, past the end, never to load.
    @Test func anEmptyPageBeforeACountSaidEarlierTakesThatCountBack() {
        var m = machine(jumps: false)
        m.show(0..<40)
        for page in 0..<3 { _ = store(page, in: &m) }  // cursors to page 3 (row 300)
        m.refresh(fromPage: 0)
        _ = store(0, in: &m, itemsAfter: 150)  // shrank: 250 rows
        #expect(m.count == .exact(250))
        _ = store(1, in: &m, itemsAfter: 400)  // grew: 600 rows
        #expect(m.count == .exact(600))
        m.show(300..<340)
        guard let key = m.key(for: 3) else {
            Issue.record("page 3 has no key")
            return
        }
        _ = m.stored(key, itemCount: 0, cursorAfter: nil, itemsAfter: 0)  // shrank again: nothing at 300
        #expect(m.count != .exact(600), "the count the list had before it shrank again stood")
        #expect(m.count.value <= 300)
        #expect(m.isPastTheEnd(3))
    }
}
