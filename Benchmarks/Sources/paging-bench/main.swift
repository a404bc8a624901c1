import Avenues
import Foundation
import GitHistory

// Paging's figures that package-benchmark cannot take: memory at two moments of one process, and
// `history`'s rows timed beside the git commands that are their floor. Release build:
//
//   swift run --package-path Benchmarks -c release paging-bench memory
//   swift run --package-path Benchmarks -c release paging-bench history REPO   (1,000,000 commits:
//       python3 Examples/Tests/terminal/gitrepo.py REPO 1000000)

/// 10,000,000 rows of about 100 bytes each, any page at once.
struct Synthetic: OffsetPageSource {
    typealias Cursor = Int
    typealias Item = String
    static let count = 10_000_000

    func page(at offset: Int, size: Int) async throws -> Page<Int, String> {
        let end = min(Self.count, offset + size)
        let items = (offset ..< end).map { "row \($0): " + String(repeating: "·", count: 40) + " \($0 &* 2_654_435_761 % 1_000_003)" }
        return Page(items: items, cursorAfter: end < Self.count ? end : nil, itemsAfter: Self.count - end)
    }
}

/// Resident and peak resident memory of this process, in MiB (Linux `/proc/self/status`).
func memory() -> (resident: Double, peak: Double) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
    func field(_ name: String) -> Double {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
        return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
    }
    return (field("VmRSS"), field("VmHWM"))
}

