import Testing
@testable import Avenues
import AvenuesTestSupport

/// Seeded random operation sequences against an avenue over a bounded `MemoryStorage`, with the
/// avenue's promise to a screen checked after every step: a visible row that has no value is
/// loading or failed, never idle — whatever the storage's limits — no row's work runs twice at
/// once, no work runs for a row off the window, a visible row whose load ended is told so (a screen
/// redraws on what it is told), and no row off the window is told. Stopped, the avenue and its processor hold nothing. Workers run on a ``HeldExecutor``,
/// so every step's effects have happened when it is checked, and a seed replays exactly.
@Suite("Avenue properties", .timeLimit(.minutes(5)))
struct AvenuePropertyTests {
    static let seeds: ClosedRange<UInt64> = 1...20
    /// 100,000 steps in all; a tenth under ThreadSanitizer, which adds nothing to a run on one thread
    /// but its cost.
    static let stepsPerSeed = ThreadSanitizer.annotations == nil ? 5_000 : 500
    static let rows = 80

    @Test func aVisibleRowWithoutAValueIsAlwaysLoadingOrFailedWhateverTheMemoryLimits() async {
        // On a thread of its own: the sequences never suspend, and would hold a thread of the
        // small cooperative pool every other test needs.
        let failure = await onOwnThread { () -> String? in
            for seed in Self.seeds {
                if let failure = Self.run(seed: seed, steps: Self.stepsPerSeed) { return "seed \(seed): \(failure)" }
            }
            return nil
        }
        if let failure { Issue.record("\(failure)") }
    }

