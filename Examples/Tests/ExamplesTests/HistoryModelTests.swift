import Avenues
import Foundation
@testable import GitHistory
@testable import history
import Testing
import TerminalUI

@Suite("history's screen model", .enabled(if: Git.executable != nil, "needs git"), .timeLimit(.minutes(2)))
struct HistoryModelTests {
    /// A repository of `commits` commits and its log, started; both removed after `body`.
    func withLog(commits: Int, _ body: (GitLog, URL) async throws -> Void) async throws {
        try await withLog(of: TestRepository(commits: commits), body)
    }

    /// `repository`'s log, started; the repository and the spool removed after `body`.
    func withLog(of repository: TestRepository, _ body: (GitLog, URL) async throws -> Void) async throws {
        defer { repository.remove() }
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("history-model-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: spool) }
        let log = GitLog(repository: repository.path, spoolFolder: spool)
        try await log.start()
        try await body(log, spool)
    }

    /// The screen model of `repository`, its first `rows` rows shown and `ready` true (awaited on
    /// the model's change events); stopped after `body`.
    func withModel(
        of repository: TestRepository, showing rows: Int, until ready: (HistoryModel) -> Bool,
        _ body: (HistoryModel) async throws -> Void
    ) async throws {
        try await withLog(of: repository) { log, spool in
            let model = HistoryModel(rows: HistoryRows(log: log, statsFolder: nil), title: "test", spoolFolder: spool)
            let (events, sink) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            model.start { _ in sink.yield() }
            defer { model.stop() }
            model.show(0 ..< rows, resting: true)
            for await _ in events where ready(model) { break }
            try await body(model)
        }
    }

    /// A repository of one commit was "1 commits".
    @Test func oneCommitIsCountedInTheSingular() async throws {
        try await withModel(of: TestRepository(commits: 1), showing: 1, until: { $0.count == .exact(1) }) { model in
            #expect(model.heading == "history  test  ·  1 commit")
        }
    }

    /// Dates git itself cannot show (`@0 -1200`), or past 9999, are in their rows, whole, and the
    /// rows keep their width.
    @Test func datesGitCannotShowAreInTheirRows() async throws {
        let plain = Terminal.Palette(on: false)
        let repository = try TestRepository(commits: 3, dates: [2: "0 -1200", 3: "253402300799 +1400"])
        try await withModel(of: repository, showing: 3, until: { $0.count == .exact(3) && $0.line(at: 2, width: 100, spinner: "", palette: plain) != nil }) { model in
            let lines = try (0 ..< 3).map { try #require(model.line(at: $0, width: 100, spinner: "", palette: plain)) }
            #expect(lines[0].contains(" 10000-01-01  ") && lines[1].contains(" 1969-12-31  "), "\(lines)")
            for line in lines { #expect(TextWidth.columns(line) <= 100, "\(line)") }
        }
    }

    /// Seen 2026-11-29: refs cut to their share of the row ran into the subject, "(HEAD -> ma…esc".
    @Test func refsCutToTheirShareKeepTheirSpaceBeforeTheSubject() async throws {
        let plain = Terminal.Palette(on: false)
        let repository = try TestRepository(commits: 1, subjects: [1: "Subject"], tags: 3, taggedCommits: [1])
        try await withModel(of: repository, showing: 1, until: { $0.line(at: 0, width: 200, spinner: "", palette: plain)?.contains("Subject") == true }) { model in
            var cut = 0
            for width in stride(from: 40, through: 300, by: 7) {
                let line = try #require(model.line(at: 0, width: width, spinner: "", palette: plain))
                #expect(line.contains(") Subject") || line.contains("… Subject"), "\(width): \(line)")
                if line.contains("… Subject") { cut += 1 }
            }
            #expect(cut > 0)  // some widths cut the refs
        }
    }

    /// A search that ends at once (nothing after the last commit) could end before its task was
    /// recorded as the running search: the record then stayed, and the status line said
    /// "searching “Commit”… 5 of 5" beside "not found" until the next search.
    @Test func aSearchThatEndsAtOnceLeavesNoSearchRunning() async throws {
        try await withModel(of: TestRepository(commits: 5), showing: 5, until: { $0.count == .exact(5) }) { model in
            // The query for n/N: typed, then the filter cleared.
            _ = model.input("zzz", committed: true, selected: 0)
            _ = model.input(nil, committed: false, selected: 0)
            // The race was lost in about 1 round of 1,000.
            await expectSearchesEndingAtOnceLeaveNoneRunning(model, rounds: 3_000, selected: 4, outcome: "“zzz” not found after this row") {
                _ = model.handle(.character("n"), selected: 4)
            }
        }
    }

    /// One commit's stat asked for by the whole log's rows and by a filter's matches is one load:
    /// the processor the two avenues share runs it once. The status line counted it once per avenue.
    @Test func aStatAskedForByBothAvenuesIsOneLoadInFlight() async throws {
        try await withLog(commits: 5) { log, _ in
            let rows = HistoryRows(log: log, statsFolder: nil)
            rows.commits.show(0 ..< 5)
            while rows.statKey(at: 0) == nil { await Task.yield() }  // the suite's time limit ends a wait that never does
            let hash = try #require(rows.statKey(at: 0))
            while rows.loadsInFlight != 0 { await Task.yield() }  // the page's load ends just after its rows show
            rows.stats.prepareItem(for: hash, at: 0)
            rows.matchStats.prepareItem(for: hash, at: 3)
            // One git process answers both: 1 while it runs (0 if it already ended: a test thread held
            // up for that long); the two avenues' counts said 2.
            #expect(rows.loadsInFlight <= 1)
            while rows.stats.item(at: 0) == nil || rows.matchStats.item(at: 3) == nil { await Task.yield() }
            #expect(rows.stats.item(at: 0) == rows.matchStats.item(at: 3))
            while rows.loadsInFlight != 0 { await Task.yield() }  // the processor's bookkeeping ends just after
        }
    }
}
