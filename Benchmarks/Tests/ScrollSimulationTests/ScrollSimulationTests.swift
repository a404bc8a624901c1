import Foundation
import ScrollSimulation
import Synchronization
import Testing

/// Simulations of named workloads, each run once per process: several tests judge the same runs
/// (the standard script's 40/10 window is in three), and a run is deterministic, so a second one
/// would only cost CI time.
let simulations = Mutex<[String: SimulationResult]>([:])

/// `strategy` on `workload`, simulated once per process.
func simulated(_ strategy: Strategy, on workload: Workload) -> SimulationResult {
    let key = "\(strategy) on \(workload.name)"
    if let known = simulations.withLock({ $0[key] }) { return known }
    let result = simulate(strategy, script: workload.script, latency: workload.latency)
    simulations.withLock { $0[key] = result }
    return result
}

/// The standard script with standard latencies (named as in `Workload.all`, so its runs are shared).
let standard = Workload(name: "standard", script: .standard, latency: .standard)

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
        let baseline = simulated(.visibleOnly(cancelling: false), on: standard)
        let prefetcher = simulated(.prefetcher(ahead: 40, behind: 10), on: standard)
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

@Suite("Adaptive prefetch against the fixed window and the clairvoyant bound")
struct AdaptivePrefetchTests {
    @Test func theClairvoyantBoundNeverWastesAndStartsOnlyRowsShown() {
        let script = UserScript(rows: 5_000, viewport: 40, steps: [.pause(seconds: 0.5), .fling(rowsPerSecond: 1_500, decay: 0.95), .pause(seconds: 1)])
        let bound = simulate(.clairvoyant, script: script)
        #expect(bound == simulate(.clairvoyant, script: script))
        #expect(bound.worksWasted == 0)
        let shown = Set(script.tops.flatMap { $0..<min(script.rows, $0 + script.viewport) })
        #expect(bound.worksStarted > 0 && bound.worksStarted <= shown.count)
        #expect(bound.placeholderRowFrames < simulate(.visibleOnly(cancelling: false), script: script).placeholderRowFrames)
    }

    /// The targets, on every workload (both latency profiles): adaptive shows at most 5 % more
    /// placeholder row-frames than the best of the fixed windows 10/2, 20/5, 40/10 and 120/20 on that
    /// workload, and wastes at most 1.5× the work of 40/10.
    @Test(arguments: Workload.all.map(\.name))
    func adaptiveIsWithinFivePercentOfTheBestFixedWindow(workload name: String) throws {
        let workload = try #require(Workload.all.first { $0.name == name })
        try expectAdaptiveMeetsItsTargets(on: workload)
    }

    /// Hints: on jumps each hinted a second before, adaptive shows at most 2× the placeholder
    /// row-frames of the clairvoyant bound (standard latencies; unhinted, 27×).
    @Test func hintedJumpsComeWithinTwiceTheBound() {
        let hinted = Workload(name: "hinted-jumps", script: .hintedJumps, latency: .standard)
        let adaptive = simulated(.adaptive, on: hinted)
        let bound = simulated(.clairvoyant, on: hinted)
        #expect(adaptive.placeholderRowFrames <= 2 * bound.placeholderRowFrames, "adaptive \(adaptive.placeholderRowFrames), bound \(bound.placeholderRowFrames)")
        #expect(simulated(.adaptive, on: Workload(name: "jumps", script: .jumps, latency: .standard)).placeholderRowFrames > 10 * bound.placeholderRowFrames)  // the hints did it
    }

