import Foundation
import Testing
@testable import Avenues

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif

/// The path of `name` in a folder of `$PATH`, or `nil`; `/usr/bin/env` is not assumed to exist.
func executable(named name: String) -> URL? {
    let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
    return folders.lazy
        .map { URL(fileURLWithPath: String($0)).appendingPathComponent(name) }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
}

/// `media_test_server.py`, started on 127.0.0.1 and an ephemeral port; stopped when released.
final class MediaServer: Sendable {
    let port: Int
    /// `https` when the server speaks TLS, else `http`.
    let scheme: String
    private let process: Process
    private let input: Pipe
    /// What asks this server for its counts: a transport that trusts its certificate over TLS.
    private let control: CurlTransport?

    /// A server over plain http, or over TLS with `tls`: a certificate for 127.0.0.1 (PEM) that is
    /// its own CA, and its key.
    init(tls: (certificate: String, key: String)? = nil) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("media_test_server.py")
        guard let python = executable(named: "python3") else {
            throw TestError("python3 is not on PATH: the AsyncMedia tests run their HTTP server with it; install python3")
        }
        let process = Process()
        process.executableURL = python
        process.arguments = [script.path] + (tls.map { ["--tls", $0.certificate, $0.key] } ?? [])
        scheme = tls == nil ? "http" : "https"
        control = try tls.map { try CurlTransport(caFile: $0.certificate) } ?? CurlTransport.shared
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var text = ""
        while !text.contains("\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw TestError("the test server exited before printing its port (is python3 installed?)") }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let port = Int(text.split(separator: "\n")[0].replacingOccurrences(of: "PORT ", with: "")) else {
            throw TestError("the test server printed \(text)")
        }
        self.port = port
        self.process = process
        self.input = input
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.terminate()
        process.waitUntilExit()
    }

    func url(_ path: String) -> URL {
        URL(string: "\(scheme)://127.0.0.1:\(port)\(path)") ?? URL(fileURLWithPath: "/")
    }

    /// The body of a GET of `url`, through libcurl. Not URLSession: on Linux its async methods
    /// cancel a task synchronously inside Swift's cancellation handler (a deadlock when a test's
    /// time limit cancels a poll) and its task registry crashed a ThreadSanitizer run ("Trying to
    /// access a behaviour for a task that in not in the registry").
    static func get(_ url: URL, through transport: CurlTransport? = CurlTransport.shared) async throws -> (Data, Int) {
        final class Collector: DownloadSink, @unchecked Sendable {  // the transport calls it from one thread at a time
            var data = Data()
            var status = 0
            let done: CheckedContinuation<(Data, Int), any Error>
            init(_ done: CheckedContinuation<(Data, Int), any Error>) { self.done = done }
            func head(status: Int, fields: [HTTPField]) -> Bool {
                self.status = status
                return true
            }
            func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
                data.append(contentsOf: bytes)
                return true
            }
            func end(_ error: (any Error)?) {
                if let error { done.resume(throwing: error) } else { done.resume(returning: (data, status)) }
            }
        }
        guard let transport else { throw URLError(.unsupportedURL) }
        return try await withCheckedThrowingContinuation { done in
            _ = transport.start(DownloadRequest(url: url, headers: [], limits: .default), into: Collector(done))
        }
    }

    /// A certificate for 127.0.0.1 that is its own CA, and its key, made with openssl in `folder`.
    static func makeCertificate(in folder: URL) throws -> (certificate: String, key: String) {
        guard let openssl = executable(named: "openssl") else { throw TestError("openssl is not on PATH: the https tests make a certificate with it") }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let certificate = folder.appendingPathComponent("cert.pem").path, key = folder.appendingPathComponent("key.pem").path
        let process = Process()
        process.executableURL = openssl
        process.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
                             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestError("openssl could not make a certificate") }
        return (certificate, key)
    }

    /// Requests per path, and connections the client closed mid-body, as the server saw them.
    func counts() async throws -> (requests: [String: Int], closed: [String: Int]) {
        let (data, _) = try await Self.get(url("/counts"), through: control)
        struct Counts: Decodable { var requests: [String: Int]; var closed: [String: Int] }
        let counts = try JSONDecoder().decode(Counts.self, from: data)
        return (counts.requests, counts.closed)
    }

    /// Every request's path and query, in the order the server received them.
    func order() async throws -> [String] {
        let (data, _) = try await Self.get(url("/counts"), through: control)
        struct Counts: Decodable { var order: [String] }
        return try JSONDecoder().decode(Counts.self, from: data).order
    }

    /// The Accept-Encoding and Range headers each path was last asked with.
    func headers() async throws -> [String: [String: String]] {
        let (data, _) = try await Self.get(url("/counts"), through: control)
        struct Counts: Decodable { var headers: [String: [String: String]] }
        return try JSONDecoder().decode(Counts.self, from: data).headers
    }

    /// The bytes of body the server sent per path (the paths that count them).
    func sent() async throws -> [String: Int] {
        let (data, _) = try await Self.get(url("/counts"), through: control)
        struct Counts: Decodable { var sent: [String: Int] }
        return try JSONDecoder().decode(Counts.self, from: data).sent
    }

    /// Asks the server to answer `/resumable` with this ETag from now on.
    func setETag(_ value: String) async throws {
        _ = try await Self.get(url("/set-etag/\(value)"), through: control)
    }

    /// The bytes the server sends for `/bytes/<count>` and `/drip/<count>`.
    static func body(_ count: Int) -> Data {
        Data((0..<count).map { UInt8(($0 * 31 + 7) % 251) })
    }
}

