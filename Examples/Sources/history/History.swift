import ArgumentParser
import Avenues
import Foundation
import GitHistory
import TerminalUI

@main
struct History: Tool {
    static let toolName = "history"

    static let configuration = CommandConfiguration(
        abstract: "A full-screen git log of any length: commits load a page at a time, each visible commit's diff stat as you scroll.",
        discussion: """
            Keys: ↑/↓ or j/k move, PgUp/PgDn or b/space page, g/G or Home/End jump, Enter opens the commit \
            (its message, stat and diff; q comes back), / searches subjects, authors and hashes (n and N go to \
            the next and the previous match), ? shows every key, q or Ctrl-C quits.

            git writes the log once into a spool file that every page is read from, so jumps, searches and G \
            never ask git again; the spool is kept for the next run with the same HEAD. Diff stats are cached \
            on disk by commit id. When standard output is not a terminal, the log is printed in order (hash, \
            date, author, subject, tab-separated, byte for byte as git prints them), in bounded memory.
            """
    )

    @Argument(help: "The repository (any folder inside it).")
    var repository: String = "."

    @Argument(parsing: .postTerminator, help: "Only the commits that change these paths (after --).")
    var paths: [String] = []

    @Option(parsing: .unconditional, help: "Commits per page.")
    var pageSize = 50

    @Option(help: "Where diff stats and spooled logs are kept across runs (default: avenues-examples in the user's cache folder).")
    var cache: String?

    @Option(help: "Record every scroll step to this file, for `scroll-sim --trace` (Benchmarks/README.md).")
    var recordTrace: String?

    @Flag(help: "Do not read or write the disk cache (the log is spooled in a temporary folder).")
    var noCache = false

    func validate() throws {
        try Self.checkCacheOption(cache)
        guard pageSize >= 1 else { throw ValidationError("--page-size must be at least 1.") }
        guard !repository.isEmpty else { throw ValidationError("the repository is empty text; give a path (. for this folder).") }
    }

    func run() async throws {
        let base = cache.map { URL(fileURLWithPath: $0, isDirectory: true) }
        let spoolFolder = try noCache
            ? FileManager.default.temporaryDirectory.appendingPathComponent("avenues-history-\(getpid())", isDirectory: true)
            : base?.appendingPathComponent("history-logs", isDirectory: true) ?? HistoryRows.defaultSpoolFolder()
        defer { if noCache { try? FileManager.default.removeItem(at: spoolFolder) } }
        let log = GitLog(repository: repository, paths: paths, spoolFolder: spoolFolder)
        do {
            try await log.check()  // git missing or not a repository: one line, exit code 1
            try await log.start()
        } catch {
            Self.fail("\(error)")
        }
        let statsFolder = try noCache ? nil : base?.appendingPathComponent("history-stats", isDirectory: true) ?? HistoryRows.defaultStatsFolder()
        let interactive = Terminal.isTerminal(STDOUT_FILENO) && Terminal.isTerminal(STDIN_FILENO)
        let rows = HistoryRows(log: log, pageSize: pageSize, statsFolder: statsFolder)

        guard interactive else {
            let failure = await rows.printAll { commit in StandardOutput.write(commit.line + [0x0A]) }
            if let failure { Self.fail("\(failure)") }
            return
        }
        let title = URL(fileURLWithPath: repository).standardizedFileURL.path
        try await ListScreen.run(HistoryModel(rows: rows, title: title, spoolFolder: spoolFolder), trace: try recordTrace.map(TraceRecorder.init))
        rows.flush()
    }

}