    /// Runs one sequence; the first broken promise, described with its step, or `nil`.
    static func run(seed: UInt64, steps: Int) -> String? {
        var random = SplitMix64(seed: seed)
        let executor = HeldExecutor()
        let work = ControlledWork<Int, Int>()
        let countLimit = Int.random(in: 1...12, using: &random)
        let storage = MemoryStorage<Int, Int>(countLimit: countLimit)
        let clock = TestClock()
        let processor = AutoProcessor(maxConcurrent: Int.random(in: 1...4, using: &random), executor: executor, work)
        let avenue = Avenue<Int, Int, Int>(
            storage: storage, processor: processor,
            callbackMode: .completingThread, retryPolicy: RetryPolicy(attempts: 3, base: .seconds(1), cap: .seconds(4), jitter: 0),
            now: { clock.now }, sleep: { _ in try await Task.sleep(for: .seconds(3_600)) }
        )
        let prefetcher = RowPrefetcher(
            avenue: avenue, ahead: Int.random(in: 0...6, using: &random), behind: Int.random(in: 0...2, using: &random)
        ) { $0 < rows ? $0 : nil }
        // The rows told of a change during the step now running (callbacks run on the completing
        // thread: within `executor.runAll()` or the call that finished the work).
        let told = Shared<Set<Int>>([])
        let observation = avenue.observe { event in told.withLock { _ = $0.insert(event.index) } }
        defer { observation.cancel() }
        var visible = 0..<0
        var loadingBefore: Set<Int> = []
        var version = 0
        // The last steps, for the message of a failure (kept short: this runs 100,000 times).
        var log = RecentSteps()
        for step in 0..<steps {
            let roll = Int.random(in: 0..<100, using: &random)
            switch roll {
            case 0..<35:
                let top = Int.random(in: 0..<rows, using: &random)
                visible = top ..< min(rows, top + Int.random(in: 1...8, using: &random))
                prefetcher.show(visible)
                let shown = visible
                log.append("show \(shown)")
            case 35..<38:
                prefetcher.show(visible)  // a redraw
                log.append("redraw")
            case 38..<40:
                // The app foresees jumps (a search match, the end); sometimes none.
                let hints = (0..<Int.random(in: 0...3, using: &random)).map { _ in Int.random(in: -4..<(rows + 4), using: &random) }
                prefetcher.hint(hints)
                log.append("hint \(hints)")
            case 40..<65:
                if let key = work.pendingKeys.sorted().randomElement(using: &random) {
                    version += 1
                    work.succeed(key, with: key * 1_000_000 + version)
                    log.append("succeed \(key)")
                }
            case 65..<72:
                if let key = work.pendingKeys.sorted().randomElement(using: &random) {
                    work.fail(key, with: TestError("boom"))
                    log.append("fail \(key)")
                }
            case 72..<87:
                // Someone else writes to the shared storage: evictions.
                let other = 1_000 + Int.random(in: 0..<50, using: &random)
                storage.set(other * 1_000_000, for: other)
                log.append("write \(other)")
            case 87..<92:
                let key = Int.random(in: 0..<rows, using: &random)
                storage.removeValue(for: key)
                log.append("remove \(key)")
            default:
                clock.advance(by: .milliseconds(Int.random(in: 100...3_000, using: &random)))
                log.append("advance clock")
            }
            executor.runAll()
            // The same work is never done twice at once (work here honours cancellation: a
            // cancelled run is no longer pending).
            if let (row, runs) = work.keysPendingMoreThanOnce.first {
                return "step \(step): row \(row)'s work runs \(runs) times at once (\(log))"
            }
            // The window stays within maxRows, and background rows are only those of hinted screens.
            let window = prefetcher.window
            // Work off the window is cancelled: no row outside it has work running (the work here
            // honours cancellation, and no other caller claims these keys).
            if let row = work.pendingKeys.first(where: { window[$0] == nil }) {
                return "step \(step): row \(row)'s work runs outside the window \(window.keys.sorted()) (\(log))"
            }
            guard window.count <= prefetcher.maxRows else { return "step \(step): \(window.count) rows in the window (\(log))" }
            let height = max(1, visible.count)
            for (row, priority) in window where priority == .background {
                guard prefetcher.hints.contains(where: { $0 <= row && row < $0 + height }) else {
                    return "step \(step): row \(row) warms at background, hints \(prefetcher.hints) (\(log))"
                }
            }
            // A screen redraws on what it is told: a visible row whose load ended is told so, and
            // a row no longer prepared (off the window) is never told of an old load.
            let toldNow = told.withLock { told in defer { told = [] }; return told }
            if let row = toldNow.first(where: { window[$0] == nil }) {
                return "step \(step): row \(row) was told, off the window \(window.keys.sorted()) (\(log))"
            }
            for row in loadingBefore where visible.contains(row) && !toldNow.contains(row) {
                switch avenue.state(at: row) {
                case .loading, .empty: break  // still loading, or cancelled (not a load that ended)
                case let state: return "step \(step): visible row \(row) went from loading to \(state) untold (\(log))"
                }
            }
            loadingBefore = Set(visible.filter { if case .loading = avenue.state(at: $0) { true } else { false } })
            for row in visible {
                let state = avenue.state(at: row)
                if let value = avenue.item(at: row) {
                    guard value / 1_000_000 == row else { return "step \(step): row \(row) shows \(value) (\(log))" }
                    guard state.hasValue else { return "step \(step): row \(row) has a value but is \(state) (\(log))" }
                } else {
                    switch state {
                    case .loading, .failed: break
                    default: return "step \(step): visible row \(row) has no value and is \(state), countLimit \(countLimit) (\(log))"
                    }
                }
            }
        }
        prefetcher.stop()
        executor.runAll()
        // Stopped, the avenue lets every row and load go, and the processor every claim and worker.
        guard avenue.tableSizes.isIdle else { return "stopped, the avenue still holds \(avenue.tableSizes) (\(log))" }
        guard processor.tableSizes.isIdle else { return "stopped, the processor still holds \(processor.tableSizes) (\(log))" }
        return nil
    }
}

/// The last eight steps of a sequence, cheaply: strings are made only when a failure is described.
struct RecentSteps: CustomStringConvertible {
    private var steps: [() -> String] = []
    private var next = 0

    mutating func append(_ step: @autoclosure @escaping () -> String) {
        if steps.count < 8 { steps.append(step) } else { steps[next] = step }
        next = (next + 1) % 8
    }

    var description: String {
        let ordered = steps.count < 8 ? steps : Array(steps[next...] + steps[..<next])
        return ordered.map { $0() }.joined(separator: "; ")
    }
}
