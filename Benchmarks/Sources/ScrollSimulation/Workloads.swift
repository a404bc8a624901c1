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

    /// The scripts, by name.
    public static let scripts: [(String, UserScript)] = [
        ("standard", .standard),
        ("held-down-10", .heldKey(rowsPerSecond: 10)),
        ("held-down-30", .heldKey(rowsPerSecond: 30)),
        ("pgdn-streaks", .pageStreaks),
        ("jumps", .jumps),
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
    public static let jumps: UserScript = {
        var rng = SplitMix64(seed: 0x0_5EED_1234)
        var steps: [Step] = [.pause(seconds: 1), .jump(toRow: 99_960), .pause(seconds: 1), .jump(toRow: 0), .pause(seconds: 1)]
        for _ in 0..<20 {
            steps.append(.jump(toRow: Int(rng.next() % 99_960)))
            steps.append(.pause(seconds: 1))
        }
        return UserScript(rows: 100_000, viewport: 40, steps: steps)
    }()

    /// A slow reader: 20 screens, one every 3 s.
    public static let slowReader = UserScript(rows: 100_000, viewport: 40, steps: [
        .pause(seconds: 1), .press(rows: 40, times: 20, every: 3),
    ])

    /// A recorded session: a first line `{"rows": N, "screen": R}` (N is 0 for a list whose length
    /// was not known yet; the rows shown then bound it), then one line per `show`,
    /// `{"t": MILLISECONDS_SINCE_START, "first": ROW, "count": ROWS}` (JSON Lines). Played in frames
    /// of 16 ms: each frame shows the latest `first` recorded by then.
    public init(trace: String) throws {
        struct Header: Decodable { var rows: Int; var screen: Int }
        struct Show: Decodable { var t: Double; var first: Int; var count: Int }
        let lines = trace.split(whereSeparator: \.isNewline).filter { !$0.allSatisfy(\.isWhitespace) }
        guard let first = lines.first, let header = try? JSONDecoder().decode(Header.self, from: Data(first.utf8)),
              header.rows >= 0, header.screen >= 1
        else { throw TraceError(line: 1, reason: #"the first line must be {"rows": N, "screen": R}"#) }
        var shows: [Show] = []
        for (index, line) in lines.dropFirst().enumerated() {
            guard let show = try? JSONDecoder().decode(Show.self, from: Data(line.utf8)), show.t.isFinite, show.t >= 0,
                  show.t < 86_400_000
            else { throw TraceError(line: index + 2, reason: #"each line after the first must be {"t": MS, "first": ROW, "count": ROWS}"#) }
            shows.append(show)
        }
        shows.sort { $0.t < $1.t }
        // A list whose length was not known when recording began (paged rows) says 0: the rows
        // shown bound it.
        let rows = header.rows > 0 ? header.rows : shows.reduce(0) { max($0, $1.first.addingReportingOverflow($1.count).partialValue) }
        let frameMilliseconds = 16.0
        let end = (shows.last?.t ?? 0) + 1_000
        var tops: [Int] = []
        var next = 0
        var top = 0
        var time = 0.0
        let last = max(0, rows - header.screen)
        while time <= end {
            while next < shows.count, shows[next].t <= time {
                top = min(last, max(0, shows[next].first))
                next += 1
            }
            tops.append(top)
            time += frameMilliseconds
        }
        self.init(rows: rows, viewport: header.screen, tops: tops)
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
