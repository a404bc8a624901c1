import Foundation

/// A script and a latency profile: what a strategy is judged on.
public struct Workload: Sendable {
    /// The name in tables and `--json` output.
    public let name: String
    /// What the user does.
    public let script: UserScript
    /// How long loads take.
    public let latency: WorkLatency

    /// A workload.
    public init(name: String, script: UserScript, latency: WorkLatency) {
        self.name = name
        self.script = script
        self.latency = latency
    }

    /// Every script under both latency profiles: today's standard script; a held ↓ key at 10 and at
    /// 30 rows/s; PgDn streaks; g/G and jumps to random rows; a slow reader (a screen every 3 s).
    public static let all: [Workload] = scripts.flatMap { name, script in
        [Workload(name: name, script: script, latency: .standard), Workload(name: name + "/heavy-tail", script: script, latency: .heavyTail)]
    }

    /// Every recorded trace (`*.jsonl`) in `folder`, under both latency profiles, named by file
    /// (`browse-held-keys`, `browse-held-keys/heavy-tail`), sorted by name.
    public static func recorded(in folder: URL) throws -> [Workload] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".jsonl") }.sorted()
        return try names.flatMap { file -> [Workload] in
            let script = try UserScript(trace: String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8))
            let name = String(file.dropLast(".jsonl".count))
            return [Workload(name: name, script: script, latency: .standard), Workload(name: name + "/heavy-tail", script: script, latency: .heavyTail)]
        }
    }

    /// The scripts, by name.
    public static let scripts: [(String, UserScript)] = [
        ("standard", .standard),
        ("held-down-10", .heldKey(rowsPerSecond: 10)),
        ("held-down-30", .heldKey(rowsPerSecond: 30)),
        ("pgdn-streaks", .pageStreaks),
        ("jumps", .jumps),
        ("hinted-jumps", .hintedJumps),
        ("slow-reader", .slowReader),
    ]
}

extension UserScript {
    /// A held ↓ key: down for 20 s at `rowsPerSecond`, a pause, back up for 5 s.
    public static func heldKey(rowsPerSecond: Double) -> UserScript {
        UserScript(rows: 100_000, viewport: 40, steps: [
            .pause(seconds: 1), .scroll(rowsPerSecond: rowsPerSecond, seconds: 20), .pause(seconds: 2),
            .scroll(rowsPerSecond: -rowsPerSecond, seconds: 5), .pause(seconds: 1),
        ])
    }

    /// PgDn streaks: 15 presses at 8 a second, a pause to read, 30 at 12 a second, PgUp back 10.
    public static let pageStreaks = UserScript(rows: 100_000, viewport: 40, steps: [
        .pause(seconds: 1), .press(rows: 40, times: 15, every: 0.125), .pause(seconds: 2),
        .press(rows: 40, times: 30, every: 0.083), .pause(seconds: 1.5), .press(rows: -40, times: 10, every: 0.125),
        .pause(seconds: 1),
    ])

    /// g/G and jumps to 20 random rows (seeded), each read for a second.
    public static let jumps = UserScript(rows: 100_000, viewport: 40, steps: jumpSteps)

    private static let jumpSteps: [Step] = {
        var rng = SplitMix64(seed: 0x0_5EED_1234)
        var steps: [Step] = [.pause(seconds: 1), .jump(toRow: 99_960), .pause(seconds: 1), .jump(toRow: 0), .pause(seconds: 1)]
        for _ in 0..<20 {
            steps.append(.jump(toRow: Int(rng.next() % 99_960)))
            steps.append(.pause(seconds: 1))
        }
        return steps
    }()

    /// The jumps of ``jumps``, each hinted by the app one second before (as `history` hints the next
    /// search match while the user reads the current one).
    public static let hintedJumps: UserScript = {
        var steps: [Step] = []
        var afterLastJump = 0
        for step in jumpSteps {
            if case .jump(let row) = step {
                steps.insert(.hint([row]), at: afterLastJump)
                steps.append(step)
                afterLastJump = steps.count
            } else {
                steps.append(step)
            }
        }
        return UserScript(rows: 100_000, viewport: 40, steps: steps)
    }()

