import Dispatch
import Synchronization
import Testing
@testable import Avenues

@Suite("RowPrefetcher", .timeLimit(.minutes(5)))
struct RowPrefetcherTests {
    /// An avenue whose work never finishes unless the test says so, over a list of `count` rows.
    struct Fixture {
        let work = ControlledWork<String, Int>()
        let avenue: Avenue<Int, String, Int>
        let prefetcher: RowPrefetcher<String, Int>

        init(count: Int, ahead: Int = 3, behind: Int = 2, maxConcurrent: Int = 6) {
            avenue = Avenue(storage: MemoryStorage(), processor: AutoProcessor(maxConcurrent: maxConcurrent, work))
            prefetcher = RowPrefetcher(avenue: avenue, ahead: ahead, behind: behind) { row in
                row < count ? "row\(row)" : nil
            }
        }

        func rows(_ priority: LoadPriority) -> [Int] {
            prefetcher.window.filter { $0.value == priority }.map(\.key).sorted()
        }

        /// Rows the avenue has assigned, i.e. that were prepared and not cancelled.
        func assigned(in range: Range<Int> = 0..<200) -> [Int] {
            range.filter { avenue.key(at: $0) != nil }
        }
    }

    @Test func scrollingDownPreparesTheVisibleRowsThenAheadBelowAndBehindAbove() {
        let f = Fixture(count: 100)
        f.prefetcher.show(10..<15)
        #expect(f.rows(.visible) == [10, 11, 12, 13, 14])
        #expect(f.rows(.prefetch) == [8, 9, 15, 16, 17])
        #expect(f.assigned() == Array(8...17))

        f.prefetcher.show(11..<16)
        #expect(f.prefetcher.direction == .down)
        #expect(f.rows(.visible) == [11, 12, 13, 14, 15])
        #expect(f.rows(.prefetch) == [9, 10, 16, 17, 18])
        #expect(f.assigned() == Array(9...18))  // row 8 left the window and was cancelled
        f.prefetcher.stop()
        #expect(f.assigned().isEmpty)
    }

    @Test func scrollingUpPrefetchesAboveAndADirectionChangeCancelsTheOldAhead() {
        let f = Fixture(count: 100)
        f.prefetcher.show(50..<55)
        f.prefetcher.show(51..<56)  // down: ahead is 56...58
        #expect(f.rows(.prefetch) == [49, 50, 56, 57, 58])
        f.prefetcher.show(50..<55)  // up: ahead is 47...49, behind 55...56
        #expect(f.prefetcher.direction == .up)
        #expect(f.rows(.visible) == [50, 51, 52, 53, 54])
        #expect(f.rows(.prefetch) == [47, 48, 49, 55, 56])
        #expect(f.assigned() == Array(47...56))
        f.prefetcher.stop()
    }

    /// What a paged list's walk or search for its end loads on the way to the window: those rows
    /// alone, with no prefetch around them, and the next show moves from the rows last shown.
    @Test func rowsShownAloneHaveNoPrefetchAndDoNotMoveTheDirection() {
        let f = Fixture(count: 100)
        f.prefetcher.show(50..<55)
        f.prefetcher.show(40..<45)  // up
        f.prefetcher.showAlone([70, 75, 76, 70])
        #expect(f.rows(.visible) == [70, 75, 76])
        #expect(f.rows(.prefetch).isEmpty)
        #expect(f.assigned() == [70, 75, 76])  // the window around 40..<45 was cancelled
        #expect(f.prefetcher.direction == .up)
        f.prefetcher.show(39..<44)  // still up from 40..<45, not down from 70
        #expect(f.prefetcher.direction == .up)
        #expect(f.rows(.prefetch) == [36, 37, 38, 44, 45])
        f.prefetcher.stop()
    }

