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

/// `history`'s rows on a repository beside git alone.
func historyBenchmark(repository: String, rounds: Int) async throws {
    let screen = 38  // a 40-line terminal
    let format = ["-z", "--date=short", "--format=%H%x1f%h%x1f%ad%x1f%an%x1f%s"]
    var firstScreens: [Double] = [], gitFirst: [Double] = [], jumps: [Double] = [], gitJumps: [Double] = []
    var count = 0
    for _ in 0 ..< rounds {
        gitFirst.append(try await timeGit(["log", "--max-count=\(screen)"] + format, in: repository))
        let started = ContinuousClock.now
        let log = GitLog(repository: repository)
        let rows = HistoryRows(log: log, statsFolder: nil)
        let changes = rows.commits.subscribe()
        await showAndWait(rows.commits, 0 ..< screen, changes)
        firstScreens.append(milliseconds(ContinuousClock.now - started))
        count = await log.total() ?? 0  // counted after the first page, as history does
        let jumped = ContinuousClock.now
        await showAndWait(rows.commits, count - screen ..< count, changes)
        jumps.append(milliseconds(ContinuousClock.now - jumped))
        rows.commits.stop()
        gitJumps.append(try await timeGit(["log", "--skip=\(count - screen)", "--max-count=\(screen)"] + format, in: repository))
    }
    print("history's rows on \(repository): \(count) commits, \(screen)-row screen, median of \(rounds) rounds")
    print(String(format: "  first screen: %.1f ms; git log --max-count=%d alone: %.1f ms; %.2f×", median(firstScreens), screen, median(gitFirst), median(firstScreens) / median(gitFirst)))
    print(String(format: "  G to the root commit: %.1f ms; git log --skip=%d --max-count=%d alone: %.1f ms; %.2f×", median(jumps), count - screen, screen, median(gitJumps), median(jumps) / median(gitJumps)))

    // Paging down through 100,000 commits a screen at a time, as fast as the commits come: first
    // the commits alone, then as `history` does, each screen's diff stats asked for (and cancelled
    // as the screen moves on).
    let commitsOnly = PagedRows(source: GitLog(repository: repository), configuration: HistoryRows.configuration(pageSize: 50))
    let (alone, aloneMemory) = await pageThrough(commitsOnly, screen: screen, commits: min(100_000, count))
    commitsOnly.stop()
    print(String(format: "  paging through 100,000 commits, commits only: %.1f s; resident %.1f MiB, peak %.1f MiB",
                 milliseconds(alone) / 1000, aloneMemory.resident, aloneMemory.peak))

    let cache = FileManager.default.temporaryDirectory.appendingPathComponent("paging-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: cache) }
    let rows = HistoryRows(log: GitLog(repository: repository), statsFolder: cache)
    let (elapsed, after) = await pageThrough(rows.commits, screen: screen, commits: min(100_000, count))
    print(String(format: "  paging through 100,000 commits with diff stats: %.1f s; resident %.1f MiB, peak %.1f MiB; %d pages resident",
                 milliseconds(elapsed) / 1000, after.resident, after.peak, rows.commits.resident.pages))
    rows.commits.stop()
}

/// Shows `commits` rows a screen at a time, waiting for each screen's items.
func pageThrough<S: PageSource>(_ rows: PagedRows<S>, screen: Int, commits: Int) async -> (Duration, (resident: Double, peak: Double)) {
    let changes = rows.subscribe()
    let started = ContinuousClock.now
    var top = 0
    while top < commits {
        await showAndWait(rows, top ..< top + screen, changes)
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
