import Avenues
import Synchronization

/// How a front end drives the avenue in the simulation.
public enum Strategy: Sendable, Hashable, CustomStringConvertible {
    /// Prepare the visible rows every frame; optionally cancel rows that left the screen.
    case visibleOnly(cancelling: Bool)
    /// A ``Avenues/RowPrefetcher`` with this fixed window.
    case prefetcher(ahead: Int, behind: Int)
    /// A ``Avenues/RowPrefetcher`` with the adaptive policy.
    case adaptive
    /// The bound: knows the script and every latency, starts exactly the rows that will be shown,
    /// in the order they are first needed, as early as the workers allow (``clairvoyant(_:latency:maxConcurrent:)``).
    case clairvoyant

    /// The strategies compared: visible-only without and with cancel, four fixed windows, the
    /// adaptive window and the clairvoyant bound.
    public static let compared: [Strategy] = [
        .visibleOnly(cancelling: false), .visibleOnly(cancelling: true),
        .prefetcher(ahead: 10, behind: 2), .prefetcher(ahead: 20, behind: 5), .prefetcher(ahead: 40, behind: 10),
        .prefetcher(ahead: 120, behind: 20), .adaptive, .clairvoyant,
    ]

    /// A short name for tables.
    public var description: String {
        switch self {
        case .visibleOnly(false): "visible only, no cancel"
        case .visibleOnly(true): "visible only, cancel"
        case .prefetcher(let ahead, let behind): "RowPrefetcher ahead \(ahead) behind \(behind)"
        case .adaptive: "RowPrefetcher adaptive"
        case .clairvoyant: "clairvoyant bound"
        }
    }

    /// The name in `--json` output: `visible-only`, `visible-only-cancel`, `fixed-40-10`,
    /// `adaptive`, `clairvoyant`.
    public var name: String {
        switch self {
        case .visibleOnly(false): "visible-only"
        case .visibleOnly(true): "visible-only-cancel"
        case .prefetcher(let ahead, let behind): "fixed-\(ahead)-\(behind)"
        case .adaptive: "adaptive"
        case .clairvoyant: "clairvoyant"
        }
    }
}

/// How long the work for a row takes: log-normal, seeded per row, so every strategy meets the same
/// latencies (median 60 ms, most between 25 and 150 ms, clipped to 5 ms–1 s).
public struct WorkLatency: Sendable {
    /// The seed.
    public let seed: UInt64
    /// The median latency in milliseconds.
    public let medianMilliseconds: Double
    /// The spread (standard deviation of the logarithm).
    public let sigma: Double

    /// The share of loads that take `tailMilliseconds` instead (a slow back end now and then).
    public let tailShare: Double
    /// How long a load in the tail takes.
    public let tailMilliseconds: Double

    /// The standard latencies of the benchmark.
    public static let standard = WorkLatency(seed: 0x5C_0011, medianMilliseconds: 60, sigma: 0.5)
    /// The standard latencies with a heavy tail: 5 % of loads take 2 s.
    public static let heavyTail = WorkLatency(seed: 0x5C_0011, medianMilliseconds: 60, sigma: 0.5, tailShare: 0.05, tailMilliseconds: 2_000)

    /// Creates a latency distribution.
    public init(seed: UInt64, medianMilliseconds: Double, sigma: Double, tailShare: Double = 0, tailMilliseconds: Double = 0) {
        self.seed = seed
        self.medianMilliseconds = medianMilliseconds
        self.sigma = sigma
        self.tailShare = tailShare
        self.tailMilliseconds = tailMilliseconds
    }

    /// The latency of `row`'s work.
    public func latency(of row: Int) -> Duration {
        var rng = SplitMix64(seed: seed ^ (UInt64(truncatingIfNeeded: row) &* 0x9E37_79B9_7F4A_7C15))
        // Box–Muller: two uniform numbers in (0, 1] make one standard normal one.
        let u1 = Double(rng.next() >> 11 | 1) / Double(1 << 53)
        let u2 = Double(rng.next() >> 11) / Double(1 << 53)
        let normal = (-2 * _log(u1)).squareRoot() * _cos(2 * Double.pi * u2)
        if tailShare > 0, Double(rng.next() >> 11) / Double(1 << 53) < tailShare {
            return .microseconds(Int64(tailMilliseconds * 1_000))
        }
        let milliseconds = min(1_000, max(5, medianMilliseconds * _exp(sigma * normal)))
        return .microseconds(Int64(milliseconds * 1_000))
    }
}