@Suite("AsyncMedia", .serialized, .timeLimit(.minutes(5)))
final class AsyncMediaTests {
    let folder = TemporaryFolder("media")
    let server: MediaServer

    init() throws {
        server = try MediaServer()
    }

    func media(sizeLimit: Int? = nil, unnamedFiles: Bool = true) -> AsyncMedia {
        AsyncMedia(
            directory: folder.child("media"), sizeLimit: sizeLimit, maxConcurrentDownloads: 6, limits: .default, timeToLive: nil,
            headers: [:], transport: nil, unnamedFiles: unnamedFiles, writeBytes: { try FileSystem.writeAll($0, [$1], path: $2) }
        )
    }

    /// Files in the media folder: downloaded ones and temporary ones.
    func files() -> (media: [String], temporary: [String]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.child("media").path)) ?? []
        return (names.filter(MediaFolder.isMediaName), names.filter { CacheFolder.isTemporaryName($0) || MediaFolder.isPartialName($0) })
    }

    @Test func twentyConcurrentRequestsOfOneURLCauseOneServerRequestAndGetTheRightBytes() async throws {
        let media = media()
        let url = server.url("/bytes/300000.bin")
        let files = try await withThrowingTaskGroup(of: URL.self) { group in
            for _ in 0..<20 { group.addTask { try await media.file(for: url) } }
            return try await group.reduce(into: [URL]()) { $0.append($1) }
        }
        #expect(Set(files).count == 1)
        let file = try #require(files.first)
        #expect(try Data(contentsOf: file) == MediaServer.body(300_000))
        #expect(file.pathExtension == "bin")
        #expect(try await server.counts().requests["/bytes/300000.bin"] == 1)

        // Later requests are served from the folder, without asking the server.
        #expect(try await media.file(for: url) == file)
        #expect(media.cachedFile(for: url) == file)
        let again = AsyncMedia(directory: folder.child("media"))  // a restart
        #expect(try await again.file(for: url) == file)
        #expect(try await server.counts().requests["/bytes/300000.bin"] == 1)
    }

    @Test(arguments: [404, 500])
    func anErrorStatusIsATypedErrorAndNothingIsCached(status: Int) async throws {
        let media = media()
        let url = server.url("/status/\(status)")
        await #expect(throws: AsyncMediaError.httpStatus(status, url: url)) { try await media.file(for: url) }
        #expect(media.cachedFile(for: url) == nil)
        #expect(files().media.isEmpty && files().temporary.isEmpty)
    }

    @Test func aBodyShorterThanItsContentLengthIsAnErrorAndNothingIsCached() async throws {
        let media = media()
        let url = server.url("/short/100000")
        await #expect(throws: (any Error).self) { try await media.file(for: url) }
        #expect(media.cachedFile(for: url) == nil)
        #expect(files().media.isEmpty && files().temporary.isEmpty)
    }

    /// With files that have no name (Linux) and with named ones (elsewhere, and where the file
    /// system cannot make them).
    @Test(arguments: [true, false])
    func whenEveryCallerCancelsTheTransferStopsAndLeavesNoFile(unnamedFiles: Bool) async throws {
        let media = media(unnamedFiles: unnamedFiles)
        let url = server.url("/drip/5000000?chunk=16384&pause_ms=10")
        let progress = media.progress(for: url)
        let callers = (0..<3).map { _ in Task { try await media.file(for: url) } }
        var iterator = progress.makeAsyncIterator()
        var first = await iterator.next()  // the head's report, then bytes flowing into the temporary file
        while let value = first, value.received == 0, !value.isComplete { first = await iterator.next() }
        #expect((first?.received ?? 0) > 0)
        // A file with no name on Linux (nothing to see in the folder), a named one elsewhere.
        #if os(Linux)
        #expect(files().temporary.count == (unnamedFiles ? 0 : 1))
        #else
        #expect(files().temporary.count == 1)
        #endif
        await eventually("the file is open") { openDescriptors(in: self.folder.child("media").path).map { $0 == 1 } ?? true }
        callers[0].cancel()
        callers[1].cancel()
        #expect(try await server.counts().closed["/drip/5000000"] == nil)  // one caller still wants it
        callers[2].cancel()
        for caller in callers {
            await #expect(throws: CancellationError.self) { try await caller.value }
        }
        await eventually("the server saw the connection closed") {
            let counts = try? await self.server.counts()
            return counts?.closed["/drip/5000000"] == 1
        }
        await eventually("the temporary file was deleted") { self.files().temporary.isEmpty }
        await eventually("the file was closed") { openDescriptorsSettled(in: self.folder.child("media").path, at: 0) }
        #expect(files().media.isEmpty)
        #expect(media.cachedFile(for: url) == nil)
        #expect(try await server.counts().requests["/drip/5000000"] == 1)
    }

    @Test func progressReachesTheExpectedSize() async throws {
        let media = media()
        let url = server.url("/bytes/2000000")
        let progress = media.progress(for: url)
        let file = try await media.file(for: url)
        var seen: [DownloadProgress] = []
        for await value in progress { seen.append(value) }
        #expect(seen.last == DownloadProgress(received: 2_000_000, expected: 2_000_000, isComplete: true))
        #expect(seen.last?.fractionCompleted == 1)
        #expect(try Data(contentsOf: file).count == 2_000_000)
        var cached: [DownloadProgress] = []
        for await value in media.progress(for: url) { cached.append(value) }
        #expect(cached == [DownloadProgress(received: 2_000_000, expected: 2_000_000, isComplete: true)])
    }

    /// Probe of 2026-11-27: progress came only every 256 KiB, so a file smaller than that showed
    /// nothing until it was complete, whatever its speed, and the size a progress bar needs was
    /// not told. Now the head's report comes first: nothing received yet, the size expected.
    @Test func progressIsReportedWhenTheBodyStartsWithTheSizeExpected() async throws {
        let media = AsyncMedia(directory: folder.child("media"), limits: DownloadLimits(idleTimeout: .seconds(10)))
        let url = server.url("/stall/100000")  // the head and 10 bytes, then nothing
        let progress = media.progress(for: url)
        let download = Task { try await media.file(for: url) }
        var iterator = progress.makeAsyncIterator()
        let first = await iterator.next()
        download.cancel()
        #expect(first == DownloadProgress(received: 0, expected: 100_000, isComplete: false))
        await #expect(throws: CancellationError.self) { try await download.value }
    }

    /// The same probe on a slow download: 200,000 bytes in 500-byte pieces 10 ms apart (4 s) were
    /// reported once, complete. Now a download that moves is reported at least every
    /// `Transfer.reportInterval`.
    @Test func aSlowDownloadIsReportedWhileItMoves() async throws {
        let media = media()
        let url = server.url("/drip/200000?chunk=500&pause_ms=10")
        let progress = media.progress(for: url)
        let download = Task { try await media.file(for: url) }
        var moving: DownloadProgress?
        for await value in progress where value.received > 0 && !value.isComplete {
            moving = value
            break
        }
        download.cancel()
        #expect(moving.map { $0.received < 200_000 && $0.expected == 200_000 } == true, "\(String(describing: moving))")
    }

    /// The same probe for a download: an empty folder where its file goes is removed, and the
    /// file is stored.
    @Test func anEmptyFolderWhereADownloadGoesIsRemoved() async throws {
        let url = server.url("/bytes/1000")
        let file = try await media().file(for: url)
        try FileManager.default.removeItem(at: file)
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        let again = try await media().file(for: url)
        #expect(try Data(contentsOf: again) == MediaServer.body(1_000))
    }

    @Test func progressIsDueAfterEnoughBytesOrEnoughTime() {
        #expect(!Transfer.isReportDue(received: 0, since: nil))
        #expect(!Transfer.isReportDue(received: 0, since: .seconds(10)))
        #expect(Transfer.isReportDue(received: 1, since: nil))
        #expect(!Transfer.isReportDue(received: 1, since: .milliseconds(99)))
        #expect(Transfer.isReportDue(received: 1, since: Transfer.reportInterval))
        #expect(Transfer.isReportDue(received: Transfer.reportEvery, since: .zero))
        #expect(!Transfer.isReportDue(received: Transfer.reportEvery - 1, since: .zero))
    }

    /// Probe of 2026-11-26: with a time-to-live, the progress of a `file:` URL (which is its own
    /// file, never downloaded) never ended: it waited for a download that never comes.
    @Test func theProgressOfAFileURLEndsAtOnceWithOrWithoutATimeToLive() async throws {
        let local = folder.child("local.txt")
        try Data(count: 1_234).write(to: local)
        for timeToLive in [nil, Duration.seconds(60), .zero] as [Duration?] {
            let media = AsyncMedia(directory: folder.child("media"), timeToLive: timeToLive)
            var seen: [DownloadProgress] = []
            for await value in media.progress(for: local) { seen.append(value) }
            #expect(seen == [DownloadProgress(received: 1_234, expected: 1_234, isComplete: true)], "\(String(describing: timeToLive))")
            #expect(try await media.file(for: local) == local)
        }
    }

    /// Probe of 2026-11-26: the progress of a URL that can never be downloaded (a scheme other than
    /// http and https, no host) never ended; ``AsyncMedia/file(for:)`` throws for it at once.
    @Test(arguments: ["ftp://127.0.0.1/a", "http:///no-host", "http://127.0.0.1:99999/port"])
    func theProgressOfAURLThatCannotBeDownloadedEndsAtOnce(_ text: String) async throws {
        let media = AsyncMedia(directory: folder.child("media"))
        let url = try #require(URL(string: text))
        var seen: [DownloadProgress] = []
        for await value in media.progress(for: url) { seen.append(value) }
        #expect(seen.isEmpty)
        await #expect(throws: AsyncMediaError.self) { try await media.file(for: url) }
    }

    /// The same probe with headers that can never be sent: every http URL fails at once.
    @Test func theProgressOfAnyURLEndsAtOnceWhenTheHeadersCannotBeSent() async throws {
        let media = AsyncMedia(directory: folder.child("media"), headers: ["X-Bad": "a\r\nb"])
        let url = server.url("/bytes/10")
        var seen: [DownloadProgress] = []
        for await value in media.progress(for: url) { seen.append(value) }
        #expect(seen.isEmpty)
        await #expect(throws: AsyncMediaError.self) { try await media.file(for: url) }
        #expect(try await server.counts().requests["/bytes/10"] == nil)
    }

    @Test("Avenues 0.1 fault: cancelAll invalidated the URL session; clear() leaves AsyncMedia usable", .tags(.anchorFault))
    func clearEmptiesTheFolderAndTheInstanceStaysUsable() async throws {
        let media = media()
        _ = try await media.file(for: server.url("/bytes/1000"))
        _ = try await media.file(for: server.url("/bytes/2000.txt"))
        #expect(files().media.count == 2)
        media.clear()
        #expect(files().media.isEmpty)
        #expect(media.usage.count == 0)
        let file = try await media.file(for: server.url("/bytes/1000"))
        #expect(try Data(contentsOf: file) == MediaServer.body(1_000))
        #expect(try await server.counts().requests["/bytes/1000"] == 2)
    }

    @Test func fileURLsAreReturnedAsTheyAreAndOtherSchemesAreATypedError() async throws {
        let media = media()
        let local = URL(fileURLWithPath: "/etc/hostname")
        #expect(try await media.file(for: local) == local)
        let ftp = try #require(URL(string: "ftp://example.com/file.bin"))
        await #expect(throws: AsyncMediaError.unsupportedScheme(ftp)) { try await media.file(for: ftp) }
    }

    @Test func aSizeLimitSweepsTheLeastRecentlyUsedFiles() async throws {
        let media = media(sizeLimit: 250_000)
        let first = server.url("/bytes/100000.a"), second = server.url("/bytes/100000.b"), third = server.url("/bytes/100000.c")
        _ = try await media.file(for: first)
        _ = try await media.file(for: second)
        _ = media.cachedFile(for: first)  // used: the second is now the least recent
        _ = try await media.file(for: third)  // 300 KB > 250 KB: down to 200 KB
        #expect(media.cachedFile(for: first) != nil)
        #expect(media.cachedFile(for: second) == nil)
        #expect(media.cachedFile(for: third) != nil)
        #expect(files().media.count == 2)
    }

    @Test func fileNamesAreTheURLsSHA256WithItsExtension() throws {
        let url = try #require(URL(string: "https://example.com/a/photo.JPG?size=2"))
        let name = MediaFolder.fileName(for: url)
        // The first 128 bits of the URL's SHA-256 (`printf %s URL | sha256sum`). Pinned: another
        // name for the same URL leaves every file already downloaded unfound.
        #expect(name == "03cb45b277700d0eb5593c460d9102b2.JPG")
        #expect(name == MediaFolder.fileName(for: try #require(URL(string: "https://example.com/a/photo.JPG?size=2"))))
        #expect(name != MediaFolder.fileName(for: try #require(URL(string: "https://example.com/a/photo.JPG?size=3"))))
        #expect(MediaFolder.isMediaName(name))
        #expect(!MediaFolder.fileName(for: try #require(URL(string: "https://x.org/../../etc/passwd"))).contains("/"))
    }

    /// Rows 0 and 2 show one URL. Seen in CI (2026-11-26, under ThreadSanitizer): row 0's download
    /// ended before row 2 was prepared, so row 2 was a cache hit, which is not told — and the test,
    /// waiting for three events, waited for ever. Told are the rows whose load ended; row 2 is
    /// readable either way. `lateRow` prepares row 2 only after row 0 was told, the order the race
    /// made.
    @Test(arguments: [false, true])
    func anAvenueShowsDownloadsByRow(lateRow: Bool) async throws {
        let media = media()
        let avenue = Avenue<Int, URL, URL>(storage: MemoryStorage(), processor: media)
        let told = EventLog<Int>()
        avenue.onStateChange = { told.append($0) }
        let urls = [server.url("/bytes/3000"), server.url("/bytes/5000"), server.url("/bytes/3000")]
        for (row, url) in urls.enumerated() where !(lateRow && row == 2) { avenue.prepareItem(for: url, at: row) }
        await told.wait(until: { Set($0).isSuperset(of: [0, 1]) })
        if lateRow { avenue.prepareItem(for: urls[2], at: 2) }
        for (row, size) in [3_000, 5_000, 3_000].enumerated() {
            let file = try #require(avenue.item(at: row))
            #expect(try Data(contentsOf: file) == MediaServer.body(size))
        }
        #expect(try await server.counts().requests["/bytes/3000"] == 1)
    }
}