    @Test func aJumpCancelsTheWholeOldWindow() async {
        let f = Fixture(count: 100)
        f.prefetcher.show(0..<5)
        await f.work.waitUntilStarted("row0")
        f.prefetcher.show(95..<100)  // End
        #expect(f.assigned() == [93, 94, 95, 96, 97, 98, 99])
        await eventually("the running work of the old window was cancelled") { f.work.cancellationsSeen(by: "row0") == 1 }
        f.prefetcher.show(0..<5)  // Home: moving up, so "ahead" is above row 0, which does not exist
        #expect(f.assigned() == [0, 1, 2, 3, 4, 5, 6])
        #expect(f.avenue.statistics.loadsCancelled >= 7)
        f.prefetcher.stop()
    }

    @Test func aListShorterThanTheWindowPreparesOnlyRowsThatExist() {
        let f = Fixture(count: 4, ahead: 10, behind: 10)
        f.prefetcher.show(0..<10)
        #expect(f.rows(.visible) == [0, 1, 2, 3])
        #expect(f.rows(.prefetch).isEmpty)
        #expect(f.assigned() == [0, 1, 2, 3])
        f.prefetcher.stop()
    }

    @Test func theQueueRunsVisibleRowsTopToBottomThenPrefetchesNearestFirst() async {
        let f = Fixture(count: 100, ahead: 3, behind: 2, maxConcurrent: 1)
        f.avenue.prepareItem(for: "busy", at: 1_000)
        await f.work.waitUntilStarted("busy")
        f.prefetcher.show(20..<23)
        f.work.succeed("busy", with: 0)
        for row in [20, 21, 22, 23, 24, 25, 19, 18] {
            await f.work.waitUntilStarted("row\(row)")
            f.work.succeed("row\(row)", with: row)
        }
        #expect(f.work.startOrder == ["busy"] + [20, 21, 22, 23, 24, 25, 19, 18].map { "row\($0)" })
    }

    @Test func whileScrollingTheLeadingEdgeIsQueuedFirstAndAtRestReadingOrder() async {
        // Rows entering at the leading edge stay on screen longest; rows about to leave go last.
        let f = Fixture(count: 100, ahead: 0, behind: 0, maxConcurrent: 1)
        f.avenue.prepareItem(for: "busy", at: 1_000)
        await f.work.waitUntilStarted("busy")
        f.prefetcher.show(10..<13)  // at rest: top to bottom
        f.prefetcher.show(20..<23)  // moved down: bottom first
        f.work.succeed("busy", with: 0)
        for row in [22, 21, 20] {
            await f.work.waitUntilStarted("row\(row)")
            f.work.succeed("row\(row)", with: row)
        }
        f.prefetcher.show(15..<18)  // moved up: the top is the leading edge
        for row in [15, 16, 17] {
            await f.work.waitUntilStarted("row\(row)")
            f.work.succeed("row\(row)", with: row)
        }
        #expect(f.work.startOrder == ["busy", "row22", "row21", "row20", "row15", "row16", "row17"])
        f.prefetcher.stop()
    }

    @Test func aRowScrolledIntoViewIsRaisedAheadOfQueuedPrefetches() async {
        let f = Fixture(count: 100, ahead: 5, behind: 0, maxConcurrent: 1)
        f.avenue.prepareItem(for: "busy", at: 1_000)
        await f.work.waitUntilStarted("busy")
        f.prefetcher.show(0..<2)  // visible 0, 1; prefetch 2...6
        f.prefetcher.show(4..<6)  // 4 and 5 become visible: they jump the queue, leading edge first
        f.work.succeed("busy", with: 0)
        await f.work.waitUntilStarted("row5")
        f.work.succeed("row5", with: 5)
        await f.work.waitUntilStarted("row4")
        #expect(f.work.startOrder == ["busy", "row5", "row4"])
        f.prefetcher.stop()
    }