/// What one strategy did on the script.
public struct SimulationResult: Sendable, Hashable {
    /// The strategy.
    public var strategy: Strategy
    /// Frames played.
    public var frames: Int
    /// Visible rows summed over all frames that showed a placeholder instead of a value.
    public var placeholderRowFrames: Int
    /// Work runs started.
    public var worksStarted: Int
    /// Runs cancelled after they started.
    public var worksCancelled: Int
    /// Runs that finished for rows never shown after (the user had scrolled past).
    public var worksUnshown: Int
    /// Rows that came into view.
    public var appearances: Int
    /// Appearances that left the screen before their value arrived.
    public var appearancesLeftUnloaded: Int
    /// Summed wait between a row coming into view and its value showing (0 when it was ready).
    public var totalTimeToVisible: Duration
    /// The 95th percentile of those waits (0 when it was ready), over rows shown with their value.
    public var p95TimeToVisible: Duration = .zero

    /// Wasted work: cancelled after starting, or finished for rows never shown.
    public var worksWasted: Int { worksCancelled + worksUnshown }

    /// The mean wait between a row coming into view and its value showing.
    public var meanTimeToVisible: Duration {
        let shown = appearances - appearancesLeftUnloaded
        return shown > 0 ? totalTimeToVisible / shown : .zero
    }
}

/// Runs `strategy` on `script` with the real ``Avenues/Avenue``, ``Avenues/AutoProcessor`` and
/// ``Avenues/RowPrefetcher``, their workers on a ``ManualExecutor`` and their work sleeping on a
/// ``VirtualClock``: no wall-clock time and no threads, so every run gives the same result.
///
/// After the script, time runs on with the screen still until all work is done, so work queued for
/// rows scrolled past is counted when it finally runs.
public func simulate(
    _ strategy: Strategy,
    script: UserScript = .standard,
    maxConcurrent: Int = 6,
    reservedForVisible: Int? = nil,
    latency: WorkLatency = .standard
) -> SimulationResult {
    if strategy == .clairvoyant { return clairvoyant(script, latency: latency, maxConcurrent: maxConcurrent) }
    let executor = ManualExecutor()
    let clock = VirtualClock()
    let log = WorkLog()
    let processor = AutoProcessor<Int, Int>(maxConcurrent: maxConcurrent, reservedForVisible: reservedForVisible ?? 0, executor: executor) { row in
        log.started(row)
        do {
            try await clock.sleep(for: latency.latency(of: row))
        } catch {
            log.cancelled(row)
            throw error
        }
        log.finished(row)
        return row
    }
    let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(countLimit: 4_000), processor: processor)
    let prefetcher: RowPrefetcher<Int, Int>?
    let origin = ContinuousClock.now
    switch strategy {
    case .prefetcher(let ahead, let behind):
        prefetcher = RowPrefetcher(avenue: avenue, ahead: ahead, behind: behind) { $0 < script.rows ? $0 : nil }
    case .adaptive:
        prefetcher = RowPrefetcher(avenue: avenue, policy: .adaptive, now: { origin + clock.now }) { $0 < script.rows ? $0 : nil }
    case .visibleOnly, .clairvoyant:
        prefetcher = nil
    }

    var score = FrameScore()

    func show(_ rows: Range<Int>) {
        switch strategy {
        case .visibleOnly(let cancelling):
            for row in rows { avenue.prepareItem(for: row, at: row, priority: .visible) }
            if cancelling {
                for row in score.visible where !rows.contains(row) { avenue.cancel(at: row) }
            }
        case .prefetcher, .adaptive, .clairvoyant:
            prefetcher?.show(rows)
        }
    }

    for (index, top) in script.tops.enumerated() {
        let now = script.frame * index
        clock.advance(to: now)
        executor.drain()
        let rows = top..<min(script.rows, top + script.viewport)
        if let hints = script.hints[index] { prefetcher?.hint(hints) }
        show(rows)
        executor.drain()
        score.frame(rows, at: now) { row in
            let loaded = avenue.item(at: row) != nil
            if loaded { log.shown(row) }
            return loaded
        }
    }

    // The user stops; queued and running work runs out, and what lands on screen counts as shown.
    let end = script.frame * script.tops.count + .seconds(3_600)
    while let deadline = clock.nextDeadline, deadline <= end {
        clock.advance(to: deadline)
        executor.drain()
        for row in score.visible where avenue.item(at: row) != nil { log.shown(row) }
    }
    prefetcher?.stop()
    executor.drain()

    var result = score.result(strategy, frames: script.tops.count)
    let counts = log.counts
    result.worksStarted = counts.started
    result.worksCancelled = counts.cancelled
    result.worksUnshown = counts.unshown
    return result
}

