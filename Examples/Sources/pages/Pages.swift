import ArgumentParser
import Avenues
import FileCatalog
import Foundation
import RemoteCatalog
import TerminalUI

@main
struct Pages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Every file under a folder with its lines, CRC-32 and preview, a page at a time.",
        discussion: """
            On a terminal: a page at a time, the next page loading while you read; Enter or space for the \
            next page, q to quit. Otherwise: every row in order, up to --ahead rows computed at once, each \
            printed as soon as the rows before it are. With the http(s) URL of a folder index, the remote files are             listed, downloaded and printed in the same order (streamed, on a terminal too); listings and downloads             are cached like browse's.
            """
    )

    @Argument(help: "The folder to list: a path, or the http(s) URL of a folder index.")
    var folder: String = "."

    @Flag(name: .shortAndLong, help: "Include hidden files and folders.")
    var all = false

    @Option(help: "Rows per page (default: the terminal's height).")
    var pageSize: Int?

    @Option(help: "Rows computed at once when streaming to a file or pipe.")
    var ahead = 16

    @Option(help: "Output format: table or tsv (tab-separated: path, size in bytes, lines, crc32, preview).")
    var format: OutputFormat = .table

    @Option(help: "The table's width (default: the terminal's, else $COLUMNS, else 120).")
    var width: Int?

    @Option(help: "Where summaries are cached across runs (default: avenues-examples/summaries in the user's cache folder).")
    var cache: String?

    @Flag(help: "Do not read or write the disk cache.")
    var noCache = false

    @Option(help: "A pause in milliseconds before each summary, to watch the loading on a fast disk.")
    var latency = 0

    @Flag(help: "Compute the rows one after another with no avenue and no cache (the reference output).")
    var sequential = false

    enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
        case table, tsv
    }

    func validate() throws {
        guard (pageSize ?? 1) >= 1 else { throw ValidationError("--page-size must be at least 1.") }
        guard ahead >= 1 else { throw ValidationError("--ahead must be at least 1.") }
        guard latency >= 0 else { throw ValidationError("--latency must be 0 or more milliseconds.") }
    }

    func run() async throws {
        let render = Renderer(format: format, width: width ?? Terminal.size()?.columns ?? ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init) ?? 120)
        if let url = RemoteTable.remoteURL(folder) {
            try await streamRemote(url, render: render)
            return
        }
        let entries = try FileListing.list(folder, includeHidden: all)

        if sequential {
            render.printHeader()
            await computeRowsSequentially(of: entries) { index, content in render.print(entries[index], content) }
            return
        }
        let cacheFolder = try noCache ? nil : cache.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? FileTable.defaultCacheFolder()
        let table = FileTable(entries: entries, cacheFolder: cacheFolder, latency: .milliseconds(latency))

        guard Terminal.isTerminal(STDOUT_FILENO), Terminal.isTerminal(STDIN_FILENO) else {
            render.printHeader()
            await streamRowsInOrder(of: table, ahead: ahead) { index, content in render.print(entries[index], content) }
            return
        }
        await Pager(table: table, render: render, pageSize: pageSize ?? max(1, (Terminal.size()?.rows ?? 24) - 2)).run()
    }

    /// `pages URL`: every file under a remote folder index, in path order.
    func streamRemote(_ url: URL, render: Renderer) async throws {
        let cacheFolder = try cache.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? RemoteTable.defaultCacheFolder()
        let table = RemoteTable(root: url, cacheFolder: cacheFolder)
        do {
            try await table.checkRoot()
        } catch {
            FileHandle.standardError.write(Data(("pages: " + RemoteTable.rootMessage(for: error, root: table.root) + "\n").utf8))
            throw ExitCode(1)
        }
        render.printHeader()
        await table.streamInOrder(ahead: ahead) { file, size, content in render.print(path: file.path, size: size, content) }
        table.save()
    }
}

/// Prints rows in the chosen format.
struct Renderer: Sendable {
    let format: Pages.OutputFormat
    let layout: TableLayout

    init(format: Pages.OutputFormat, width: Int) {
        self.format = format
        self.layout = TableLayout(width: width)
    }

    func printHeader() {
        switch format {
        case .table: Swift.print(layout.header)
        case .tsv: Swift.print(["path", "bytes", "lines", "crc32", "preview"].joined(separator: "\t"))
        }
    }

    func print(_ entry: FileEntry, _ content: RowContent) {
        Swift.print(line(path: entry.path, size: entry.size, content))
    }

    func print(path: String, size: Int64?, _ content: RowContent) {
        Swift.print(line(path: path, size: size, content))
    }

    /// A row; `size` `nil` when nobody could say (a remote file that failed to download).
    func line(path: String, size: Int64?, _ content: RowContent) -> String {
        switch format {
        case .table:
            return layout.row(path: path, size: size, content)
        case .tsv:
            let clean = { (text: String) in TableLayout.printable(text.replacingOccurrences(of: "\t", with: " ")) }
            let bytes = size.map { String($0) } ?? ""
            switch content {
            case .loaded(let summary):
                return [clean(path), bytes, String(summary.lines), TableLayout.hex(summary.crc32), clean(summary.preview)].joined(separator: "\t")
            case .failed(let message):
                return [clean(path), bytes, "", "", "error: " + clean(message)].joined(separator: "\t")
            case .pending, .folder:
                return [clean(path), bytes, "", "", ""].joined(separator: "\t")
            }
        }
    }
}

/// Pages on a terminal: the page is printed once all its rows are done, while the next page loads.
struct Pager {
    let table: FileTable
    let render: Renderer
    let pageSize: Int

    static let spinner: [String] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

    func run() async {
        let keys = Terminal.startInteractive(fullScreen: false)
        defer { Terminal.restore() }
        var keyIterator = keys.makeAsyncIterator()
        let changes = table.avenue.subscribe()
        // The next page is the "ahead" window, so it loads while this one is read.
        let prefetcher = RowPrefetcher(avenue: table.avenue, ahead: pageSize, behind: 0) { [table] in table.key($0) }
        let count = table.entries.count
        let pages = max(1, (count + pageSize - 1) / pageSize)
        render.printHeader()

        for page in 0..<pages {
            let rows = page * pageSize ..< min(count, (page + 1) * pageSize)
            prefetcher.show(rows)
            await waitUntilDone(rows, changes: changes, page: page, pages: pages)
            Terminal.write("\r" + Terminal.ANSI.clearLine)
            for row in rows { render.print(table.entries[row], table.content(at: row)) }
            guard page + 1 < pages else { break }
            Terminal.write(Terminal.ANSI.inverse + " page \(page + 1) of \(pages) · Enter/space: next page · q: quit " + Terminal.ANSI.reset)
            var next = false
            while let event = await keyIterator.next() {
                guard case .key(let key) = event else { continue }
                switch key {
                case .enter, .space, .character("n"), .down, .pageDown: next = true
                case .character("q"), .control("c"), .control("d"): next = false
                default: continue
                }
                break
            }
            Terminal.write("\r" + Terminal.ANSI.clearLine)
            guard next else { break }
        }
        prefetcher.stop()
    }

    /// Waits until every row of the page is loaded or failed, showing progress on the prompt line.
    private func waitUntilDone(_ rows: Range<Int>, changes: AvenueChanges<Int>, page: Int, pages: Int) async {
        var frame = 0
        let (wakeups, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let forwarding = Task {
            for await _ in changes { wake.yield() }
        }
        let ticking = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(100))
                wake.yield()
            }
        }
        defer {
            forwarding.cancel()
            ticking.cancel()
        }
        var iterator = wakeups.makeAsyncIterator()
        while true {
            let done = rows.filter { table.content(at: $0).isSettled }.count
            if done == rows.count { return }
            let spinner = Self.spinner[frame % Self.spinner.count]
            Terminal.write("\r" + Terminal.ANSI.clearLine + "\(spinner) loading page \(page + 1) of \(pages): \(done)/\(rows.count)")
            frame += 1
            guard await iterator.next() != nil else { return }
        }
    }
}