    /// On the standard script: at least half of the gap between 40/10 and the clairvoyant bound is
    /// closed, and the mean time-to-visible is at most 0.8× that of 40/10.
    @Test func onTheStandardScriptAdaptiveClosesHalfTheGapToTheBound() {
        let fixed = simulated(.prefetcher(ahead: 40, behind: 10), on: standard)
        let adaptive = simulated(.adaptive, on: standard)
        let bound = simulated(.clairvoyant, on: standard)
        let gap = fixed.placeholderRowFrames - bound.placeholderRowFrames
        #expect(gap > 0)
        #expect((fixed.placeholderRowFrames - adaptive.placeholderRowFrames) * 2 >= gap,
                "adaptive \(adaptive.placeholderRowFrames), fixed \(fixed.placeholderRowFrames), bound \(bound.placeholderRowFrames)")
        #expect(adaptive.meanTimeToVisible * 10 <= fixed.meanTimeToVisible * 8, "\(adaptive.meanTimeToVisible) vs \(fixed.meanTimeToVisible)")
    }

    @Test func aRecordedTraceReplaysFrameByFrame() throws {
        let trace = """
            {"rows": 1000, "screen": 20}
            {"t": 0, "first": 0, "count": 20}
            {"t": 40, "first": 5, "count": 20}
            {"t": 100, "first": 990, "count": 20}
            """
        let script = try UserScript(trace: trace)
        #expect(script.rows == 1_000 && script.viewport == 20)
        #expect(Array(script.tops.prefix(8)) == [0, 0, 0, 5, 5, 5, 5, 980])  // frames of 16 ms; the last row clamps
        // A length unknown when recording began (0) is bounded by the rows shown.
        let paged = try UserScript(trace: "{\"rows\": 0, \"screen\": 20}\n{\"t\": 0, \"first\": 0, \"count\": 20}\n{\"t\": 50, \"first\": 60, \"count\": 20}")
        #expect(paged.rows == 80 && paged.tops.last == 60)
        #expect(throws: TraceError.self) { try UserScript(trace: "{\"rows\": 10}\n") }
        #expect((try? UserScript(trace: "{\"rows\": 10, \"screen\": 5}\n{\"t\": \"soon\"}")) == nil)
    }

    @Test func aTraceCarriesHintsOnAShowOrOnALineOfTheirOwn() throws {
        let trace = """
            {"rows": 1000, "screen": 20}
            {"t": 0, "first": 0, "count": 20, "hints": [500]}
            {"t": 40, "hints": [600, 980]}
            {"t": 100, "first": 600, "count": 20, "hints": []}
            """
        let script = try UserScript(trace: trace)
        #expect(script.hints == [0: [500], 3: [600, 980], 7: []])
        #expect(Array(script.tops.prefix(8)) == [0, 0, 0, 0, 0, 0, 0, 600])
        // A line with a show half given, or with nothing at all, is refused.
        #expect(throws: TraceError.self) { try UserScript(trace: "{\"rows\": 10, \"screen\": 5}\n{\"t\": 0, \"first\": 3}") }
        #expect(throws: TraceError.self) { try UserScript(trace: "{\"rows\": 10, \"screen\": 5}\n{\"t\": 0}") }
    }

    @Test func hintedJumpsHintEachJumpOneSecondBefore() {
        let script = UserScript.hintedJumps
        #expect(script.tops == UserScript.jumps.tops)
        let jumpFrames = zip(script.tops.indices.dropFirst(), zip(script.tops, script.tops.dropFirst())).filter { $1.0 != $1.1 }.map(\.0)
        #expect(jumpFrames.count >= 20)
        for frame in jumpFrames {
            let hinted = script.hints.filter { $0.value == [script.tops[frame]] && $0.key < frame }.map(\.key).max()
            #expect(hinted.map { frame - $0 >= 60 } == true, "frame \(frame): hinted at \(String(describing: hinted))")  // 60 frames of 16 ms ≈ 1 s
        }
    }
}

/// The sessions recorded by `Benchmarks/record-traces.py` (browse and history driven in tmux).
let tracesFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Traces", isDirectory: true)

@Suite("Recorded traces")
struct RecordedTraceTests {
    static let workloads = (try? Workload.recorded(in: tracesFolder)) ?? []

    /// Sessions recorded after the policy was tuned on the others, to see how it does on moves it
    /// was not fitted to: it misses its targets there (Benchmarks/README.md gives the figures).
    static let heldOut: Set<String> = ["browse-mixed", "history-mixed"]

    @Test func theRecordedTracesAreThere() throws {
        let names = Set(try Workload.recorded(in: tracesFolder).map(\.name))
        for name in ["browse-held-keys", "browse-pgdn-bursts", "browse-reading", "history-held-keys", "history-pgdn-bursts", "history-search-jumps"] + Self.heldOut {
            #expect(names.contains(name) && names.contains(name + "/heavy-tail"), "\(name) is missing from \(tracesFolder.path)")
        }
    }

    /// The adaptive policy's targets on every recorded session, under both latency profiles: met on
    /// the sessions it was tuned on; a known miss on the held-out ones (if it starts meeting them,
    /// this test says so, and the known issue goes).
    @Test(arguments: workloads.map(\.name))
    func adaptiveMeetsItsTargetsOnTheRecordedTrace(_ name: String) throws {
        let workload = try #require(Self.workloads.first { $0.name == name })
        let session = String(name.split(separator: "/")[0])
        guard Self.heldOut.contains(session) else { return try expectAdaptiveMeetsItsTargets(on: workload) }
        // Partly unavoidable: no policy meets the targets on both sides of a held key, a rest, then a
        // burst of PgDn or not (`ForkTests`).
        withKnownIssue("adaptive misses its targets on sessions it was not tuned on: bursts of PgDn right after a held key") {
            try expectAdaptiveMeetsItsTargets(on: workload)
        }
        // What it does do there: fewer placeholders than the fixed 40/10 window (today's default).
        let fixed = simulated(.prefetcher(ahead: 40, behind: 10), on: workload)
        let adaptive = simulated(.adaptive, on: workload)
        #expect(adaptive.placeholderRowFrames < fixed.placeholderRowFrames, "\(name): \(adaptive.placeholderRowFrames) vs \(fixed.placeholderRowFrames)")
    }

