import ArgumentParser
import Avenues
import CSystemIO
import FileCatalog
import FilePager
import Foundation
import RemoteCatalog
import TerminalUI

@main
struct Pages: Tool {
    static let toolName = "pages"

    static let configuration = CommandConfiguration(
        abstract: "A file of any size a screen at a time; or every file and folder under a folder with its lines, CRC-32 and preview.",
        discussion: """
            With a file: a pager. Lines are numbered and counted in the background, so a jump anywhere \
            (G, :N) is a seek from the nearest checkpoint, in memory that does not grow with the file. \
            ↑/↓/PgUp/PgDn/g/G move, :N goes to line N, / searches (n/N: the next and previous hit), ←/→ \
            scroll sideways, F follows the end as the file grows, ? lists every key, q quits. Piped, the \
            file is copied to the output as it is. `cmd | pages` (or `pages -`) pages standard input, read \
            as far as you go (G reads on to its end); `pages <(cmd)` and `pages FIFO` page a named pipe so.

            With a folder: \
            On a terminal: a screen at a time, the next one loading while you read; space or PgDn for the next \
            screen, b or PgUp to go back, ↑/↓ for a row, g/G for the ends, ? for every key, q to quit. \
            Otherwise: every row in order, up to --ahead rows computed at once, each printed as soon as the rows \
            before it are.

            With the http(s) URL of a folder index, the remote files are listed, downloaded and printed in the \
            same order (streamed, on a terminal too); listings and downloads are cached like browse's. With the \
            URL of a file, the file is downloaded into that cache (its progress on standard error) and paged.
            """
    )

    @Argument(help: "The file to page through (- for standard input, as when nothing is named and it comes from a pipe), or the folder to list: a path, or the http(s) URL of a folder index or of a file.")
    var folder: String = "."

    @Option(name: .customLong("ca-file"), help: "Remote folders over https: trust the CA certificates in this PEM file (as curl's --cacert; default: the system's, or SSL_CERT_FILE's).")
    var caFile: String?

    @Option(help: "Only the files and folders whose path contains TEXT, or, with a file, only its lines that do (case-insensitive unless TEXT has capitals).")
    var filter: String?

    @Flag(name: .shortAndLong, help: "Include hidden files and folders.")
    var all = false

    @Option(parsing: .unconditional, help: "Rows per page (default: the terminal's height).")
    var pageSize: Int?

    @Option(parsing: .unconditional, help: "Rows computed at once when streaming to a file or pipe.")
    var ahead = 16

    @Option(help: "Output format: table or tsv (tab-separated: path, size in bytes, lines, crc32, preview; a backslash, tab, line break or other control character in a field is escaped: \\\\, \\t, \\n, \\r, \\xNN, \\uNNNN; so is a byte of a name that is not UTF-8, as \\xNN).")
    var format: OutputFormat = .table

    @Option(parsing: .unconditional, help: "The table's width (default: the terminal's, else $COLUMNS, else 120).")
    var width: Int?

    @Option(help: "Where summaries are cached across runs (default: avenues-examples/summaries in the user's cache folder).")
    var cache: String?

    @Flag(help: "Do not read or write the disk cache.")
    var noCache = false

    @Option(parsing: .unconditional, help: "A pause in milliseconds before each summary, to watch the loading on a fast disk.")
    var latency = 0

    @Flag(help: "Compute the rows one after another with no avenue and no cache (the reference output).")
    var sequential = false

    enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
        case table, tsv
    }

    /// `pages FILE`, the commonest call, goes to the pager without ArgumentParser: it builds the
    /// whole argument set by reflection before it parses, 8–12 ms of the first screen (perf,
    /// 2026-11-25). One argument that names a regular file is all this path takes; anything else
    /// (an option, a folder, a URL, `--help`) is parsed as usual. On the main actor: the program's
    /// first thread draws the first screen (``page(file:filter:)``).
    @MainActor static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        // `cmd | pages` (nothing named, a pipe or a file for input) and `pages -`: standard input.
        if (arguments.isEmpty && Self.inputIsPipeOrFile) || Array(arguments) == ["-"] {
            await runWithoutParsing { try await pageStandardInput(filter: nil) }
            return
        }
        if arguments.count == 1, let path = arguments.first, !path.hasPrefix("-"), RemoteTable.remoteURL(path) == nil {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue {
                await runWithoutParsing { try await page(file: path, filter: nil) }
                return
            }
        }
        await parseAndRun()
    }

    func validate() throws {
        try Self.checkCacheOption(cache)
        guard (width ?? 1) >= 1, (width ?? 1) <= TableLayout.widest else {
            throw ValidationError("--width must be between 1 and \(TableLayout.widest) columns.")
        }
        guard (pageSize ?? 1) >= 1 else { throw ValidationError("--page-size must be at least 1.") }
        guard ahead >= 1 else { throw ValidationError("--ahead must be at least 1.") }
        guard latency >= 0 else { throw ValidationError("--latency must be 0 or more milliseconds.") }
        guard !folder.isEmpty else { throw ValidationError("the file or folder is empty text; give a path (. for this folder) or a URL.") }
    }

    func run() async throws {
        let render = Renderer(format: format, width: Terminal.plainTextWidth(width))
        let query = filter.flatMap { $0.isEmpty ? nil : TextQuery($0) }
        if let url = RemoteTable.remoteURL(folder) {
            try await streamRemote(url, filter: query, render: render)
            return
        }
        if folder == "-" {
            try await Self.pageStandardInput(filter: query)
            return
        }
        var status = stat()
        guard stat(folder, &status) == 0 else {
            // The system's reason: a missing path, a link loop and a folder one may not enter differ.
            let reason = String(cString: strerror(errno))
            Self.fail(RemoteTable.urlProblem(folder) ?? "\(folder) cannot be opened (\(reason)); give the path of a file or a folder")
        }
        if status.st_mode & S_IFMT != S_IFDIR {
            try await Self.page(file: folder, filter: query)
            return
        }
        var entries: [FileEntry]
        do {
            entries = try FileListing.list(folder, includeHidden: all)
        } catch {
            Self.fail("\(error)")
        }
        // Paths are known before any row loads: only the matching rows are summarized.
        if let query { entries = entries.filter { query.matches($0.path) } }

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
            table.flush()
            return
        }
        // One screen either side: the next screen loads while this one is read, and going back is
        // as quick as going on.
        let screen = pageSize ?? max(1, (Terminal.size()?.rows ?? 24) - 3)
        let root = URL(fileURLWithPath: folder).standardizedFileURL.path
        try await ListScreen.run(LocalRows(table: table, title: root, tool: "pages", ahead: screen))
        table.flush()
    }

    /// `pages FILE`: the pager on a terminal, the file's bytes as they are otherwise. On the main
    /// actor, as ``main()`` is: up to its first screen nothing waits for another thread.
    /// - Throws: `ExitCode(130)` when ^C ended the pager.
    @MainActor static func page(file path: String, filter: TextQuery?, shownAs: String? = nil) async throws {
        guard Terminal.isTerminal(STDOUT_FILENO), Terminal.isTerminal(STDIN_FILENO) else {
            copy(path, filter: filter)
            return
        }
        // A named pipe — `pages <(cmd)`'s /dev/fd/63, a FIFO — is read as it comes, as standard
        // input is (it cannot be read twice nor seeked in). Opening one waits for its writer, as
        // `less` and `cat` do.
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFIFO {
            // With no writer yet the terminal stayed blank, echoing keys: after a moment, say why.
            let notice = DispatchWorkItem { Self.warn("waiting for a program to write to \(path) (Ctrl-C stops)") }
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300), execute: notice)
            var text: Int32
            repeat { text = open(path, O_RDONLY | O_CLOEXEC) } while text < 0 && errno == EINTR  // a signal while it waits
            notice.cancel()
            guard text >= 0 else { Self.fail("\(path) cannot be opened (\(String(cString: strerror(errno)))); check that it can be read") }
            try await page(stream: text, named: path, shownAs: path, filter: filter)
            return
        }
        let model: FileModel
        do {
            model = try FileModel(path: path, shownAs: shownAs)
        } catch {
            Self.fail("\(error); check the path and that it can be read")
        }
        if let filter { _ = model.input(filter.text, committed: true, selected: -1) }  // the first line that has it
        try await ListScreen.run(ListScreen.open(model))
    }

    /// Copies the file at `path` to standard output, a megabyte at a time; with `filter`, only the
    /// lines that contain it, in order, as they are read.
    static func copy(_ path: String, filter: TextQuery?) {
        var input: Int32
        repeat { input = open(path, O_RDONLY | O_CLOEXEC) } while input < 0 && errno == EINTR
        guard input >= 0 else { Self.fail("\(path) cannot be opened (\(String(cString: strerror(errno)))); check that it can be read") }
        copy(input, named: path, filter: filter)
        close(input)
    }

    /// ``copy(_:filter:)`` from an open descriptor. With read(2), not FileHandle: its errors said
    /// "The operation could not be completed. (NSCocoaErrorDomain error 256.)" for /proc/self/mem's
    /// EIO, and blamed the input for a full disk on the output.
    static func copy(_ input: Int32, named name: String, filter: TextQuery?) {
        var lines = LineFilter(filter)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { avenues_examples_read(input, $0.baseAddress, $0.count) }
            if count < 0 { Self.fail("\(name) could not be read (\(String(cString: strerror(errno))))") }
            if count == 0 { break }
            StandardOutput.write(lines.take(Data(buffer[..<count])))
        }
        StandardOutput.write(lines.finish())
    }

    /// Whether standard input is a pipe (or a socket) or a file (`cmd | pages`, `pages < file`), not
    /// a terminal nor a device such as /dev/null.
    static var inputIsPipeOrFile: Bool {
        var info = stat()
        guard fstat(STDIN_FILENO, &info) == 0 else { return false }
        let type = info.st_mode & S_IFMT
        return type == S_IFIFO || type == S_IFREG || type == S_IFSOCK
    }

    /// `cmd | pages`: standard input paged, read as far as the screen goes (``InputSpool``), the
    /// keys read from the terminal (`/dev/tty`); piped on, it is copied as it comes. A file given as
    /// standard input (`pages < FILE`) is paged where it is, without a copy.
    /// - Throws: `ExitCode(130)` when ^C ended the pager.
    @MainActor static func pageStandardInput(filter: TextQuery?) async throws {
        if Terminal.isTerminal(STDIN_FILENO) {
            Self.fail("standard input is the terminal, which gives keys, not text to page; pipe a command into pages (cmd | pages) or give a file")
        }
        guard Terminal.isTerminal(STDOUT_FILENO) else {
            copy(STDIN_FILENO, named: "standard input", filter: filter)
            return
        }
        // The text comes on standard input; the keys come from the terminal, put in its place so
        // the screen reads them where it always does.
        let terminal = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard terminal >= 0 else {
            Self.fail("standard input is the text to page, and there is no terminal to read keys from; give a file (pages FILE)")
        }
        let text = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)
        guard text >= 0, dup2(terminal, STDIN_FILENO) >= 0 else { Self.fail("standard input cannot be read: \(String(cString: strerror(errno)))") }
        close(terminal)
        // `pages < FILE` from its start: the file itself is paged, as `pages FILE` would (a copy
        // of a huge file would double its size on disk and take as long to make as reading it).
        if let file = Self.regularFileFromItsStart(text) {
            let model: FileModel
            do {
                model = try FileModel(path: file, shownAs: FileModel.standardInputName)
            } catch {
                Self.fail("\(error)")
            }
            if let filter { _ = model.input(filter.text, committed: true, selected: -1) }
            try await ListScreen.run(ListScreen.open(model))
            close(text)
            return
        }
        try await page(stream: text, named: "standard input", shownAs: FileModel.standardInputName, filter: filter)
    }

    /// Pages what comes through `text` (a descriptor this takes over), kept as it is read
    /// (``InputSpool``); `name` is what messages call it.
    @MainActor static func page(stream text: Int32, named name: String, shownAs: String, filter: TextQuery?) async throws {
        let input: InputSpool
        let model: FileModel
        do {
            input = try InputSpool(source: text, name: name)
            model = try FileModel(input: input, shownAs: shownAs)
        } catch {
            Self.fail("\(error)")
        }
        defer { input.remove() }
        if let filter { _ = model.input(filter.text, committed: true, selected: -1) }
        try await ListScreen.run(ListScreen.open(model))
        if let problem = input.status.problem { Self.warn(problem) }
    }

    /// A path that opens the regular file open as `descriptor`, if it is one and is read from its
    /// start (one read partly — `(read line; pages) < FILE` — is copied from where it is instead).
    static func regularFileFromItsStart(_ descriptor: Int32) -> String? {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, lseek(descriptor, 0, SEEK_CUR) == 0 else { return nil }
        #if os(Linux)
        let path = "/proc/self/fd/\(descriptor)"
        #else
        let path = "/dev/fd/\(descriptor)"
        #endif
        // The same file, not one of the same name: what the path opens is checked.
        var opened = stat()
        guard stat(path, &opened) == 0, opened.st_dev == info.st_dev, opened.st_ino == info.st_ino else { return nil }
        return path
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

    /// `pages URL`: every file under a remote folder index (only those whose path matches `filter`,
    /// found while the crawl goes on), in path order.
    func streamRemote(_ url: URL, filter: TextQuery?, render: Renderer) async throws {
        let cacheFolder = try cache.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? RemoteTable.defaultCacheFolder()
        let table = RemoteTable(root: url, cacheFolder: cacheFolder, transport: remoteTransport())
        do {
            try await table.checkRoot()
        } catch {
            // A URL that names a file (`…/app.log`): its folder form (`…/app.log/`) is no listing.
            if RemoteTable.mayNameAFile(url), RemoteTable.isNoFolder(error) || table.media.isAvailableOffline(url) {
                try await Self.pageRemote(file: url, media: table.media, filter: filter, folderError: error)
                return
            }
            Self.fail(RemoteTable.rootMessage(for: error, root: table.root))
        }
        render.printHeader()
        let failure = await table.streamInOrder(ahead: ahead, filter: filter) { file, size, content in render.print(path: file.path, bytes: file.pathBytes, size: size, content) }
        table.save()
        if let failure { Self.fail("the listing stopped: \(RemoteTable.rootMessage(for: failure, root: table.root))") }
    }
}

extension Pages {
    /// `pages URL` where the URL names a file: the file is downloaded into the cache `browse URL`
    /// keeps its files in (revalidated once 10 minutes old; the copy, when the server cannot be
    /// reached), with its progress on standard error while it comes, then paged as `pages FILE`
    /// pages a file — or, piped, copied to the output.
    @MainActor static func pageRemote(file url: URL, media: AsyncMedia, filter: TextQuery?, folderError: any Error) async throws {
        let shown = RemoteTable.shown(url)
        let progress = Terminal.isTerminal(STDERR_FILENO) ? DownloadLine(url: url, shown: shown, media: media) : nil
        let local: URL
        do {
            local = try await media.file(for: url)
            await progress?.end()
        } catch {
            await progress?.end()
            Self.fail(Self.remoteFileMessage(error, shown: shown, folderError: folderError))
        }
        guard Terminal.isTerminal(STDOUT_FILENO), Terminal.isTerminal(STDIN_FILENO) else {
            copy(local.path, filter: filter)
            return
        }
        try await page(file: local.path, filter: filter, shownAs: shown)
    }

    /// What to say when the file at a URL could not be had either.
    static func remoteFileMessage(_ error: any Error, shown: String, folderError: any Error) -> String {
        switch error {
        case AsyncMediaError.httpStatus(let status, _):
            let folderStatus: Int? = if case AsyncMediaError.httpStatus(let status, _) = folderError { status } else { nil }
            let asFolder = folderStatus.map { "HTTP \($0)" } ?? "no folder listing"
            return "\(shown) answered HTTP \(status), and \(shown)/ \(asFolder): give the URL of a file or of a folder listing"
        case AsyncMediaError.tooLarge(_, let limit):
            return "\(shown) is larger than the \(ByteSize.text(limit)) the download cache holds; page it as it comes: curl -s '\(shown)' | pages"
        case let error as AsyncMediaError:
            return error.description
        default:
            return RemoteTable.rootMessage(for: error, root: URL(string: shown) ?? URL(fileURLWithPath: "/"))
        }
    }
}