/// Scores frames the same way for every strategy, simulated or computed: placeholder row-frames,
/// rows coming into view, and the wait from a row coming into view to its value showing.
struct FrameScore {
    /// The rows of the last frame.
    private(set) var visible = 0..<0
    private var placeholderRowFrames = 0
    private var appearances = 0
    private var appearancesLeftUnloaded = 0
    private var totalTimeToVisible = Duration.zero
    private var waitingSince: [Int: Duration] = [:]
    /// The wait of every row shown with its value (0 when it was ready), for the 95th percentile.
    private var waits: [Duration] = []

    /// A frame at `now` showing `rows`; `loaded` says whether a row has its value.
    mutating func frame(_ rows: Range<Int>, at now: Duration, loaded: (Int) -> Bool) {
        for row in rows {
            let isLoaded = loaded(row)
            if !isLoaded { placeholderRowFrames += 1 }
            if !visible.contains(row) {
                appearances += 1
                if !isLoaded { waitingSince[row] = now } else { waits.append(.zero) }
            } else if isLoaded, let since = waitingSince.removeValue(forKey: row) {
                totalTimeToVisible += now - since
                waits.append(now - since)
            }
        }
        for row in waitingSince.keys where !rows.contains(row) {
            appearancesLeftUnloaded += 1
            waitingSince[row] = nil
        }
        visible = rows
    }

    /// The scores, with no work counted yet.
    func result(_ strategy: Strategy, frames: Int) -> SimulationResult {
        let sorted = waits.sorted()
        var result = SimulationResult(
            strategy: strategy, frames: frames, placeholderRowFrames: placeholderRowFrames, worksStarted: 0,
            worksCancelled: 0, worksUnshown: 0, appearances: appearances,
            appearancesLeftUnloaded: appearancesLeftUnloaded, totalTimeToVisible: totalTimeToVisible
        )
        result.p95TimeToVisible = sorted.isEmpty ? .zero : sorted[min(sorted.count - 1, sorted.count * 95 / 100)]
        return result
    }
}

/// What the work did, as the simulation saw it.
final class WorkLog: Sendable {
    private struct State {
        var started = 0
        var cancelled = 0
        /// Rows whose work finished and that have not been on screen with their value since.
        var unshown = Set<Int>()
    }

    private let state = Mutex(State())

    func started(_ row: Int) { state.withLock { $0.started += 1 } }
    func cancelled(_ row: Int) { state.withLock { $0.cancelled += 1 } }
    func finished(_ row: Int) { state.withLock { _ = $0.unshown.insert(row) } }
    func shown(_ row: Int) { state.withLock { _ = $0.unshown.remove(row) } }

    var counts: (started: Int, cancelled: Int, unshown: Int) {
        state.withLock { ($0.started, $0.cancelled, $0.unshown.count) }
    }
}

/// A small seeded generator (SplitMix64), so latencies are the same on every run.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

#if canImport(Glibc)
import Glibc
private func _log(_ x: Double) -> Double { Glibc.log(x) }
private func _cos(_ x: Double) -> Double { Glibc.cos(x) }
private func _exp(_ x: Double) -> Double { Glibc.exp(x) }
#elseif canImport(Darwin)
import Darwin
private func _log(_ x: Double) -> Double { Darwin.log(x) }
private func _cos(_ x: Double) -> Double { Darwin.cos(x) }
private func _exp(_ x: Double) -> Double { Darwin.exp(x) }
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif
