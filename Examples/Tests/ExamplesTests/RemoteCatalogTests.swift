import Avenues
import FileCatalog
import Foundation
@testable import RemoteCatalog
import Synchronization
import Testing

/// The captures in Fixtures/ were taken from the real servers (Debian 12's nginx 1.22.1 with
/// `autoindex on` and `autoindex_format json`, Apache 2.4.71 with its default `HTMLTable` fancy
/// index and without it, and Python 3.11's `http.server`) over one folder: `a b.txt` (6 bytes),
/// `big.bin` (12,345), `x&y.txt` (4), `ünï.txt` (4) and the folders `sp ace/` and `sub/`.
@Suite("Folder index pages")
struct DirectoryIndexTests {
    static let folder = URL(string: "http://127.0.0.1:8080/")!

    /// Before, each of these said "is not a folder that can be read (No such file or directory)".
    @Test func aURLThatCannotBeBrowsedSaysWhyAndAPathIsNoURL() {
        for bad in ["http://[::1", "http://", "https://127.0.0.1:-1/", "HTTP://:80/"] {
            #expect(RemoteTable.urlProblem(bad)?.contains("is not a URL that can be read") == true, "\(bad)")
        }
        #expect(RemoteTable.urlProblem("ftp://example.com/")?.hasPrefix("ftp: URLs cannot be browsed") == true)
        #expect(RemoteTable.urlProblem("a://b/c d")?.hasPrefix("a: URLs cannot be browsed") == true)
        #expect(RemoteTable.urlProblem("file:///var/log/")?.hasSuffix("give its path instead (/var/log)") == true)
        for fine in ["http://127.0.0.1:8080/", "https://example.com/a/", "/tmp/a", "9p://x", "", "notes.txt", "a b://c"] {
            #expect(RemoteTable.urlProblem(fine) == nil, "\(fine)")
        }
    }

