import ScrollSimulation
import Testing

@Suite("Scroll simulation")
struct ScrollSimulationTests {
    @Test func theSimulationIsDeterministic() {
        let short = UserScript(rows: 5_000, viewport: 40, steps: [.pause(seconds: 0.5), .fling(rowsPerSecond: 1_500, decay: 0.95), .pause(seconds: 0.5)])
        let first = simulate(.prefetcher(ahead: 40, behind: 10), script: short)
        let second = simulate(.prefetcher(ahead: 40, behind: 10), script: short)
        #expect(first == second)
        #expect(first.worksStarted > 0)
    }

    @Test func rowPrefetcherMeetsItsTargetsAgainstVisibleOnlyWithoutCancel() {
        let baseline = simulate(.visibleOnly(cancelling: false))
        let prefetcher = simulate(.prefetcher(ahead: 40, behind: 10))
        // Targets: at most a third of the placeholder row-frames and a third of the wasted work.
        #expect(prefetcher.placeholderRowFrames * 3 <= baseline.placeholderRowFrames,
                "placeholders \(prefetcher.placeholderRowFrames) vs \(baseline.placeholderRowFrames)")
        #expect(prefetcher.worksWasted * 3 <= baseline.worksWasted,
                "wasted \(prefetcher.worksWasted) vs \(baseline.worksWasted)")
        #expect(prefetcher.meanTimeToVisible < baseline.meanTimeToVisible)
    }

    @Test func theScriptCoversScrollingFlingsPausesAndJumps() {
        let tops = UserScript.standard.tops
        #expect(tops.first == 0)
        #expect(tops.contains(99_960))
        #expect(zip(tops, tops.dropFirst()).contains { $1 - $0 > 30 })   // a fling moves many rows a frame
        #expect(zip(tops, tops.dropFirst()).contains { $1 < $0 })        // scrolling up
    }
}
