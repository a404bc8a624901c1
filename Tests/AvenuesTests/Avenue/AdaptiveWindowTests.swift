import Testing
@testable import Avenues
import AvenuesTestSupport

@Suite("Adaptive prefetch window", .timeLimit(.minutes(5)))
struct AdaptiveWindowTests {
    /// A 40-row screen over 100,000 rows whose work never finishes, on a clock the test moves.
    struct Fixture {
        let work = ControlledWork<String, Int>()
        let clock = TestClock()
        let avenue: Avenue<Int, String, Int>
        let prefetcher: RowPrefetcher<String, Int>

        init(maxConcurrent: Int = 6) {
            avenue = Avenue(storage: MemoryStorage(), processor: AutoProcessor(maxConcurrent: maxConcurrent, work))
            let clock = clock
            prefetcher = RowPrefetcher(avenue: avenue, policy: .adaptive, now: { clock.now }) { row in
                (0..<100_000).contains(row) ? "row\(row)" : nil
            }
        }

        func rows(_ priority: LoadPriority) -> [Int] {
            prefetcher.window.filter { $0.value == priority }.map(\.key).sorted()
        }

        /// Shows a screen from `top` one 16 ms frame after the last.
        func frame(_ top: Int) {
            clock.advance(by: .milliseconds(16))
            prefetcher.show(top..<top + 40)
        }
    }

    @Test func atRestTheWindowIsTwoScreensAheadUntilTheListMovesThenOne() {
        let f = Fixture()
        f.frame(1_000)
        #expect(f.rows(.visible) == Array(1_000..<1_040))
        // Before it has seen how the list moves: room for a PgDn or two.
        #expect(f.rows(.prefetch) == Array(990..<1_000) + Array(1_040..<1_120))
        #expect(!f.prefetcher.estimates.seeking)
        // A scroll (not a burst of steps) that comes to rest: a screen ahead, a quarter behind.
        for step in 1...10 { f.frame(1_000 + step) }
        for _ in 0..<20 { f.frame(1_010) }
        // (Rows asked ahead before stay wanted, up to four screens out: the list may head there.)
        #expect(f.prefetcher.estimates.ahead == 40 && f.prefetcher.estimates.behind == 10, "\(f.prefetcher.estimates)")
        #expect(Set(Array(1_000..<1_010) + Array(1_050..<1_090)).isSubset(of: f.rows(.prefetch)))
    }

    @Test func aFlingSeeksAndTheScreenWhereItStopsLoadsAtRest() {
        let f = Fixture()
        f.frame(0)
        var top = 0
        for _ in 0..<10 {  // 48 rows a frame: 3,000 rows/s
            top += 48
            f.frame(top)
        }
        let estimates = f.prefetcher.estimates
        #expect(estimates.seeking, "\(estimates)")
        #expect(estimates.rowsPerSecond > 2_000)
        // Too fast to guess where it lands: the rows passing by are not loaded.
        #expect(f.rows(.visible).allSatisfy { !(top..<top + 40).contains($0) })
        // The user stops; frames go on showing the same rows.
        for _ in 0..<15 { f.frame(top) }
        #expect(!f.prefetcher.estimates.seeking)
        #expect(f.rows(.visible) == Array(top..<top + 40))
    }

    @Test func pgDnFromRestIsAStepNotSpeed() {
        let f = Fixture()
        f.frame(0)
        for _ in 0..<5 { f.frame(0) }
        f.frame(40)  // PgDn
        #expect(!f.prefetcher.estimates.seeking)
        #expect(f.prefetcher.estimates.rowsPerSecond == 0)
        #expect(f.rows(.visible) == Array(40..<80))
    }

    @Test func aSteadyScrollWidensTheWindowWithTheLatencyMeasured() async {
        let f = Fixture(maxConcurrent: 100)
        f.frame(0)
        // Every visible row's load lands 200 ms after it was asked for.
        for row in 0..<40 { await f.work.waitUntilStarted("row\(row)") }
        f.clock.advance(by: .milliseconds(200))
        for row in 0..<40 { f.work.succeed("row\(row)", with: row) }
        await eventually("the first screen arrived") { f.avenue.item(at: 39) != nil }
        f.frame(0)
        #expect(f.prefetcher.estimates.latency == .milliseconds(216))  // asked at one frame, seen at the frame after it landed
        var top = 0
        for step in 1...60 {  // 2 rows a frame, 125 rows/s: 27 rows pass during a load
            top = step * 2
            f.frame(top)
        }
        let estimates = f.prefetcher.estimates
        #expect(estimates.rowsPerSecond > 100 && estimates.rowsPerSecond < 130, "\(estimates)")
        // About 27 rows pass during a load: less than a screen, so no seeking, and the window ahead
        // is twice that (more than the one screen it is at rest).
        #expect(!estimates.seeking)
        #expect(estimates.ahead > 40 && estimates.ahead == Int(2 * estimates.rowsPerSecond * 0.216), "\(estimates)")
        #expect(f.rows(.prefetch).filter { $0 >= top + 40 } == Array(top + 40 ..< top + 40 + estimates.ahead))
    }

