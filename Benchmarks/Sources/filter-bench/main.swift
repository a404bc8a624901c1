import Avenues
import Foundation
import GitHistory

// FilteredRows' figures, printed as `name value` lines for `filter-bench.py`, which runs the
// references (fzf --filter, git log | grep -ci) beside them. Release build:
//
//   swift run --package-path Benchmarks -c release filter-bench memory FILE QUERY
//   swift run --package-path Benchmarks -c release filter-bench history REPO QUERY

let screen = 38  // a 40-line terminal's rows

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
}

func peakMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return 0 }
    return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
}

/// Waits until `filtered` has a screen of matches with their items (or the scan ended), then until
/// the scan ended; the two times since `start`, in ms.
func timeFilter<Item>(_ filtered: FilteredRows<Item>, from start: ContinuousClock.Instant) async -> (screen: Double, complete: Double) {
    var screenAt: Double?
    for await change in filtered.subscribe() {
        if screenAt == nil {
            let shown = min(screen, change.count.value)
            filtered.show(0 ..< screen)
            if (shown == screen || change.progress.isComplete), (0 ..< shown).allSatisfy({ filtered.item(at: $0) != nil }) {
                screenAt = milliseconds(ContinuousClock.now - start)
            }
        }
        if change.progress.isComplete, screenAt != nil { break }
    }
    return (screenAt ?? 0, milliseconds(ContinuousClock.now - start))
}

/// Types `text` a character every `interval`, as a person does; the statistics after the last
/// scan ended.
func typing<Item>(_ text: String, into filtered: FilteredRows<Item>, every interval: Duration) async -> FilterStatistics {
    for length in 1 ... text.count {
        filtered.filter(TextQuery(String(text.prefix(length))))
        if length < text.count { try? await Task.sleep(for: interval) }
    }
    for await change in filtered.subscribe() where change.progress.isComplete { break }
    return filtered.statistics
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "memory" where arguments.count >= 3:
    // 1,000,000 (or however many) lines held in memory, filtered with no I/O.
    let path = arguments[arguments.startIndex + 1], query = arguments[arguments.startIndex + 2]
    guard let data = FileManager.default.contents(atPath: path) else {
        print("filter-bench: cannot read \(path)")
        exit(1)
    }
    let lines = data.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast().map { String(decoding: $0, as: UTF8.self) }
    print("rows \(lines.count)")
    for round in 0 ..< 5 {
        let filtered = FilteredRows(items: lines, chunk: 2_000) { line, query in query.matches(line) }
        let start = ContinuousClock.now
        filtered.filter(TextQuery(query))
        let (first, complete) = await timeFilter(filtered, from: start)
        print("round \(round) first-screen-ms \(first) complete-ms \(complete) matches \(filtered.count.value)")
    }
    let typed = await typing(query, into: FilteredRows(items: lines, chunk: 2_000) { line, query in query.matches(line) }, every: .milliseconds(50))
    print("typing scans-started \(typed.scansStarted) scans-completed \(typed.scansCompleted) rows-read \(typed.rowsRead)")
    print("peak-mib \(peakMiB())")
case "history" where arguments.count >= 3:
    // `history`'s filter on a repository, cold (git writes the spool while the filter scans it).
    let repository = arguments[arguments.startIndex + 1], query = arguments[arguments.startIndex + 2]
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("filter-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    for round in 0 ..< 3 {
        let log = GitLog(repository: repository, spoolFolder: folder.appendingPathComponent("spool-\(round)"))
        let rows = HistoryRows(log: log, statsFolder: nil)
        // The first screen, as the app shows it, then the keystroke.
        let changes = rows.commits.subscribe()
        rows.commits.show(0 ..< screen)
        for await _ in changes where rows.commits.item(at: screen - 1) != nil { break }
        let filtered = rows.filter()
        let start = ContinuousClock.now
        // When git has written the whole log (the floor of the complete count), polled every ms.
        let gitDone = Task { () -> Double in
            while !log.progress.finished { try? await Task.sleep(for: .milliseconds(1)) }
            return milliseconds(ContinuousClock.now - start)
        }
        filtered.filter(TextQuery(query))
        let (first, complete) = await timeFilter(filtered, from: start)
        print("round \(round) first-screen-ms \(first) complete-ms \(complete) git-done-ms \(await gitDone.value) matches \(filtered.count.value) last-first-screen-row \(filtered.row(at: screen - 1) ?? -1) commits \(rows.count.value)")
        rows.commits.stop()

    }
    // Typing the query at 50 ms a character over the spooled log of a warm run.
    let log = GitLog(repository: repository, spoolFolder: folder.appendingPathComponent("spool-typing"))
    let rows = HistoryRows(log: log, statsFolder: nil)
    let typed = await typing(query, into: rows.filter(), every: .milliseconds(50))
    print("typing scans-started \(typed.scansStarted) scans-completed \(typed.scansCompleted) rows-read \(typed.rowsRead)")
    print("peak-mib \(peakMiB())")
default:
    print("usage: filter-bench memory FILE QUERY | filter-bench history REPO QUERY")
    exit(2)
}