    @Test func showCanBeCalledFromTheAvenuesCallbacksWhileAnotherThreadShows() async {
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(countLimit: 50), processor: AutoProcessor(maxConcurrent: 4) { (key: Int) in
            await Task.yield()
            return key
        })
        let prefetcher = RowPrefetcher(avenue: avenue, ahead: 10, behind: 5) { row in row < 5_000 ? row : nil }
        let redraws = EventLog<Int>()
        avenue.onStateChange = { row in
            if redraws.count < 200 { prefetcher.show(row..<(row + 8)) }  // a front end redrawing from its callback
            redraws.append(row)
        }
        for top in stride(from: 0, to: 4_000, by: 40) { prefetcher.show(top..<(top + 30)) }
        await redraws.wait(forCount: 50)
        prefetcher.stop()
        await eventually("everything settled") { avenue.processor.tableSizes.runs == 0 }
    }

    @Test func releasingThePrefetcherCancelsItsWindow() async {
        let work = ControlledWork<String, Int>()
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: AutoProcessor(work))
        var prefetcher: RowPrefetcher<String, Int>? = RowPrefetcher(avenue: avenue) { "row\($0)" }
        prefetcher?.show(0..<3)
        #expect(avenue.key(at: 0) == "row0")
        prefetcher = nil
        #expect(avenue.key(at: 0) == nil)
        #expect(avenue.tableSizes.isIdle)
    }

    @Test func stopWhileAnotherThreadAppliesAWindowLeavesNoClaims() async {
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: AutoProcessor(ControlledWork<String, Int>()))
        let inKey = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0)
        let firstLookUp = Atomic<Bool>(true)
        let prefetcher = RowPrefetcher(avenue: avenue, ahead: 3, behind: 0) { row in
            if firstLookUp.exchange(false, ordering: .relaxed) {
                inKey.signal()
                proceed.wait()  // the show is mid-way: keys looked up, nothing prepared yet
            }
            return "row\(row)"
        }
        let shown = EventLog<Bool>()
        DispatchQueue.global().async {
            prefetcher.show(0..<5)
            shown.append(true)
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                inKey.wait()
                continuation.resume()
            }
        }
        prefetcher.stop()  // before the fix: cleared an empty window, then the show prepared 8 rows
        proceed.signal()
        await shown.wait(forCount: 1)
        #expect(prefetcher.window.isEmpty)
        #expect(avenue.tableSizes.rows == 0)
        #expect(avenue.processor.tableSizes.waiters == 0)
    }

    @Test func windowsAtTheEndsOfTheIntegersNeverTrap() {
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: AutoProcessor(ControlledWork<String, Int>()))
        let prefetcher = RowPrefetcher(avenue: avenue, ahead: 40, behind: 10) { "row\($0)" }
        prefetcher.show(Int.max - 5 ..< Int.max)
        #expect(prefetcher.window.count == 5 + 10)  // nothing past Int.max; 10 behind
        prefetcher.show(Int.min ..< Int.min + 5)     // negative rows do not exist
        #expect(prefetcher.window.isEmpty)
        prefetcher.show(Int.min ..< Int.max)         // wider than Int.max: cut to maxRows
        prefetcher.show(-3 ..< 2)
        #expect(Set(prefetcher.window.keys) == Set(0..<42))
        prefetcher.stop()
    }

    @Test func aRangeLargerThanAnyScreenIsCutToMaxRows() {
        let f = Fixture(count: 3_000_000, ahead: 40, behind: 10)
        f.prefetcher.show(0..<2_000_000)  // before: 2,000,000 rows prepared (36 s, 472 MB)
        #expect(f.prefetcher.window.count == 4_096)
        #expect(f.rows(.visible) == Array(0..<4_096))
        f.prefetcher.maxRows = 100
        f.prefetcher.show(10..<60)
        #expect(f.rows(.visible) == Array(10..<60))
        #expect(f.rows(.prefetch).count == 50)  // 40 ahead and 10 behind still fit
        f.prefetcher.stop()
    }

    // MARK: Hints

    @Test func hintedScreensAreWarmedAtBackgroundAfterTheWindowAndReplacedByTheNextHint() {
        let f = Fixture(count: 1_000)
        f.prefetcher.show(10..<15)
        f.prefetcher.hint([500, 12, 990])  // 12...16 are in the window already: they keep its priority
        #expect(f.prefetcher.hints == [500, 12, 990])
        #expect(f.rows(.visible) == [10, 11, 12, 13, 14])
        #expect(f.rows(.prefetch) == [8, 9, 15, 16, 17])
        #expect(f.rows(.background) == Array(500..<505) + Array(990..<995))
        #expect(f.prefetcher.direction == .down)  // a hint is not a move
        f.prefetcher.hint([700])
        #expect(f.rows(.background) == Array(700..<705))
        f.avenue.cancel(at: 700)  // as if the app let the row go: the same hint again must not replan
        f.prefetcher.hint([700])
        #expect(f.avenue.key(at: 700) == nil)
        f.prefetcher.show(10..<15)  // the next show puts it back
        #expect(f.avenue.key(at: 700) == "row700")
        #expect(f.assigned(in: 0..<1_000) == Array(8...17) + Array(700..<705))  // 500... and 990... cancelled
        f.prefetcher.show(11..<16)  // hints last across shows, a screen of the new height each
        #expect(f.rows(.background) == Array(700..<705))
        f.prefetcher.hint([])
        #expect(f.rows(.background).isEmpty)
        #expect(f.assigned(in: 0..<1_000) == Array(9...18))
        f.prefetcher.stop()
    }

    @Test func hintsRunOnlyAfterVisibleAndPrefetchWork() async {
        let f = Fixture(count: 1_000, ahead: 2, behind: 0, maxConcurrent: 1)
        f.avenue.prepareItem(for: "busy", at: 5_000)
        await f.work.waitUntilStarted("busy")
        f.prefetcher.show(0..<2)
        f.prefetcher.hint([900])
        f.prefetcher.show(1..<3)  // the window moves after the hint: its new rows still go first
        f.work.succeed("busy", with: 0)
        // 1 was queued visible first; 2 was raised; 3 and 4 prefetch; 0 left the window; then the hint.
        let expected = [1, 2, 3, 4, 900, 901]
        for row in expected {
            await f.work.waitUntilStarted("row\(row)")
            f.work.succeed("row\(row)", with: row)
        }
        #expect(f.work.startOrder == ["busy"] + expected.map { "row\($0)" })
        f.prefetcher.stop()
    }

    @Test func hostileHintsAreBoundedAndStopDropsThem() {
        let f = Fixture(count: Int.max)
        f.prefetcher.hint([0])  // before any show the screen height is unknown: nothing yet
        #expect(f.prefetcher.window.isEmpty)
        f.prefetcher.show(0..<40)
        #expect(f.rows(.background).isEmpty)  // row 0's screen is the visible one
        f.prefetcher.hint(Array(stride(from: 1_000, to: 1_000_000, by: 1_000)) + [Int.max - 3, Int.min, -20])
        #expect(f.prefetcher.hints.count == RowPrefetcher<String, Int>.maxHints)
        #expect(f.rows(.background).count == RowPrefetcher<String, Int>.maxHints * 40)
        f.prefetcher.hint([Int.max - 3, Int.min, -20])  // past the end of the integers, and negative
        #expect(f.rows(.background) == [Int.max - 3, Int.max - 2, Int.max - 1])  // -20's rows from 0 are visible
        f.prefetcher.maxRows = 100
        f.prefetcher.hint([1_000, 2_000, 3_000])
        // The window plans 40 visible, 3 ahead and 2 behind (above row 0: none exist); hints get
        // the 55 rows maxRows leaves after it.
        #expect(f.rows(.background) == Array(1_000..<1_040) + Array(2_000..<2_015))
        #expect(f.prefetcher.window.count <= 100)
        f.prefetcher.stop()
        #expect(f.prefetcher.window.isEmpty && f.prefetcher.hints.isEmpty)
    }
}