    @Test func pgDnPressedAgainAndAgainIsSpeedAndWidensTheWindowWithoutSeeking() {
        let f = Fixture()
        f.frame(0)
        for _ in 0..<20 { f.frame(0) }
        var top = 0
        for _ in 0..<3 {  // PgDn every 8 frames (128 ms): 312 rows/s, a step at a time
            top += 40
            f.frame(top)
            for _ in 0..<7 { f.frame(top) }
        }
        let estimates = f.prefetcher.estimates
        #expect(!estimates.seeking, "\(estimates)")  // every screen a burst lands on is shown
        #expect(estimates.rowsPerSecond > 300 && estimates.rowsPerSecond < 320, "\(estimates)")
        #expect(estimates.ahead >= 60, "\(estimates)")  // wider than the screen it is at rest
        #expect(f.rows(.visible) == Array(top..<top + 40))
        // A pause ends the burst: at rest, the screens a burst usually crosses (the first guess, 2,
        // and this burst's 3, averaged: 2.5, two screens).
        for _ in 0..<40 { f.frame(top) }
        #expect(f.prefetcher.estimates.ahead == 80 && f.prefetcher.estimates.rowsPerSecond == 0, "\(f.prefetcher.estimates)")
        // Lone steps (reading a screen at a time) bring it down to one.
        for _ in 0..<3 {
            top += 40
            f.frame(top)
            for _ in 0..<60 { f.frame(top) }
        }
        #expect(f.prefetcher.estimates.ahead == 40, "\(f.prefetcher.estimates)")
    }

    /// The window shrinks as bursts of PgDn end; the loads it asked ahead go on, but only within
    /// `maxRows` with the rows behind (they went past it by those rows: found by `.ci/soak`,
    /// AVENUES_TEST_SEED=118, on the hostile sequences below).
    @Test func loadsKeptAheadAsTheWindowShrinksStayWithinMaxRows() {
        let f = Fixture()
        f.prefetcher.maxRows = 200  // five screens: what is kept ahead reaches the bound
        f.frame(0)
        for _ in 0..<20 { f.frame(0) }
        var top = 0
        var widest = 0
        for _ in 0..<3 {  // PgDn every 2 frames (1,250 rows/s): the window widens to the bound
            top += 40
            for _ in 0..<2 {
                f.frame(top)
                widest = max(widest, f.prefetcher.window.count)
                #expect(f.prefetcher.window.count <= 200, "\(f.prefetcher.estimates)")
            }
        }
        for _ in 0..<40 {  // at rest: two screens ahead, a quarter behind, and what was asked ahead
            f.frame(top)
            widest = max(widest, f.prefetcher.window.count)
            #expect(f.prefetcher.window.count <= 200, "\(f.prefetcher.estimates)")
        }
        #expect(f.prefetcher.estimates.ahead == 80 && f.prefetcher.estimates.behind == 10, "\(f.prefetcher.estimates)")
        #expect(widest == 200)  // the bound was reached, not kept clear of
    }

    @Test func afterJumpsTheWindowAtRestShrinksAndHintedScreensComeFirst() {
        let f = Fixture()
        f.frame(0)
        f.prefetcher.hint([70_000])
        // At rest, before any jump: prefetched after the first quarter screen ahead (queued, not shown).
        #expect(f.rows(.prefetch) == Array(40..<120) + Array(70_000..<70_040))
        #expect(f.rows(.background).isEmpty)
        for target in [50_000, 10_000] {  // two jumps, read for a moment each
            f.frame(target)
            for _ in 0..<20 { f.frame(target) }
        }
        var estimates = f.prefetcher.estimates
        #expect(estimates.jumping && estimates.ahead == 10 && estimates.behind == 2, "\(estimates)")
        // The last jump went up: 10 rows ahead above, 2 behind below, and the hinted screen, now
        // the likelier next place, prefetched right after the visible rows.
        #expect(f.rows(.prefetch) == Array(9_990..<10_000) + Array(10_040..<10_042) + Array(70_000..<70_040))
        // Scrolling from rest is a move that was not a jump: a screen ahead at rest again.
        for step in 1...10 { f.frame(10_000 + step) }
        for _ in 0..<20 { f.frame(10_010) }
        estimates = f.prefetcher.estimates
        #expect(!estimates.jumping && estimates.ahead == 40, "\(estimates)")
    }

    @Test func slowLoadsAmongTheWindowsWidenTheWindowOfASteadyScroll() async {
        let f = Fixture(maxConcurrent: 100)
        f.frame(0)
        // The visible rows land within a frame; the 50 prefetched rows take 2 s (a slow tail).
        for row in 0..<40 { await f.work.waitUntilStarted("row\(row)") }
        for row in 0..<40 { f.work.succeed("row\(row)", with: row) }
        await eventually("the first screen arrived") { f.avenue.item(at: 39) != nil }
        f.frame(0)
        for row in 40..<80 { await f.work.waitUntilStarted("row\(row)") }
        f.clock.advance(by: .seconds(2))
        for row in 40..<80 { f.work.succeed("row\(row)", with: row) }
        await eventually("the rows ahead arrived") { f.avenue.item(at: 79) != nil }
        f.frame(0)
        var top = 0
        for step in 1...60 {  // a row every other frame: 31 rows/s, under a screen a second
            if step.isMultiple(of: 2) { top += 1 }
            f.frame(top)
        }
        let estimates = f.prefetcher.estimates
        #expect(!estimates.seeking && estimates.latency < .milliseconds(100), "\(estimates)")
        // 31 rows/s for the 2 s the slow loads take: about 62 rows ahead, not the resting screen.
        #expect(estimates.ahead > 55 && estimates.ahead < 70, "\(estimates)")
    }