/// `downloading URL: 1.2 MiB of 40 MiB (3%)` on standard error, redrawn in place as the download
/// moves, and wiped when it ends.
final class DownloadLine: Sendable {
    private let watch: Task<Void, Never>

    init(url: URL, shown: String, media: AsyncMedia) {
        let line = "pages: downloading " + TerminalSafe.clean(shown)
        watch = Task.detached {
            for await progress in media.progress(for: url) {
                guard !Task.isCancelled else { break }
                var text = line + ": " + ByteSize.text(progress.received)
                if let expected = progress.expected, expected > 0 {
                    text += " of \(ByteSize.text(expected)) (\(min(100, Int(Double(progress.received) / Double(expected) * 100)))%)"
                }
                DownloadLine.draw("\r" + text + "\u{1B}[K")
            }
        }
    }

    /// Stops redrawing and wipes the line, once the last redraw is done (one drawn after the wipe
    /// would stay on the screen).
    func end() async {
        watch.cancel()
        await watch.value
        DownloadLine.draw("\r\u{1B}[K")
    }

    private static func draw(_ text: String) {
        Array(text.utf8).withUnsafeBytes { _ = avenues_examples_write_all(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

/// Prints rows in the chosen format.
struct Renderer: Sendable {
    /// `text` as a TSV field that can be read back: a backslash, a tab, a line break and every other
    /// control character escaped (`\\`, `\t`, `\n`, `\r`, `\x1b`; past ASCII, and an invisible
    /// or bidirectional character, `\u0085`), as PostgreSQL's text format and
    /// "linear TSV" write them. A name with a tab was written with a space (and a line break as
    /// `?`), so it could not be told from another name, nor opened.
    static func tsvField(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F && $0 != 0x5C }) && !TerminalSafe.needsCleaning(text) { return text }
        var field = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": field += "\\\\"
            case "\t": field += "\\t"
            case "\n": field += "\\n"
            case "\r": field += "\\r"
            default:
                if scalar.value < 0x20 || (0x7F ..< 0xA0).contains(scalar.value) || TerminalSafe.shown(scalar) == .marked {
                    // \x is a byte: a character past ASCII (a C1 control) is \u, or it would
                    // read back as a byte that is not UTF-8.
                    field += scalar.value < 0x80 ? "\\x" + TableLayout.hex(scalar.value, digits: 2) : "\\u" + TableLayout.hex(scalar.value, digits: 4)
                } else {
                    field.unicodeScalars.append(scalar)
                }
            }
        }
        return field
    }

