import ArgumentParser
import FileCatalog
import Foundation
import TerminalUI

@main
struct Browse: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A full-screen table of every file under a folder; lines, CRC-32 and a preview load as you scroll.",
        discussion: """
            Keys: ↑/↓ or j/k move, PgUp/PgDn or b/space page, g/G or Home/End jump, q or Ctrl-C quit.
            Summaries are cached on disk by path, size and modification time, so a second run shows them at once.
            When standard output is not a terminal, the table is printed as plain text.
            """
    )

    @Argument(help: "The folder to browse.")
    var folder: String = "."

    @Flag(name: .shortAndLong, help: "Include hidden files and folders.")
    var all = false

    @Option(help: "Where summaries are cached across runs (default: avenues-examples/summaries in the user's cache folder).")
    var cache: String?

    @Flag(help: "Do not read or write the disk cache.")
    var noCache = false

    @Option(help: "A pause in milliseconds before each summary, to watch the loading on a fast disk.")
    var latency = 0

    @Option(help: "Summaries computed at once.")
    var concurrency = 6

    @Option(help: "Rows prefetched past the screen in the scroll direction (default: one screen).")
    var ahead: Int?

    @Option(help: "The width of plain-text output (default: $COLUMNS, else 120).")
    var width: Int?

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1.") }
        guard latency >= 0 else { throw ValidationError("--latency must be 0 or more milliseconds.") }
        guard (ahead ?? 0) >= 0 else { throw ValidationError("--ahead must be 0 or more rows.") }
    }

    func run() async throws {
        let entries = try FileListing.list(folder, includeHidden: all)
        let cacheFolder = try noCache ? nil : cache.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? FileTable.defaultCacheFolder()
        let table = FileTable(entries: entries, cacheFolder: cacheFolder, latency: .milliseconds(latency), maxConcurrent: concurrency)

        guard Terminal.isTerminal(STDOUT_FILENO), Terminal.isTerminal(STDIN_FILENO) else {
            let layout = TableLayout(width: width ?? ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init) ?? 120)
            print(layout.header)
            await streamRowsInOrder(of: table, ahead: concurrency * 4) { index, content in
                print(layout.row(entries[index], content))
            }
            return
        }
        let root = URL(fileURLWithPath: folder).standardizedFileURL.path
        var screen = BrowseScreen(table: table, title: root, ahead: ahead)
        await screen.run()
    }
}