    /// Probe of 2026-11-26: a fling near either end of the integers trapped (arithmetic overflow)
    /// where the seeking window's path was measured; and a clock of the caller's that goes back gave
    /// negative latencies. Both ends, both directions, and a clock that jumps back and forth.
    @Test func flingsAtTheEndsOfTheIntegersAndAClockThatGoesBackNeverTrap() async {
        let work = ControlledWork<String, Int>()
        let offset = Shared(Duration.zero)
        let start = ContinuousClock.now
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: AutoProcessor(maxConcurrent: 100, work))
        let prefetcher = RowPrefetcher(avenue: avenue, policy: .adaptive, now: { start + offset.value }) { "row\($0)" }
        func fling(from first: Int, by step: Int, frames: Int) {
            for frame in 0..<frames {
                offset.withLock { $0 += .milliseconds(16) }
                let top = first + frame * step
                prefetcher.show(top..<top + 40)
                #expect(prefetcher.window.count <= prefetcher.maxRows)
            }
        }
        fling(from: Int.max - 40 - 200 * 12, by: 200, frames: 13)  // down, seeking, up to Int.max
        #expect(prefetcher.estimates.seeking)
        fling(from: Int.min + 200 * 12, by: -200, frames: 13)        // up, seeking, down to Int.min
        #expect(prefetcher.estimates.seeking)
        // A clock that goes back while rows load: latencies are never negative.
        fling(from: 1_000, by: 0, frames: 1)
        for row in 1_000..<1_040 { await work.waitUntilStarted("row\(row)") }
        offset.withLock { $0 -= .seconds(5) }
        for row in 1_000..<1_040 { work.succeed("row\(row)", with: row) }
        await eventually("the screen arrived") { avenue.item(at: 1_039) != nil }
        fling(from: 1_000, by: 0, frames: 1)
        #expect(prefetcher.estimates.latency >= .zero, "\(prefetcher.estimates)")
        prefetcher.stop()
    }

    /// Random hostile sequences, both policies: ranges at and across the ends of the integers,
    /// hints there too, a clock that stops, goes back or leaps a day. Never a trap; the window holds
    /// at most `maxRows` rows (a bound below a screen, near one, and of five), all of rows that exist;
    /// the estimates stay numbers.
    @Test(arguments: [
        (UInt64(1), RowPrefetcher<String, Int>.Policy.adaptive, 64), (2, .adaptive, 64), (3, .fixed, 64),
        (4, .adaptive, 7), (5, .adaptive, 200), (6, .fixed, 7),
    ])
    func hostileSequencesKeepTheWindowBounded(seed: UInt64, policy: RowPrefetcher<String, Int>.Policy, maxRows: Int) async {
        var random = SplitMix64(seed: seed)
        let offset = Shared(Duration.zero)
        let start = ContinuousClock.now
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: AutoProcessor(maxConcurrent: 6, ControlledWork<String, Int>()))
        let prefetcher = RowPrefetcher(avenue: avenue, policy: policy, now: { start + offset.value }) { $0 >= 0 ? "row\($0)" : nil }
        prefetcher.maxRows = maxRows
        let edges = [Int.min, Int.min + 1, -1, 0, 1, Int.max - 40, Int.max - 1, Int.max]
        func position() -> Int {
            random.next() % 3 == 0 ? edges[Int(random.next() % UInt64(edges.count))] : Int(random.next() % 100_000)
        }
        for _ in 0..<600 {
            // A step takes milliseconds in a debug build: the pool's two threads are given back
            // between steps (600 steps held one for about 2 s).
            await Task.yield()
            switch random.next() % 8 {
            case 0: offset.withLock { $0 -= .milliseconds(Int64(random.next() % 500)) }
            case 1: offset.withLock { $0 += .seconds(86_400) }
            case 2: break
            default: offset.withLock { $0 += .milliseconds(Int64(random.next() % 40)) }
            }
            let a = position()
            let b = random.next() % 2 == 0 ? position() : a &+ Int(random.next() % 60)
            if random.next() % 8 == 0 { prefetcher.hint([position(), position()]) }
            prefetcher.show(min(a, b) ..< max(a, b))
            let window = prefetcher.window
            #expect(window.count <= maxRows)
            #expect(window.keys.allSatisfy { $0 >= 0 })
            let estimates = prefetcher.estimates
            #expect(estimates.rowsPerSecond.isFinite && estimates.rowsPerSecond >= 0 && estimates.latency >= .zero, "\(estimates)")
        }
        prefetcher.stop()
        #expect(prefetcher.window.isEmpty)
    }
}