    func parse(_ fixture: String) throws -> [IndexEntry] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/" + fixture)
        return try DirectoryIndex.parse(try Data(contentsOf: url), folder: Self.folder)
    }

    /// What an entry shows (its link's spelling is the server's own, checked where it matters).
    func shape(_ entries: [IndexEntry]) -> [String] {
        entries.map { "\($0.name) folder:\($0.isFolder) size:\($0.size.map(String.init) ?? "-")" }
    }

    func entries(_ sizes: [Int64?]) -> [IndexEntry] {
        [
            IndexEntry(name: "a b.txt", isFolder: false, size: sizes[0]),
            IndexEntry(name: "big.bin", isFolder: false, size: sizes[1]),
            IndexEntry(name: "sp ace", isFolder: true, size: nil),
            IndexEntry(name: "sub", isFolder: true, size: nil),
            IndexEntry(name: "x&y.txt", isFolder: false, size: sizes[2]),
            IndexEntry(name: "ünï.txt", isFolder: false, size: sizes[3]),
        ]
    }

    @Test func nginxGivesExactSizesInHTMLAndJSON() throws {
        let html = try parse("nginx-autoindex.html")
        #expect(shape(html) == shape(entries([6, 12_345, 4, 4])))
        // The entry's URL is made of the link as the server wrote it, not of a re-encoding of its name.
        #expect(html.map(\.encoded) == ["a%20b.txt", "big.bin", "sp%20ace", "sub", "x%26y.txt", "%C3%BCn%C3%AF.txt"])
        #expect(shape(try parse("nginx-autoindex.json")) == shape(entries([6, 12_345, 4, 4])))
    }

    @Test func apacheSizesAreTakenOnlyWhenExact() throws {
        #expect(shape(try parse("apache-table.html")) == shape(entries([nil, nil, nil, nil])))
        #expect(shape(try parse("apache-pre.html")) == shape(entries([6, nil, 4, 4])))  // "12K" is not a size
    }

    @Test func pythonsIndexHasNames() throws {
        #expect(shape(try parse("python-http-server.html")) == shape(entries([nil, nil, nil, nil])))
    }

    @Test func linksThatLeaveTheFolderAreNotEntries() throws {
        let page = """
            <html><head><title>Index of /data/</title></head><body><pre><a href="../">../</a>
            <a href="../../etc/passwd">x</a> <a href="/etc/">y</a> <a href="/data/inside.txt">inside by absolute path</a>
            <a href="http://elsewhere.example/data/x.txt">other host</a> <a href="http://127.0.0.1:9999/data/x.txt">other port</a>
            <a href="?C=N;O=D">sort</a> <a href="#top">top</a> <a href="%2E%2E/secret">dots</a> <a href="a%2Fb.txt">slash</a>
            <a href="sub/deeper/">two levels</a> <a href="./">here</a> <a href="nul%00.txt">nul</a>
            <a HREF='quoted.txt'>single quotes</a> <a class="x" href="amp&amp;.txt">entity</a></pre></body></html>
            """
        let entries = try DirectoryIndex.parse(Data(page.utf8), folder: URL(string: "http://127.0.0.1:8080/data/")!)
        #expect(entries.map(\.name) == ["amp&.txt", "inside.txt", "quoted.txt"])
    }

    /// Found by IndexFuzzer: a name with a colon ("http:x", from nginx's JSON or an HTML link)
    /// made a URL with that scheme instead of a file under the folder.
    @Test func aNameWithAColonIsAFileInsideNotAScheme() throws {
        let folder = URL(string: "http://127.0.0.1:8080/data/")!
        let json = #"[{"name":"http:elsewhere.example","type":"file","size":1},{"name":":x","type":"directory"}]"#
        let html = #"<html><head><title>Index of /data/</title></head><body><pre><a href="./a:b.txt">a:b.txt</a></pre>"#
        for entries in [try DirectoryIndex.parse(Data(json.utf8), folder: folder), try DirectoryIndex.parse(Data(html.utf8), folder: folder)] {
            #expect(!entries.isEmpty)
            for entry in entries {
                let url = try #require(DirectoryIndex.resolve(entry.encoded, in: folder))
                #expect(url.scheme == "http" && url.host == "127.0.0.1" && url.path(percentEncoded: false) == "/data/" + entry.name, "\(url)")
            }
        }
    }

    /// Seen 2026-11-23: an ordinary page was taken for an index (3 made-up rows that 404), and a
    /// placeholder index.html for an empty folder.
    @Test func aPageThatIsNotAnIndexSaysSo() {
        for page in [
            "just text", "[{\"broken\": ", "<html><body>empty</body></html>",
            "<html><head><title>Welcome</title></head><body><a href='about.html'>About</a> <a href='news/'>News</a></body></html>",
            "<html><body><h1>It works!</h1></body></html>",
        ] {
            #expect(throws: DirectoryIndex.NotAnIndex.self, "\(page)") { try DirectoryIndex.parse(Data(page.utf8), folder: Self.folder) }
        }
        #expect((try? DirectoryIndex.parse(Data("<html><head><title>Index of /</title></head><body></body></html>".utf8), folder: Self.folder)) == [])
    }

    @Test func anIndexInCapitalsOrWithATagOverTwoLinesIsRead() throws {
        let page = "<HTML><HEAD><TITLE>Index of /</TITLE></HEAD><BODY><PRE>\n<A HREF=\"ONE.TXT\">ONE.TXT</A>\n<A\nHREF=two.txt>two.txt</A>\n</PRE></BODY></HTML>"
        #expect(try DirectoryIndex.parse(Data(page.utf8), folder: Self.folder).map(\.name) == ["ONE.TXT", "two.txt"])
    }

    /// Seen 2026-11-23: 20,000 `<a>` without `</a>` took 59 s before the first row (quadratic).
    @Test(.timeLimit(.minutes(1)))
    func brokenAndHugePagesParseInOnePass() throws {
        let title = "<html><head><title>Index of /</title></head><body><pre>"
        let unclosed = title + (0..<20_000).map { "<a href=\"f\($0).txt\">f\($0).txt\n" }.joined()
        #expect(try DirectoryIndex.parse(Data(unclosed.utf8), folder: Self.folder).count == 20_000)
        let many = title + (0..<100_000).map { "<a href=\"g\($0).txt\">g</a> 1-Jan-2026 00:00 \($0)\n" }.joined()
        let parsed = try DirectoryIndex.parse(Data(many.utf8), folder: Self.folder)
        #expect(parsed.count == 100_000 && parsed.contains { $0.name == "g77.txt" && $0.size == 77 })
        // A tag that never ends, an attribute quote that never closes: the rest of the page is one tag.
        let broken = title + "<a href=\"ok.txt\">ok</a>\n<a href=\"never" + String(repeating: "x", count: 1_000_000)
        #expect(try DirectoryIndex.parse(Data(broken.utf8), folder: Self.folder).map(\.name) == ["ok.txt"])
    }

    /// Probe of 2026-11-28: a server listing links of 100 KB (15.6 MB a page) — none of them kept,
    /// a name being at most 1,024 bytes — held `browse` 5 s a page in its debug build, each link
    /// resolved as a URL and decoded before it was refused. Such links are now refused by their
    /// length; every name up to the longest kept still is one, however it is written.
    @Test func linksLongerThanAnyNameKeptAreRefusedAndTheLongestNamesKept() throws {
        let folder = URL(string: "http://127.0.0.1:8080/data/")!
        let longest = ["a", "b", "c"].map { $0 + String(repeating: "n", count: DirectoryIndex.longestName - 5) + ".txt" }
        let encoded = longest.map { name in name.utf8.map { String(format: "%%%02X", $0) }.joined() }
        let links = [
            longest[0], "./" + encoded[1], "http://127.0.0.1:8080/data/" + encoded[2],  // kept, three ways
            "x" + longest[0],  // one byte too long
        ] + (0 ..< 150).map { "\($0)" + String(repeating: "y", count: 100_000) }
        let page = "<html><head><title>Index of /data/</title></head><body><pre>"
            + links.map { "<a href=\"\($0)\">f</a> 10\n" }.joined() + "</pre></body></html>"
        let names = try DirectoryIndex.parse(Data(page.utf8), folder: folder).map(\.name)
        #expect(names == longest, "\(names.count) names: \(names.map { "\($0.prefix(3))… (\($0.utf8.count) bytes)" })")
    }

    @Test func aNameThatIsNotUTF8IsShownWithReplacementAndFetchedByItsBytes() throws {
        let page = "<html><head><title>Index of /</title></head><body><pre><a href=\"caf%E9.txt\">x</a></pre></body></html>"
        let entries = try DirectoryIndex.parse(Data(page.utf8), folder: Self.folder)
        #expect(entries.map(\.name) == ["caf\u{FFFD}.txt"] && entries.map(\.encoded) == ["caf%E9.txt"])
        // Its bytes, as a remote row keeps them for output that gives names back.
        #expect(DirectoryIndex.percentDecoded("caf%E9.txt") == Array("caf".utf8) + [0xE9] + Array(".txt".utf8))
    }

    @Test func controlCharactersInNamesAreNotPrinted() {
        let layout = TableLayout(width: 100)
        let row = layout.row(path: "esc\u{1B}[31mred\u{7}.txt", size: 4, .failed("bad\u{1B}]0;title\u{7}"))
        #expect(!row.unicodeScalars.contains { $0.value < 0x20 })
        #expect(row.contains("esc?[31mred?.txt"))
    }
}