/// Shows `window` and waits until every row in it has its item.
func showAndWait<S: PageSource>(_ rows: PagedRows<S>, _ window: Range<Int>, _ changes: PagedRowsChanges) async {
    var iterator = changes.makeAsyncIterator()
    rows.show(window)
    while window.contains(where: { rows.item(at: $0) == nil }) {
        if rows.count.isExact, window.lowerBound >= rows.count.value { return }
        guard await iterator.next() != nil else { return }
    }
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

/// Scrolls 1,000,000 rows of 10,000,000, a 40-row screen at a time.
func memoryBenchmark() async {
    let rows = PagedRows(source: Synthetic())
    let changes = rows.subscribe()
    let screen = 40
    await showAndWait(rows, 0 ..< screen, changes)
    let first = memory()
    let started = ContinuousClock.now
    var top = 0
    while top + screen < 1_000_000 {
        top += screen
        await showAndWait(rows, top ..< top + screen, changes)
    }
    let elapsed = ContinuousClock.now - started
    let after = memory()
    print("synthetic source, 10,000,000 rows, 40-row screen, default PagingConfiguration (pages of 50, ≤ 1,000 rows resident)")
    print(String(format: "  after the first screen:        resident %.1f MiB (peak %.1f MiB)", first.resident, first.peak))
    print(String(format: "  after scrolling 1,000,000 rows: resident %.1f MiB (peak %.1f MiB), %.2f× the first screen; %.0f ms, %d pages resident",
                 after.resident, after.peak, after.resident / first.resident, milliseconds(elapsed), rows.resident.pages))
    rows.stop()
}

/// Wall time of `git ARGUMENTS` run to its end, output read.
func timeGit(_ arguments: [String], in repository: String) async throws -> Double {
    let started = ContinuousClock.now
    _ = try await Git.run(arguments, in: repository)
    return milliseconds(ContinuousClock.now - started)
}

/// `history`'s rows on a repository beside git alone: a cold run (git writes the spool), then a
/// second run over the spool kept.
func historyBenchmark(repository: String, rounds: Int) async throws {
    let screen = 38  // a 40-line terminal
    let format = ["-z", "--date=short", "--format=%H%x00%h%x00%ad%x00%an%x00%D%x00%s"]
    var firstScreens: [Double] = [], gitFirst: [Double] = [], spooled: [Double] = [], gitWhole: [Double] = []
    var jumps: [Double] = [], middles: [Double] = [], gitJumps: [Double] = [], warmFirst: [Double] = [], warmJumps: [Double] = []
    var count = 0
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("paging-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    for round in 0 ..< rounds {
        let spool = folder.appendingPathComponent("spool-\(round)")
        gitFirst.append(try await timeGit(["log", "--max-count=\(screen)"] + format, in: repository))
        let started = ContinuousClock.now
        let log = GitLog(repository: repository, spoolFolder: spool)
        try await log.start()
        let rows = HistoryRows(log: log, statsFolder: nil)
        let changes = rows.commits.subscribe()
        await showAndWait(rows.commits, 0 ..< screen, changes)
        firstScreens.append(milliseconds(ContinuousClock.now - started))
        // The whole log spooled (git's one walk), then G "after idle" and a jump to the middle (a
        // search hit far back): both read the spool, never git.
        while !log.progress.finished { try await Task.sleep(for: .milliseconds(2)) }
        spooled.append(milliseconds(ContinuousClock.now - started))
        count = log.knownTotal ?? 0
        var moved = ContinuousClock.now
        await showAndWait(rows.commits, count - screen ..< count, changes)
        jumps.append(milliseconds(ContinuousClock.now - moved))
        moved = ContinuousClock.now
        await showAndWait(rows.commits, count / 2 ..< count / 2 + screen, changes)
        middles.append(milliseconds(ContinuousClock.now - moved))
        rows.commits.stop()
        gitWhole.append(try await timeGit(["log"] + format, in: repository))
        gitJumps.append(try await timeGit(["log", "--skip=\(count - screen)", "--max-count=\(screen)"] + format, in: repository))

        // A second run: the spool of this HEAD is kept.
        let again = ContinuousClock.now
        let warmLog = GitLog(repository: repository, spoolFolder: spool)
        try await warmLog.start()
        let warm = HistoryRows(log: warmLog, statsFolder: nil)
        let warmChanges = warm.commits.subscribe()
        await showAndWait(warm.commits, 0 ..< screen, warmChanges)
        warmFirst.append(milliseconds(ContinuousClock.now - again))
        moved = ContinuousClock.now
        await showAndWait(warm.commits, count - screen ..< count, warmChanges)
        warmJumps.append(milliseconds(ContinuousClock.now - moved))
        warm.commits.stop()
    }
    print("history's rows on \(repository): \(count) commits, \(screen)-row screen, median of \(rounds) rounds")
    print(String(format: "  first screen: %.1f ms; git log --max-count=%d alone: %.1f ms; %.2f×", median(firstScreens), screen, median(gitFirst), median(firstScreens) / median(gitFirst)))
    print(String(format: "  whole log spooled: %.0f ms after start; git log alone: %.0f ms", median(spooled), median(gitWhole)))
    print(String(format: "  then G to the root commit: %.2f ms; a jump to row %d: %.2f ms; git log --skip=%d --max-count=%d alone: %.1f ms",
                 median(jumps), count / 2, median(middles), count - screen, screen, median(gitJumps)))
    print(String(format: "  second run (spool kept): first screen %.1f ms; G %.2f ms", median(warmFirst), median(warmJumps)))

    // Paging down through 100,000 commits a screen at a time, as fast as the commits come: first
    // the commits alone, then as `history` does, each screen's diff stats asked for (and cancelled
    // as the screen moves on).
    let commitsOnly = PagedRows(source: GitLog(repository: repository, spoolFolder: folder.appendingPathComponent("paging")), configuration: HistoryRows.configuration(pageSize: 50))
    let (alone, aloneMemory) = await pageThrough(commitsOnly, screen: screen, commits: min(100_000, count))
    commitsOnly.stop()
    print(String(format: "  paging through 100,000 commits, commits only: %.1f s; resident %.1f MiB, peak %.1f MiB",
                 milliseconds(alone) / 1000, aloneMemory.resident, aloneMemory.peak))

    let cache = folder.appendingPathComponent("stats")
    let rows = HistoryRows(log: GitLog(repository: repository, spoolFolder: folder.appendingPathComponent("paging")), statsFolder: cache)
    // Each screen is waited for, so the list rests on each: its stats are asked for, as history does.
    let stats = RowPrefetcher(avenue: rows.stats, ahead: 0, behind: 0) { rows.statKey(at: $0) }
    let (elapsed, after) = await pageThrough(rows.commits, screen: screen, commits: min(100_000, count)) { stats.show($0) }
    stats.stop()
    print(String(format: "  paging through 100,000 commits with diff stats: %.1f s; resident %.1f MiB, peak %.1f MiB; %d pages resident",
                 milliseconds(elapsed) / 1000, after.resident, after.peak, rows.commits.resident.pages))
    rows.commits.stop()
}

/// Shows `commits` rows a screen at a time, waiting for each screen's items.
func pageThrough<S: PageSource>(
    _ rows: PagedRows<S>, screen: Int, commits: Int, shown: (Range<Int>) -> Void = { _ in }
) async -> (Duration, (resident: Double, peak: Double)) {
    let changes = rows.subscribe()
    let started = ContinuousClock.now
    var top = 0
    while top < commits {
        await showAndWait(rows, top ..< top + screen, changes)
        shown(top ..< top + screen)
        top += screen
    }
    return (ContinuousClock.now - started, memory())
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "memory":
    await memoryBenchmark()
case "history" where arguments.count >= 2:
    do {
        try await historyBenchmark(repository: arguments[arguments.startIndex + 1], rounds: 5)
    } catch {
        print("paging-bench: \(error)")
        exit(1)
    }
default:
    print("usage: paging-bench memory | paging-bench history REPO")
    exit(2)
}