    /// ``tsvField(_:)`` of a name's bytes: a byte that is not part of UTF-8 is `\xNN` (it was a
    /// replacement character, and the name could not be given back).
    static func tsvField(bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return tsvField(text) }
        var field = ""
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var position = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                field += tsvField(String(decoding: Array(encoded), as: UTF8.self))
                position += encoded.count
            case .error(let length):
                for byte in bytes[position ..< position + length] { field += "\\x" + TableLayout.hex(UInt32(byte), digits: 2) }
                position += length
            case .emptyInput:
                return field
            }
        }
    }

    let format: Pages.OutputFormat
    let layout: TableLayout

    init(format: Pages.OutputFormat, width: Int) {
        self.format = format
        self.layout = TableLayout(width: width)
    }

    func printHeader() {
        switch format {
        case .table: StandardOutput.line(layout.header)
        case .tsv: StandardOutput.line(["path", "bytes", "lines", "crc32", "preview"].joined(separator: "\t"))
        }
    }

    func print(_ entry: FileEntry, _ content: RowContent) {
        print(path: entry.path, bytes: entry.pathBytes, size: entry.isFolder ? nil : entry.size, content)
    }

    /// A row of `path`, whose bytes are `bytes` (TSV gives them back).
    func print(path: String, bytes: [UInt8], size: Int64?, _ content: RowContent) {
        let field = format == .tsv ? Self.tsvField(bytes: bytes) : path
        StandardOutput.line(line(path: field, size: size, content, pathIsField: format == .tsv))
    }

    /// A row; `size` `nil` when nobody could say (a remote file that failed to download);
    /// `pathIsField` when `path` is a TSV field already.
    func line(path: String, size: Int64?, _ content: RowContent, pathIsField: Bool = false) -> String {
        switch format {
        case .table:
            return layout.row(path: path, size: size, content)
        case .tsv:
            let clean: (String) -> String = Self.tsvField
            let field = pathIsField ? path : clean(path)
            let bytes = size.map { String($0) } ?? ""
            switch content {
            case .loaded(let summary):
                return [field, bytes, String(summary.lines), TableLayout.hex(summary.crc32), clean(summary.preview)].joined(separator: "\t")
            case .failed(let message):
                return [field, bytes, "", "", "error: " + clean(message)].joined(separator: "\t")
            case .pending, .folder:
                return [field, bytes, "", "", ""].joined(separator: "\t")
            }
        }
    }
}