/// `index_server.py` (Python's http.server with a few extra answers) over a folder made here.
final class IndexServer: Sendable {
    let process: Process
    let port: Int
    let root: URL

    init(root: URL) throws {
        self.root = root
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("terminal/index_server.py")
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        guard let python = folders.map({ URL(fileURLWithPath: String($0)).appendingPathComponent("python3") })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0.path) })
        else { throw CocoaError(.executableNotLoadable, userInfo: [NSLocalizedDescriptionKey: "python3 is not on PATH; the remote tests need it"]) }
        let process = Process()
        process.executableURL = python
        process.arguments = [script.path, root.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw TestFailure("index_server.py did not print its port")
        }
        self.process = process
        self.port = port
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Kills the server (SIGKILL: a child started from a thread that blocks SIGTERM inherits the
    /// block, and would never see `terminate()`).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A folder of files in nested folders, with names that need encoding.
func makeTree(at root: URL, files: Int) throws {
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    for index in 0..<files {
        var folder = root.appendingPathComponent("dir \(index % 3)").appendingPathComponent("sub\(index % 2)")
        if index % 4 == 0 { folder = folder.appendingPathComponent("deep#\(index % 2)") }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let name = index % 5 == 0 ? "ünï file \(index).txt" : "file-\(index)%.txt"
        try Data((0..<(index % 7)).map { "line \($0) of \(index)\n" }.joined().utf8).write(to: folder.appendingPathComponent(name))
    }
}

@Suite("Remote folders", .serialized, .timeLimit(.minutes(2)))
struct RemoteTreeTests {
    func listings(_ work: URL) -> URL { work.appendingPathComponent("listings-\(UUID().uuidString)") }

    func withServer(files: Int = 60, _ body: (IndexServer, URL) async throws -> Void) async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("remote-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let tree = work.appendingPathComponent("tree")
        try makeTree(at: tree, files: files)
        let server = try IndexServer(root: tree)
        defer { server.stop() }
        try await body(server, work)
    }

    /// Every page of `rows`, read to the end.
    func all(_ tree: RemoteTree) async throws -> [RemoteFile] {
        var files: [RemoteFile] = []
        var cursor: RemoteTree.Cursor?
        repeat {
            let page = try await tree.page(PageRequest(position: cursor.map { .after($0) } ?? .start, size: 7))
            files += page.items
            cursor = page.cursorAfter
        } while cursor != nil
        return files
    }

    @Test func theCrawlListsEveryFileInTheOrderOfALocalListing() async throws {
        try await withServer { server, work in
            let tree = RemoteTree(root: server.url("/"), listingsFolder: listings(work), connection: IndexConnection())
            let remote = try await all(tree)
            let local = try FileListing.list(work.appendingPathComponent("tree").path)
            #expect(remote.map(\.path) == local.map(\.path))
            // The bytes of each name, as `pages URL --format tsv` writes them back.
            #expect(remote.map(\.pathBytes) == local.map(\.pathBytes))
            #expect(remote.allSatisfy { $0.problem == nil && $0.url.absoluteString.hasPrefix(server.url("/").absoluteString) })
            #expect(remote.first(where: { $0.path.contains("#") })?.url.absoluteString.contains("%23") == true)
        }
    }

    @Test func depthFileAndFolderLimitsEndTheCrawlAndSaySo() async throws {
        try await withServer { server, work in
            let shallow = RemoteTree(root: server.url("/dir%200/"), listingsFolder: listings(work), maxDepth: 1, connection: IndexConnection())
            let shallowRows = try await all(shallow)
            #expect(!shallowRows.isEmpty && shallowRows.filter { !$0.isFolder }.allSatisfy { !$0.path.contains("deep") })
            #expect(shallowRows.contains { $0.path.contains("deep") && $0.problem?.contains("--max-depth") == true })
            #expect(shallow.limits.reachedLimit?.contains("--max-depth") == true)
            let few = RemoteTree(root: server.url("/"), listingsFolder: listings(work), maxFiles: 5, connection: IndexConnection())
            let fewRows = try await all(few)
            #expect(fewRows.filter { !$0.isFolder }.count == 5)
        }
    }

    /// Seen 2026-11-23: an index where every folder lists two subfolders made 1,359 requests a
    /// minute and never showed a row.
    @Test func anEndlessTreeShowsRowsAsItCrawlsAndStopsAtTheFolderLimit() async throws {
        try await withServer { server, work in
            let tree = RemoteTree(root: server.url("/endless/"), listingsFolder: listings(work), maxFolders: 40, connection: IndexConnection())
            let first = try await tree.page(PageRequest(position: .start, size: 10))
            #expect(first.items.count == 10 && first.items.allSatisfy(\.isFolder))  // rows at once: the folders
            let rows = try await all(tree)
            #expect(rows.filter { $0.problem == nil }.count <= 40)
            #expect(tree.limits.reachedLimit?.contains("--max-folders") == true)
            #expect(tree.limits.foldersListed <= 40)
        }
    }

    @Test func pagesThatAreNotIndexesAreRefusedAtTheRootAndRowsBelowIt() async throws {
        try await withServer { server, work in
            for path in ["/notindex/", "/placeholder/"] {
                let tree = RemoteTree(root: server.url(path), listingsFolder: listings(work), connection: IndexConnection())
                await #expect(throws: DirectoryIndex.NotAnIndex.self) { try await tree.checkRoot() }
            }
            let upper = RemoteTree(root: server.url("/upper/"), listingsFolder: listings(work), connection: IndexConnection())
            let upperRows = try await all(upper)
            #expect(upperRows.map(\.path) == ["ONE.TXT", "two.txt"])
            let huge = RemoteTree(root: server.url("/huge/"), listingsFolder: listings(work), connection: IndexConnection())
            let error = await #expect(throws: AsyncMediaError.self) { try await huge.checkRoot() }
            guard case .tooLarge? = error else {
                Issue.record("expected tooLarge, got \(String(describing: error))")
                return
            }
        }
    }

    @Test func hostileLinksStayInsideAndBrokenFoldersAreRows() async throws {
        try await withServer { server, work in
            let tree = RemoteTree(root: server.url("/hostile/"), listingsFolder: listings(work), connection: IndexConnection())
            let files = try await all(tree)
            #expect(files.map(\.path) == ["L" + String(repeating: "L", count: 299) + ".txt", "broken/", "esc\u{1B}[31mred.txt", "fails.txt", "gone.txt", "ok.txt"])
            #expect(files.allSatisfy { $0.url.absoluteString.hasPrefix(server.url("/hostile/").absoluteString) })
            #expect(files.first { $0.path == "broken/" }?.problem?.contains("HTTP 500") == true)
        }
    }

    @Test func redirectsAreFollowedOnlyInside() async throws {
        try await withServer { server, work in
            func refused(_ error: any Error) -> Bool {
                guard case .redirectRefused? = error as? AsyncMediaError else { return false }
                return true
            }
            let outside = RemoteTree(root: server.url("/redirect-out/"), listingsFolder: listings(work), connection: IndexConnection())
            await #expect { try await outside.checkRoot() } throws: { refused($0) }
            // /redirect-in/ goes to /hostile/, which is not under /redirect-in/: refused as well.
            let sideways = RemoteTree(root: server.url("/redirect-in/"), listingsFolder: listings(work), connection: IndexConnection())
            await #expect { try await sideways.checkRoot() } throws: { refused($0) }
            let missing = RemoteTree(root: server.url("/nowhere/"), listingsFolder: listings(work), connection: IndexConnection())
            await #expect { try await missing.checkRoot() } throws: { error in
                guard case .httpStatus(404, _)? = error as? AsyncMediaError else { return false }
                return true
            }
        }
    }

    @Test func rowsAreDownloadedSummarizedAndWorkOfflineOnTheNextRun() async throws {
        try await withServer(files: 30) { server, work in
            let cache = work.appendingPathComponent("cache")
            let local = try FileListing.list(work.appendingPathComponent("tree").path)
            var first: [String] = []
            do {
                let table = RemoteTable(root: server.url("/"), cacheFolder: cache)
                try await table.checkRoot()
                await table.streamInOrder(ahead: 8) { file, size, content in
                    first.append("\(file.path) \(size.map(String.init) ?? "?") \(content)")
                }
                table.save()
            }
            var expected: [String] = []
            for entry in local {
                if entry.isFolder {
                    expected.append("\(entry.path) ? \(RowContent.folder)")
                } else {
                    expected.append("\(entry.path) \(entry.size) \(RowContent.loaded(try await FileSummarizer().process(entry.ref)))")
                }
            }
            #expect(first == expected)

            server.stop()
            let offline = RemoteTable(root: server.url("/"), cacheFolder: cache)
            try await offline.checkRoot()  // from the disk
            var second: [String] = []
            await offline.streamInOrder(ahead: 8) { file, size, content in
                second.append("\(file.path) \(size.map(String.init) ?? "?") \(content)")
            }
            #expect(second == first)
        }
    }

    /// Probe of 2026-11-29: a downloaded file was kept for ever (its AsyncMedia had no time to
    /// live), so a file changed on the server showed its old size, lines and checksum in every later
    /// run. Now a copy older than `fileTimeToLive` is revalidated; one younger is used as it is.
    @Test func aFileChangedOnTheServerIsShownAnewOnceItsCopyIsOld() async throws {
        try await withServer(files: 12) { server, work in
            let cache = work.appendingPathComponent("cache")
            #expect(RemoteTable(root: server.url("/"), cacheFolder: cache).media.timeToLive == RemoteTable.fileTimeToLive)
            func rows(fileTimeToLive: Duration) async throws -> [String: String] {
                let table = RemoteTable(root: server.url("/"), cacheFolder: cache, fileTimeToLive: fileTimeToLive)
                try await table.checkRoot()
                var rows: [String: String] = [:]
                await table.streamInOrder(ahead: 4) { file, size, content in rows[file.path] = "\(size.map(String.init) ?? "?") \(content)" }
                return rows
            }
            let before = try await rows(fileTimeToLive: RemoteTable.fileTimeToLive)
            let tree = work.appendingPathComponent("tree")
            let changed = try #require(try FileListing.list(tree.path).first { !$0.isFolder })
            let file = tree.appendingPathComponent(changed.path)
            try Data("changed\non the server\n".utf8).write(to: file)
            // A modification time the server reports as later than the copy's, to the second.
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: file.path)
            let updated = try #require(try FileListing.list(tree.path).first { $0.path == changed.path })
            let expected = "\(updated.size) \(RowContent.loaded(try await FileSummarizer().process(updated.ref)))"
            #expect(before[changed.path] != expected)

            let young = try await rows(fileTimeToLive: RemoteTable.fileTimeToLive)
            #expect(young == before, "a copy younger than its time to live is used without asking")
            let old = try await rows(fileTimeToLive: .zero)
            #expect(old[changed.path] == expected)
            #expect(old.filter { $0.key != changed.path } == before.filter { $0.key != changed.path })
        }
    }

    @Test func aFilterStreamsEveryMatchingPathInOrderAndDownloadsOnlyTheMatches() async throws {
        try await withServer(files: 60) { server, work in
            let local = try FileListing.list(work.appendingPathComponent("tree").path)
            let query = TextQuery("2")
            var expected: [String] = []
            for entry in local where query.matches(entry.path) {
                expected.append(entry.isFolder ? "\(entry.path) \(RowContent.folder)" : "\(entry.path) \(RowContent.loaded(try await FileSummarizer().process(entry.ref)))")
            }
            let table = RemoteTable(root: server.url("/"), cacheFolder: work.appendingPathComponent("cache"))
            try await table.checkRoot()
            var streamed: [String] = []
            let failure = await table.streamInOrder(ahead: 5, filter: query) { file, _, content in
                streamed.append("\(file.path) \(content)")
            }
            #expect(failure == nil)
            #expect(!expected.isEmpty && streamed == expected)
            #expect(table.filtered.count == .exact(expected.count))
            // Only matching files were downloaded: the media folder holds as many files as matched.
            let matchingFiles = local.filter { !$0.isFolder && query.matches($0.path) }.count
            #expect(table.media.usage.count == matchingFiles)
        }
    }

    @Test func filesThatFailShowWhyInTheirRow() async throws {
        try await withServer { server, work in
            let table = RemoteTable(root: server.url("/hostile/"), cacheFolder: work.appendingPathComponent("cache"))
            var rows: [String: String] = [:]
            await table.streamInOrder(ahead: 8) { file, _, content in
                if case .failed(let message) = content { rows[file.path] = message } else { rows[file.path] = "ok" }
            }
            #expect(rows["gone.txt"] == "HTTP 404")
            #expect(rows["fails.txt"] == "HTTP 500")
            #expect(rows["ok.txt"] == "ok")
            #expect(rows["broken/"]?.contains("HTTP 500") == true)
        }
    }

    @Test func aServerThatCannotBeReachedIsOneClearLine() async throws {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("remote-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: cache) }
        let table = RemoteTable(root: URL(string: "http://127.0.0.1:9/files/")!, cacheFolder: cache)
        do {
            try await table.checkRoot()
            Issue.record("a closed port was listed")
        } catch {
            #expect(RemoteTable.rootMessage(for: error, root: table.root).hasPrefix("cannot reach http://127.0.0.1:9/files/ (connection refused)"))
        }
    }

    /// Probe of 2026-11-26: a password in the URL given (`http://user:secret@host/`) was printed in
    /// every message about it and drawn in the screen's title. The tools show URLs without it.
    @Test func aPasswordInTheURLIsNeverShown() async throws {
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("remote-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: cache) }
        let root = try #require(URL(string: "http://user:s3cret@127.0.0.1:9/files/"))
        let table = RemoteTable(root: root, cacheFolder: cache)
        do {
            try await table.checkRoot()
            Issue.record("a closed port was listed")
        } catch {
            let message = RemoteTable.rootMessage(for: error, root: table.root)
            #expect(message.hasPrefix("cannot reach http://127.0.0.1:9/files/ (connection refused)"), "\(message)")
        }
        #expect(RemoteTable.shown(root) == "http://127.0.0.1:9/files/")
        #expect(RemoteTable.shown(try #require(URL(string: "https://TOKEN@example.com/a/"))) == "https://example.com/a/")
        #expect(!RemoteRows(table: table).heading.contains("s3cret"))
        #expect(!DirectoryIndex.NotAnIndex(url: root).description.contains("s3cret"))
    }
}
