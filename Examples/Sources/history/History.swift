import ArgumentParser
import Avenues
import Foundation
import GitHistory
import TerminalUI

@main
struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A full-screen git log of any length: commits load a page at a time, each visible commit's diff stat as you scroll.",
        discussion: """
            Keys: ↑/↓ or j/k move, PgUp/PgDn or b/space page, g/G or Home/End jump (G goes straight to the root \
            commit), / searches subjects (Esc cancels), q or Ctrl-C quits. Diff stats are cached on disk by commit \
            id. When standard output is not a terminal, the log is printed in order (hash, date, author, subject, \
            tab-separated), streamed with bounded memory.
            """
    )

    @Argument(help: "The repository (any folder inside it).")
    var repository: String = "."

    @Option(help: "Commits per git log call.")
    var pageSize = 50

    @Option(help: "Where diff stats are cached across runs (default: avenues-examples/history-stats in the user's cache folder).")
    var cache: String?

    @Option(help: "Record every scroll step to this file, for `scroll-sim --trace` (Benchmarks/README.md).")
    var recordTrace: String?

    @Flag(help: "Do not read or write the disk cache.")
    var noCache = false

    func validate() throws {
        guard pageSize >= 1 else { throw ValidationError("--page-size must be at least 1.") }
    }

    func run() async throws {
        let log = GitLog(repository: repository)
        do {
            try await log.check()  // git missing or not a repository: one line, exit code 1
        } catch {
            FileHandle.standardError.write(Data("history: \(error)\n".utf8))
            throw ExitCode.failure
        }
        let statsFolder = try noCache ? nil : cache.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? HistoryRows.defaultStatsFolder()
        let interactive = Terminal.isTerminal(STDOUT_FILENO) && Terminal.isTerminal(STDIN_FILENO)
        let rows = HistoryRows(log: log, pageSize: pageSize, statsFolder: statsFolder, showsStats: interactive)

        guard interactive else {
            let output = FileHandle.standardOutput
            var buffer = ""
            await rows.printAll { commit in
                buffer += commit.line + "\n"
                if buffer.utf8.count > 64 * 1024 {
                    output.write(Data(buffer.utf8))
                    buffer = ""
                }
            }
            output.write(Data(buffer.utf8))
            if case .failed(let error, _) = rows.commits.state(at: rows.commits.count.value) {
                FileHandle.standardError.write(Data("history: \(error)\n".utf8))
                throw ExitCode.failure
            }
            return
        }
        let title = URL(fileURLWithPath: repository).standardizedFileURL.path
        var screen = HistoryScreen(rows: rows, log: log, title: title, trace: try recordTrace.map(TraceRecorder.init))
        await screen.run()
    }
}