    /// A slow reader: 20 screens, one every 3 s.
    public static let slowReader = UserScript(rows: 100_000, viewport: 40, steps: [
        .pause(seconds: 1), .press(rows: 40, times: 20, every: 3),
    ])

    /// A recorded session: a first line `{"rows": N, "screen": R}` (N is 0 for a list whose length
    /// was not known yet; the rows shown then bound it), then one line per `show`,
    /// `{"t": MILLISECONDS_SINCE_START, "first": ROW, "count": ROWS}` (JSON Lines), which may carry
    /// the app's hints as `"hints": [ROW, …]`; a line with only `t` and `hints` changes the hints
    /// without a show. Played in frames of 16 ms: each frame shows the latest `first` recorded by
    /// then, and hints recorded since the last frame are given before it.
    public init(trace: String) throws {
        struct Header: Decodable { var rows: Int; var screen: Int }
        struct Line: Decodable { var t: Double; var first: Int?; var count: Int?; var hints: [Int]? }
        let lines = trace.split(whereSeparator: \.isNewline).filter { !$0.allSatisfy(\.isWhitespace) }
        guard let first = lines.first, let header = try? JSONDecoder().decode(Header.self, from: Data(first.utf8)),
              header.rows >= 0, header.screen >= 1
        else { throw TraceError(line: 1, reason: #"the first line must be {"rows": N, "screen": R}"#) }
        var events: [Line] = []
        for (index, text) in lines.dropFirst().enumerated() {
            guard let line = try? JSONDecoder().decode(Line.self, from: Data(text.utf8)), line.t.isFinite, line.t >= 0,
                  line.t < 86_400_000, (line.first != nil && line.count != nil) || (line.first == nil && line.count == nil && line.hints != nil)
            else {
                throw TraceError(line: index + 2, reason: #"each line after the first must be {"t": MS, "first": ROW, "count": ROWS} (with "hints": [ROW, …] if any), or {"t": MS, "hints": [ROW, …]}"#)
            }
            events.append(line)
        }
        events.sort { $0.t < $1.t }  // stable: lines of one instant keep their order
        // A list whose length was not known when recording began (paged rows) says 0: the rows
        // shown bound it.
        let rows = header.rows > 0 ? header.rows : events.reduce(0) { max($0, ($1.first ?? 0).addingReportingOverflow($1.count ?? 0).partialValue) }
        let frameMilliseconds = 16.0
        let end = (events.last?.t ?? 0) + 1_000
        var tops: [Int] = []
        var hints: [Int: [Int]] = [:]
        var next = 0
        var top = 0
        var time = 0.0
        let last = max(0, rows - header.screen)
        while time <= end {
            while next < events.count, events[next].t <= time {
                if let first = events[next].first { top = min(last, max(0, first)) }
                if let hint = events[next].hints { hints[tops.count] = hint }
                next += 1
            }
            tops.append(top)
            time += frameMilliseconds
        }
        self.init(rows: rows, viewport: header.screen, tops: tops, hints: hints)
    }
}

/// A trace that cannot be read.
public struct TraceError: Error, CustomStringConvertible {
    /// The line (from 1).
    public let line: Int
    /// What was expected.
    public let reason: String
    /// What is wrong.
    public var description: String { "trace line \(line): \(reason)" }
}

/// Two scripts that are the same up to a frame and part there: the user goes on the way they were
/// going, or turns back. A policy that cannot see the future does the same in both until that
/// frame, so what it started ahead by then is shown in one and wasted in the other.
public struct Fork: Sendable {
    /// The name in tables.
    public let name: String
    /// The script that goes on.
    public let onward: UserScript
    /// The script that turns back.
    public let back: UserScript
    /// The first frame where the two differ.
    public let frame: Int

    /// The fork of `prefix` into `onward` and `back`.
    public init(name: String, prefix: [UserScript.Step], onward: [UserScript.Step], back: [UserScript.Step]) {
        self.name = name
        self.onward = UserScript(rows: 100_000, viewport: 40, steps: prefix + onward)
        self.back = UserScript(rows: 100_000, viewport: 40, steps: prefix + back)
        frame = zip(self.onward.tops, self.back.tops).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            ?? min(self.onward.tops.count, self.back.tops.count)
    }

    /// A held ↓ key (20 rows/s for 3 s) and a rest of 1.25 s, then a burst of three PgDn or the key
    /// held ↑; a burst of three PgDn and a rest of 2 s, then another burst or the key held ↑. Both
    /// happen in the recorded `*-mixed` sessions.
    public static let all: [Fork] = [
        Fork(
            name: "held-then",
            prefix: [.pause(seconds: 1), .scroll(rowsPerSecond: 20, seconds: 3), .pause(seconds: 1.25)],
            onward: [.press(rows: 40, times: 3, every: 0.17), .pause(seconds: 2)],
            back: [.scroll(rowsPerSecond: -20, seconds: 3), .pause(seconds: 1)]
        ),
        Fork(
            name: "burst-then",
            prefix: [.pause(seconds: 1), .press(rows: 40, times: 3, every: 0.17), .pause(seconds: 2)],
            onward: [.press(rows: 40, times: 3, every: 0.17), .pause(seconds: 2)],
            back: [.scroll(rowsPerSecond: -20, seconds: 3), .pause(seconds: 1)]
        ),
    ]
}

/// The targets on both sides of a ``Fork``, and whether a policy that cannot see the future can
/// meet both.
///
/// A policy meets the back script's waste budget (1.5× 40/10's) only if it started no more than
/// that many rows ahead before the fork: the back script never shows them. The onward script's
/// target is the best fixed window's placeholder row-frames + 5 %. The bound is the clairvoyant
/// scheduler's on the onward script, knowing the future only from the fork on, with at most the
/// budget started early past the screen's edges: the best block of that many rows, starting 0, 10,
/// 20… rows past the edge, up to three screens.
public struct ForkAnalysis: Sendable {
    /// The fixed windows 10/2, 20/5, 40/10, 120/20 and the adaptive policy on the onward script.
    public let onward: [SimulationResult]
    /// The same strategies on the back script.
    public let back: [SimulationResult]
    /// The onward script's target: the best fixed window's placeholder row-frames + 5 %.
    public let onwardTarget: Int
    /// The most rows a policy may have started ahead before the fork and still meet the back
    /// script's waste budget (1.5× 40/10's waste there).
    public let backBudget: Int
    /// The fewest placeholder row-frames on the onward script of a scheduler that starts at most
    /// ``backBudget`` rows past the screen before the fork (the clairvoyant scheduler's, which is
    /// the simulation's practical bound, not a proven optimum).
    public let boundWithinBudget: Int

    /// Simulates both sides of `fork` under `latency`.
    public init(_ fork: Fork, latency: WorkLatency, maxConcurrent: Int = 6) {
        let strategies: [Strategy] = [
            .prefetcher(ahead: 10, behind: 2), .prefetcher(ahead: 20, behind: 5), .prefetcher(ahead: 40, behind: 10),
            .prefetcher(ahead: 120, behind: 20), .adaptive,
        ]
        onward = strategies.map { simulate($0, script: fork.onward, maxConcurrent: maxConcurrent, latency: latency) }
        back = strategies.map { simulate($0, script: fork.back, maxConcurrent: maxConcurrent, latency: latency) }
        let bestFixed = onward.prefix(4).map(\.placeholderRowFrames).min() ?? 0
        onwardTarget = bestFixed * 105 / 100
        let budget = back[2].worksWasted * 3 / 2
        backBudget = budget
        let screen = fork.onward.viewport
        boundWithinBudget = stride(from: 0, through: max(0, 3 * screen - budget), by: 10).map { skipping in
            clairvoyant(fork.onward, latency: latency, maxConcurrent: maxConcurrent,
                        foresight: Foresight(frame: fork.frame, rows: budget, skipping: skipping)).placeholderRowFrames
        }.min() ?? 0
    }
}
