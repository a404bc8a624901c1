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

    func parse(_ fixture: String) throws -> [IndexEntry] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/" + fixture)
        return try DirectoryIndex.parse(try Data(contentsOf: url), folder: Self.folder)
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
        #expect(try parse("nginx-autoindex.html") == entries([6, 12_345, 4, 4]))
        #expect(try parse("nginx-autoindex.json") == entries([6, 12_345, 4, 4]))
    }

    @Test func apacheSizesAreTakenOnlyWhenExact() throws {
        #expect(try parse("apache-table.html") == entries([nil, nil, nil, nil]))
        #expect(try parse("apache-pre.html") == entries([6, nil, 4, 4]))  // "12K" is not a size
    }

    @Test func pythonsIndexHasNames() throws {
        #expect(try parse("python-http-server.html") == entries([nil, nil, nil, nil]))
    }

    @Test func linksThatLeaveTheFolderAreNotEntries() throws {
        let page = """
            <html><body><pre><a href="../">../</a>
            <a href="../../etc/passwd">x</a> <a href="/etc/">y</a> <a href="/data/inside.txt">inside by absolute path</a>
            <a href="http://elsewhere.example/data/x.txt">other host</a> <a href="http://127.0.0.1:9999/data/x.txt">other port</a>
            <a href="?C=N;O=D">sort</a> <a href="#top">top</a> <a href="%2E%2E/secret">dots</a> <a href="a%2Fb.txt">slash</a>
            <a href="sub/deeper/">two levels</a> <a href="./">here</a> <a href="nul%00.txt">nul</a>
            <a HREF='quoted.txt'>single quotes</a> <a class="x" href="amp&amp;.txt">entity</a></pre></body></html>
            """
        let entries = try DirectoryIndex.parse(Data(page.utf8), folder: URL(string: "http://127.0.0.1:8080/data/")!)
        #expect(entries.map(\.name) == ["amp&.txt", "inside.txt", "quoted.txt"])
    }

    @Test func aPageThatIsNotAnIndexSaysSo() {
        #expect(throws: DirectoryIndex.NotAnIndex.self) { try DirectoryIndex.parse(Data("just text".utf8), folder: Self.folder) }
        #expect(throws: DirectoryIndex.NotAnIndex.self) { try DirectoryIndex.parse(Data("[{\"broken\": ".utf8), folder: Self.folder) }
        #expect((try? DirectoryIndex.parse(Data("<html><body>empty</body></html>".utf8), folder: Self.folder)) == [])
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
            let tree = RemoteTree(root: server.url("/"), listingsFolder: nil, connection: IndexConnection())
            let remote = try await all(tree)
            let local = try FileListing.list(work.appendingPathComponent("tree").path)
            #expect(remote.map(\.path) == local.map(\.path))
            #expect(remote.allSatisfy { $0.problem == nil && $0.url.absoluteString.hasPrefix(server.url("/").absoluteString) })
            #expect(remote.first(where: { $0.path.contains("#") })?.url.absoluteString.contains("%23") == true)
        }
    }

    @Test func depthAndFileLimitsEndTheCrawl() async throws {
        try await withServer { server, _ in
            let shallow = RemoteTree(root: server.url("/dir%200/"), listingsFolder: nil, maxDepth: 1, connection: IndexConnection())
            let shallowFiles = try await all(shallow)
            #expect(!shallowFiles.isEmpty && shallowFiles.allSatisfy { !$0.path.contains("deep") })
            let few = RemoteTree(root: server.url("/"), listingsFolder: nil, maxFiles: 5, connection: IndexConnection())
            let fewFiles = try await all(few)
            #expect(fewFiles.count == 5)
        }
    }

    @Test func hostileLinksStayInsideAndBrokenFoldersAreRows() async throws {
        try await withServer { server, _ in
            let tree = RemoteTree(root: server.url("/hostile/"), listingsFolder: nil, connection: IndexConnection())
            let files = try await all(tree)
            #expect(files.map(\.path) == ["L" + String(repeating: "L", count: 299) + ".txt", "broken/", "esc\u{1B}[31mred.txt", "fails.txt", "gone.txt", "ok.txt"])
            #expect(files.allSatisfy { $0.url.absoluteString.hasPrefix(server.url("/hostile/").absoluteString) })
            #expect(files.first { $0.path == "broken/" }?.problem?.contains("HTTP 500") == true)
        }
    }

    @Test func redirectsAreFollowedOnlyInside() async throws {
        try await withServer { server, _ in
            let outside = RemoteTree(root: server.url("/redirect-out/"), listingsFolder: nil, connection: IndexConnection())
            await #expect(throws: IndexConnection.Failure.redirectOutside(from: server.url("/redirect-out/"), to: "http://192.0.2.1/")) {
                try await outside.checkRoot()
            }
            // /redirect-in/ goes to /hostile/, which is not under /redirect-in/: refused as well.
            let sideways = RemoteTree(root: server.url("/redirect-in/"), listingsFolder: nil, connection: IndexConnection())
            await #expect(throws: IndexConnection.Failure.self) { try await sideways.checkRoot() }
            let missing = RemoteTree(root: server.url("/nowhere/"), listingsFolder: nil, connection: IndexConnection())
            await #expect(throws: IndexConnection.Failure.httpStatus(404, url: server.url("/nowhere/"))) { try await missing.checkRoot() }
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
                expected.append("\(entry.path) \(entry.size) \(RowContent.loaded(try await FileSummarizer().process(entry.ref)))")
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
}