    /// `history` hints the next match as soon as a hit is found, 1.5 s before `n` goes there in
    /// this session. The session's first moves were not hinted (Esc back to the whole log at the
    /// filter's selection, and the first `n`, a scan); from the first hinted match on, placeholder
    /// row-frames stay within 2× the clairvoyant bound (standard latencies).
    @Test func searchJumpsHintedByHistoryComeWithinTwiceTheBound() throws {
        let workload = try #require(Self.workloads.first { $0.name == "history-search-jumps" })
        let firstHinted = try #require(workload.script.hints.filter { $0.value.count >= 2 }.map(\.key).min())
        let hinted = workload.script.dropFirst(firstHinted)
        let adaptive = simulate(.adaptive, script: hinted, latency: workload.latency)
        let bound = simulate(.clairvoyant, script: hinted, latency: workload.latency)
        #expect(adaptive.placeholderRowFrames <= 2 * bound.placeholderRowFrames, "adaptive \(adaptive.placeholderRowFrames), bound \(bound.placeholderRowFrames)")
        // Without the hints, the same jumps cost several times more.
        let unhinted = UserScript(rows: hinted.rows, viewport: hinted.viewport, tops: hinted.tops)
        #expect(simulate(.adaptive, script: unhinted, latency: workload.latency).placeholderRowFrames > 3 * adaptive.placeholderRowFrames)
    }
}

@Suite("Forks: where the targets cannot all be met")
struct ForkTests {
    @Test func theScriptsOfAForkAreTheSameUpToItsFrameAndDifferThere() throws {
        for fork in Fork.all {
            #expect(fork.frame > 0)
            #expect(Array(fork.onward.tops.prefix(fork.frame)) == Array(fork.back.tops.prefix(fork.frame)), "\(fork.name)")
            #expect(fork.onward.tops[fork.frame] > fork.back.tops[fork.frame], "\(fork.name): onward goes down, back goes up")
        }
    }

    @Test func foresightFromTheFirstFrameOrOfEveryRowIsTheBound() throws {
        let fork = try #require(Fork.all.first)
        let bound = clairvoyant(fork.onward, latency: .standard, maxConcurrent: 6)
        let everyRow = clairvoyant(fork.onward, latency: .standard, maxConcurrent: 6, foresight: Foresight(frame: fork.frame, rows: fork.onward.rows))
        let fromTheStart = clairvoyant(fork.onward, latency: .standard, maxConcurrent: 6, foresight: Foresight(frame: 0, rows: 0))
        #expect(everyRow == bound && fromTheStart == bound)
        // Knowing less can only cost placeholders, never save them.
        let none = clairvoyant(fork.onward, latency: .standard, maxConcurrent: 6, foresight: Foresight(frame: fork.frame, rows: 0))
        #expect(none.placeholderRowFrames > bound.placeholderRowFrames)
    }

    /// A held key, a rest, then a burst of PgDn (onward) or the key held the other way (back): a
    /// policy that stays within the back script's waste budget started at most that many rows ahead
    /// before the scripts part, and then even the clairvoyant scheduler shows more placeholders on
    /// the onward script than its target allows. So no policy that cannot see the future meets the
    /// targets on every script (issue 28), under either latency profile.
    @Test(arguments: ["standard", "heavy-tail"])
    func noPolicyMeetsTheTargetsOnBothSidesOfAHeldKeyThenARest(profile: String) throws {
        let fork = try #require(Fork.all.first { $0.name == "held-then" })
        let analysis = ForkAnalysis(fork, latency: profile == "standard" ? .standard : .heavyTail)
        #expect(analysis.boundWithinBudget > analysis.onwardTarget, "bound \(analysis.boundWithinBudget), target \(analysis.onwardTarget)")
        // With three screens early it would be met: the budget is what forbids it.
        let generous = clairvoyant(fork.onward, latency: profile == "standard" ? .standard : .heavyTail, maxConcurrent: 6,
                                   foresight: Foresight(frame: fork.frame, rows: 3 * fork.onward.viewport))
        #expect(generous.placeholderRowFrames <= analysis.onwardTarget)
    }
}

/// Checks adaptive against every fixed window on `workload`.
func expectAdaptiveMeetsItsTargets(on workload: Workload, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let fixed = [(10, 2), (20, 5), (40, 10), (120, 20)].map { simulated(.prefetcher(ahead: $0.0, behind: $0.1), on: workload) }
    let best = try #require(fixed.map(\.placeholderRowFrames).min())
    let window40 = fixed[2]
    let adaptive = simulated(.adaptive, on: workload)
    #expect(adaptive.placeholderRowFrames * 100 <= best * 105, "\(workload.name): placeholders \(adaptive.placeholderRowFrames), best fixed \(best)", sourceLocation: sourceLocation)
    #expect(adaptive.worksWasted * 2 <= window40.worksWasted * 3, "\(workload.name): wasted \(adaptive.worksWasted), 40/10 \(window40.worksWasted)", sourceLocation: sourceLocation)
}
