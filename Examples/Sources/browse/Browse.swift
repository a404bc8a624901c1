import Avenues
import ArgumentParser
import FileCatalog
import Foundation
import RemoteCatalog
import TerminalUI

@main
struct Browse: Tool {
    static let toolName = "browse"

    static let configuration = CommandConfiguration(
        abstract: "A full-screen table of every file and folder under a folder (local, or an HTTP folder index); lines, CRC-32 and a preview load as you scroll.",
        discussion: """
            Keys: ↑/↓ or j/k move, PgUp/PgDn or b/space page, g/G or Home/End jump, Enter opens the file in a \
            pager, s sorts by path, size or lines, ? shows every key, q or Ctrl-C quits.

            Summaries are cached on disk by path, size and modification time, so a second run shows them at once (a file that says it is empty, as /proc's do, is read every time). \
            When standard output is not a terminal, the table is printed as plain text.

            With an http:// or https:// URL of a folder index (nginx autoindex, Apache, lighttpd, python3 -m \
            http.server), the folders are listed a page at a time and each file shown is downloaded and \
            summarized; listings and downloads are cached, so a second run works with the server gone. The CA \
            certificates trusted for https are the system's, or those of --ca-file or SSL_CERT_FILE.
            """
    )

    @Argument(help: "The folder to browse: a path, or the http(s) URL of a folder index.")
    var folder: String = "."

    @Option(parsing: .unconditional, help: "Remote folders: the deepest folder listed below the URL.")
    var maxDepth = 32

    @Option(parsing: .unconditional, help: "Remote folders: the most files listed.")
    var maxFiles = 100_000

    @Option(name: .customLong("ca-file"), help: "Remote folders over https: trust the CA certificates in this PEM file (as curl's --cacert; default: the system's, or SSL_CERT_FILE's).")
    var caFile: String?

    @Option(parsing: .unconditional, help: "Remote folders: the most folders listed.")
    var maxFolders = 10_000

    @Flag(name: .shortAndLong, help: "Include hidden files and folders.")
    var all = false

    @Option(help: "Where summaries are cached across runs (default: avenues-examples/summaries in the user's cache folder).")
    var cache: String?

    @Flag(help: "Do not read or write the disk cache.")
    var noCache = false

    @Option(parsing: .unconditional, help: "A pause in milliseconds before each summary, to watch the loading on a fast disk.")
    var latency = 0

    @Option(parsing: .unconditional, help: "Summaries computed (or files downloaded) at once.")
    var concurrency = 6

    @Option(parsing: .unconditional, help: "Rows prefetched past the screen in the scroll direction (default: adaptive, from the scroll rate and load times).")
    var ahead: Int?

    /// Rows summarized ahead of the one printed when the output is not a terminal: four per worker
    /// (`--concurrency` is the user's: it may be Int.max).
    private var streamedAhead: Int {
        let (ahead, overflow) = concurrency.multipliedReportingOverflow(by: 4)
        return overflow ? .max : ahead
    }

    @Option(parsing: .unconditional, help: "The width of plain-text output (default: the terminal's, else $COLUMNS, else 120).")
    var width: Int?

    @Option(help: "Record every scroll step to this file, for `scroll-sim --trace` (Benchmarks/README.md).")
    var recordTrace: String?

    func validate() throws {
        try Self.checkCacheOption(cache)
        guard (width ?? 1) >= 1, (width ?? 1) <= TableLayout.widest else {
            throw ValidationError("--width must be between 1 and \(TableLayout.widest) columns.")
        }
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1.") }
        guard latency >= 0 else { throw ValidationError("--latency must be 0 or more milliseconds.") }
        guard (ahead ?? 0) >= 0 else { throw ValidationError("--ahead must be 0 or more rows.") }
        guard maxDepth >= 0, maxFiles >= 1, maxFolders >= 1 else {
            throw ValidationError("--max-depth must be 0 or more, --max-files and --max-folders at least 1.")
        }
        guard !folder.isEmpty else { throw ValidationError("the folder is empty text; give a path (. for this folder) or a URL.") }
    }

    func run() async throws {
        if let url = RemoteTable.remoteURL(folder) {
            try await runRemote(url)
            return
        }
        if !FileManager.default.fileExists(atPath: folder), let problem = RemoteTable.urlProblem(folder) { Self.fail(problem) }
        let entries: [FileEntry]
        do {
            entries = try FileListing.list(folder, includeHidden: all)
        } catch {
            Self.fail("\(error)")
        }
        let cacheFolder = try noCache ? nil : cache.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? FileTable.defaultCacheFolder()
        let table = FileTable(entries: entries, cacheFolder: cacheFolder, latency: .milliseconds(latency), maxConcurrent: concurrency)

        guard Terminal.isTerminal(STDOUT_FILENO), Terminal.isTerminal(STDIN_FILENO) else {
            let layout = TableLayout(width: Terminal.plainTextWidth(width))
            StandardOutput.line(layout.header)
            await streamRowsInOrder(of: table, ahead: streamedAhead) { index, content in
                StandardOutput.line(layout.row(entries[index], content))
            }
            table.flush()
            return
        }
        let root = URL(fileURLWithPath: folder).standardizedFileURL.path
        try await ListScreen.run(LocalRows(table: table, title: root, ahead: ahead), trace: try recordTrace.map(TraceRecorder.init))
        table.flush()
    }

    /// `browse URL`: the files under an HTTP folder index.
    func runRemote(_ url: URL) async throws {
        let cacheFolder = try cache.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? RemoteTable.defaultCacheFolder()
        let table = RemoteTable(
            root: url, cacheFolder: cacheFolder, maxConcurrentDownloads: concurrency, maxDepth: maxDepth, maxFiles: maxFiles,
            maxFolders: maxFolders, transport: remoteTransport()
        )
        do {
            try await table.checkRoot()
        } catch {
            // `browse URL/app.log`: a table of one file's folder is not what was meant; pages reads it.
            let forAFile = RemoteTable.mayNameAFile(url) && RemoteTable.isNoFolder(error) ? " (to read the file at \(RemoteTable.shown(url)), use pages URL)" : ""
            Self.fail(RemoteTable.rootMessage(for: error, root: table.root) + forAFile)
        }
        guard Terminal.isTerminal(STDOUT_FILENO), Terminal.isTerminal(STDIN_FILENO) else {
            let layout = TableLayout(width: Terminal.plainTextWidth(width))
            StandardOutput.line(layout.header)
            await table.streamInOrder(ahead: streamedAhead) { file, size, content in
                StandardOutput.line(layout.row(path: file.path, size: size, content))
            }
            return
        }
        try await ListScreen.run(RemoteRows(table: table), trace: try recordTrace.map(TraceRecorder.init))
    }


    /// The transport `--ca-file` asks for, or AsyncMedia's default.
    func remoteTransport() -> (any DownloadTransport)? {
        guard let caFile else { return nil }
        do {
            return try RemoteTable.transport(caFile: caFile)
        } catch {
            Self.fail(String(describing: error))
        }
    }
}
