import Foundation
import Synchronization
import Testing
@testable import Avenues
import AvenuesTestSupport

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

/// Which transport a test drives: libcurl (AsyncMedia's default on Linux), or URLSession (the
/// default on Apple platforms; on Linux an option).
enum MediaTransport: String, CaseIterable, CustomTestStringConvertible {
    case curl, urlSession
    var testDescription: String { rawValue }

    /// The transports these tests drive here: on Linux libcurl only (URLSessionTransport is not
    /// built there), on Apple platforms both.
    static var tested: [MediaTransport] {
        #if canImport(FoundationNetworking)
        [.curl]
        #else
        allCases
        #endif
    }

    var transport: (any DownloadTransport)? {
        switch self {
        case .curl: CurlTransport.shared
        case .urlSession:
            #if canImport(FoundationNetworking)
            nil
            #else
            URLSessionTransport()
            #endif
        }
    }
}

/// AsyncMedia against real faults: a full disk, a deleted folder, servers that answer with part of a
/// file, with gzip, with no end, or not at all. Each case caches nothing it should not, leaves no
/// temporary file, and leaves the process's networking working.
@Suite("AsyncMedia under faults", .serialized, .timeLimit(.minutes(5)))
final class AsyncMediaFaultTests: Sendable {
    let folder = TemporaryFolder("media-faults")
    let server: MediaServer

    init() throws {
        server = try MediaServer()
    }

    func media(
        _ transport: MediaTransport = .curl,
        directory: URL? = nil,
        sizeLimit: Int? = nil,
        limits: DownloadLimits = .default,
        maxConcurrentDownloads: Int = 6,
        timeToLive: Duration? = nil,
        headers: [String: String] = [:],
        writeBytes: @escaping @Sendable (Int32, UnsafeRawBufferPointer, String) throws -> Void = { try FileSystem.writeAll($0, [$1], path: $2) }
    ) -> AsyncMedia {
        AsyncMedia(
            directory: directory ?? folder.child("media"), sizeLimit: sizeLimit, maxConcurrentDownloads: maxConcurrentDownloads,
            limits: limits, timeToLive: timeToLive, headers: headers, transport: transport.transport, writeBytes: writeBytes
        )
    }

    func files(in directory: URL? = nil) -> (media: [String], temporary: [String]) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: (directory ?? folder.child("media")).path)) ?? []
        return (names.filter(MediaFolder.isMediaName), names.filter { CacheFolder.isTemporaryName($0) || MediaFolder.isPartialName($0) })
    }

    /// Bytes free on the file system holding `url` (0 if it cannot be read).
    static func freeBytes(_ url: URL) -> UInt64 {
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else { return 0 }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    /// The process's networking still works: URLSession.shared, a new AsyncMedia and a plain task.
    func networkingStillWorks() async throws {
        let (data, _) = try await URLSession.shared.data(from: server.url("/bytes/100"))
        #expect(data == MediaServer.body(100))
        let other = AsyncMedia(directory: folder.child("other-\(UUID().uuidString)"))
        let file = try await other.file(for: server.url("/bytes/5000"))
        #expect(try Data(contentsOf: file) == MediaServer.body(5_000))
        #expect(await Task.detached { 42 }.value == 42)
    }

    // MARK: A full disk (item 1)

    @Test(arguments: MediaTransport.tested)
    func aDiskThatFillsDuringAFastDownloadFailsItCleanlyAndNetworkingGoesOn(transport: MediaTransport) async throws {
        // The folder "holds" 1 MiB: the write that would pass it fails with ENOSPC, as on a full tmpfs.
        let written = Atomic<Int>(0)
        let media = media(transport) { descriptor, bytes, path in
            guard written.add(bytes.count, ordering: .relaxed).newValue <= 1 << 20 else {
                throw FileSystem.Failure(call: "write", path: path, code: ENOSPC)
            }
            try FileSystem.writeAll(descriptor, [bytes], path: path)
        }
        for size in [3_000_000, 20_000_000] {
            written.store(0, ordering: .relaxed)
            let url = server.url("/bytes/\(size)")
            await #expect {
                try await media.file(for: url)
            } throws: { error in
                guard case .cannotStore(_, let reason)? = error as? AsyncMediaError else { return false }
                return reason.reason == .diskFull && "\(error)".contains("Free some space")
            }
            #expect(media.cachedFile(for: url) == nil)
            await eventually("the temporary file is gone") { self.files().temporary.isEmpty }
        }
        // Before the fix the process's networking was dead from here on (the delegate's cancel()
        // waited for libcurl's queue, blocked on the delegate).
        try await networkingStillWorks()
        written.store(0, ordering: .relaxed)  // space was freed
        let after = try await media.file(for: server.url("/bytes/1000"))
        #expect(try Data(contentsOf: after) == MediaServer.body(1_000))
    }

    @Test func aRealOneMebibyteFileSystemFillsUpCleanly() async throws {
        // Needs root to mount a tmpfs; the seam above covers the same path everywhere.
        let mountPoint = folder.child("tmpfs")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint.path]
        mount.standardError = Pipe()
        guard getuid() == 0, (try? mount.run()) != nil, { mount.waitUntilExit(); return mount.terminationStatus == 0 }() else {
            print("skipped: mounting a 1 MiB tmpfs needs root (mount -t tmpfs); the disk-full seam test covers the same path")
            return
        }
        defer {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/bin/umount")
            unmount.arguments = [mountPoint.path]
            try? unmount.run()
            unmount.waitUntilExit()
        }
        for transport in MediaTransport.tested {
            let directory = mountPoint.appendingPathComponent(transport.rawValue)
            let media = media(transport, directory: directory)
            for size in [3_000_000, 20_000_000] {
                await #expect {
                    try await media.file(for: server.url("/bytes/\(size)"))
                } throws: { error in
                    guard case .cannotStore(_, let reason)? = error as? AsyncMediaError else { return false }
                    return reason.reason == .diskFull
                }
                // Its space is given back before the error is: the transport may still hold the
                // file open (a small download right after once failed with ENOSPC under TSan).
                #expect(Self.freeBytes(mountPoint) >= (1 << 20) - (16 << 10))
                await eventually("the temporary file is gone") { self.files(in: directory).temporary.isEmpty }
            }
            let small = try await media.file(for: server.url("/bytes/2000"))
            #expect(try Data(contentsOf: small) == MediaServer.body(2_000))
        }
        try await networkingStillWorks()
    }

    // MARK: Encoded bodies, partial and empty answers (items 3 and 5)

    @Test(arguments: MediaTransport.tested)
    func aGzippedBodyWithContentLengthIsDecodedAndCached(transport: MediaTransport) async throws {
        // The server gzips whatever it is asked; before the fix its Content-Length (of the encoded
        // body) was compared with the decoded size: incompleteBody on every try.
        let media = media(transport)
        let file = try await media.file(for: server.url("/gzip/200000"))
        #expect(try Data(contentsOf: file) == MediaServer.body(200_000))
    }

    @Test func libcurlIsAskedOnlyForEncodingsAsyncMediaChecksAndNoRangeAtFirst() async throws {
        _ = try await media(.curl).file(for: server.url("/bytes/1000"))
        let asked = try await server.headers()["/bytes/1000"]
        #expect(asked?["accept-encoding"] == "gzip, deflate")
        #expect(asked?["range"] == "")
    }

    @Test(arguments: MediaTransport.tested, [204, 206])
    func partialAndEmptyAnswersAreNeverCached(transport: MediaTransport, status: Int) async throws {
        let media = media(transport)
        let url = server.url("/status/\(status)")
        await #expect(throws: AsyncMediaError.httpStatus(status, url: url)) { try await media.file(for: url) }
        #expect(media.cachedFile(for: url) == nil)
        #expect(files().media.isEmpty && files().temporary.isEmpty)
    }

    @Test(arguments: MediaTransport.tested)
    func chunkedCloseDelimitedAndRedirectedBodiesArriveWhole(transport: MediaTransport) async throws {
        let media = media(transport)
        for path in ["/chunked/123457", "/close/54321", "/redirect/bytes/7777"] {
            let file = try await media.file(for: server.url(path))
            let size = Int(path.split(separator: "/").last ?? "0") ?? 0
            #expect(try Data(contentsOf: file) == MediaServer.body(size), "\(path)")
        }
    }

    // MARK: Bodies that do not end (item 5)

    @Test(arguments: MediaTransport.tested)
    func aBodyThatNeverEndsIsStoppedByTheTotalTimeout(transport: MediaTransport) async throws {
        let media = media(transport, limits: DownloadLimits(idleTimeout: .seconds(5), totalTimeout: .milliseconds(800)))
        let url = server.url("/endless?pause_ms=10")
        await #expect(throws: AsyncMediaError.tookTooLong(try AsyncMedia.canonical(url), limit: .milliseconds(800))) {
            try await media.file(for: url)
        }
        #expect(files().media.isEmpty)
        await eventually("the temporary file is gone") { self.files().temporary.isEmpty }
        await eventually("the server saw the connection closed") { (try? await self.server.counts().closed["/endless"]) == 1 }
    }

    @Test(arguments: MediaTransport.tested)
    func aServerThatStopsSendingIsStoppedByTheIdleTimeout(transport: MediaTransport) async throws {
        let media = media(transport, limits: DownloadLimits(idleTimeout: .milliseconds(700)))
        await #expect {
            try await media.file(for: server.url("/stall/100000"))
        } throws: { error in
            (error as? URLError)?.code == .timedOut && error.isSilenceable
        }
        #expect(files().media.isEmpty)
        await eventually("the temporary file is gone") { self.files().temporary.isEmpty }
    }

    /// One timer watches every transfer's limits: a transfer with a sooner deadline that starts
    /// while one with a later deadline is watched must still be stopped at its own.
    @Test func aSoonerLimitStartedAfterALaterOneIsStoppedOnTime() async throws {
        let slow = media(limits: DownloadLimits(idleTimeout: .seconds(100), totalTimeout: .seconds(120)))
        let quick = media(limits: DownloadLimits(idleTimeout: .seconds(5), totalTimeout: .milliseconds(500)))
        let long = Task { try await slow.file(for: server.url("/endless?pause_ms=10&n=long")) }
        defer { long.cancel() }
        await eventually("the long download runs") { slow.activity.running == 1 }
        // ...and is watched: its deadline is the one a broken watch would wait for.
        await eventually("the long download is watched") { TransferWatch.shared.count >= 1 }
        let clock = ContinuousClock()
        let started = clock.now
        let url = server.url("/endless?pause_ms=10&n=short")
        await #expect(throws: AsyncMediaError.tookTooLong(try AsyncMedia.canonical(url), limit: .milliseconds(500))) {
            try await quick.file(for: url)
        }
        // Checked only when the long one's deadline came (100 s idle), it would take 100 s; the bound is loose
        // enough for any loaded machine and still tells the two apart.
        #expect(clock.now - started < .seconds(60))
    }

    @Test func aBodyLargerThanTheMaximumSizeIsStoppedEarly() async throws {
        let media = media(limits: DownloadLimits(maximumSize: 10_000))
        let url = server.url("/bytes/5000000")
        await #expect(throws: AsyncMediaError.tooLarge(url, limit: 10_000)) { try await media.file(for: url) }
        let endless = server.url("/close/5000000")  // no announced length: stopped when it passes the limit
        await #expect(throws: AsyncMediaError.tooLarge(endless, limit: 10_000)) { try await media.file(for: endless) }
        #expect(files().media.isEmpty)
    }

    // MARK: URLs and the folder (items 4 and 5)

    @Test func anUpperCaseSchemeAFragmentAndADefaultPortAreOneURL() async throws {
        let media = media()
        let base = "127.0.0.1:\(server.port)/bytes/4321"
        let urls = try ["HTTP://\(base)", "http://\(base)#first", "http://\(base)#second"].map { try #require(URL(string: $0)) }
        var files: [URL] = []
        for url in urls { files.append(try await media.file(for: url)) }
        #expect(Set(files).count == 1)
        #expect(try await server.counts().requests["/bytes/4321"] == 1)
        #expect(media.cachedFile(for: urls[2]) == files[0])
        let withPort = try #require(URL(string: "http://EXAMPLE.com:80/a#b"))
        #expect(try AsyncMedia.canonical(withPort).absoluteString == "http://example.com/a")
    }

    /// Probe of 2026-11-26: a folder that is a file read "cannot be used ( (lstat: Not a
    /// directory))", the cause wrapped twice.
    @Test func aFolderThatIsAFileSaysWhyOnce() async throws {
        let file = folder.child("a-file")
        try Data("x".utf8).write(to: file)
        let media = AsyncMedia(directory: file, transport: CannedTransport())
        do {
            _ = try await media.file(for: try #require(URL(string: "https://example.invalid/a.txt")))
            Issue.record("a file was stored in a folder that is a file")
        } catch let error as AsyncMediaError {
            #expect(error.description.hasSuffix("could not be stored in the media folder: the folder \(file.path) cannot be used (lstat: Not a directory). Choose another with AsyncMedia(directory:)."), "\(error)")
        }
    }

    @Test(arguments: [nil, 10_000_000])
    func aDeletedFolderIsCreatedAgain(sizeLimit: Int?) async throws {
        let media = media(sizeLimit: sizeLimit)
        _ = try await media.file(for: server.url("/bytes/1000"))
        try FileManager.default.removeItem(at: media.directory)
        let file = try await media.file(for: server.url("/bytes/2000"))  // before the fix: failed for ever
        #expect(try Data(contentsOf: file) == MediaServer.body(2_000))
        media.clear()
        try FileManager.default.removeItem(at: media.directory)
        #expect(try await media.file(for: server.url("/bytes/3000")).path.hasPrefix(media.directory.path))
    }

    /// The folder deleted while a download is under way (after its file was opened, before it is
    /// moved into place). Probe of 2026-11-27: that download failed ("the folder …/.avenues-lock
    /// cannot be used (open: No such file or directory). Choose another"): the lock file was opened
    /// again, the folder was not made again.
    @Test(arguments: [nil, 10_000_000])
    func aFolderDeletedDuringADownloadIsCreatedAgain(sizeLimit: Int?) async throws {
        let directory = folder.child("deleted-during")
        let deleted = Shared(false)
        let media = media(directory: directory, sizeLimit: sizeLimit, writeBytes: { descriptor, bytes, path in
            if !deleted.withLock({ done in defer { done = true }; return done }) {
                try? FileManager.default.removeItem(at: directory)
            }
            try FileSystem.writeAll(descriptor, [bytes], path: path)
        })
        _ = try await media.file(for: server.url("/bytes/1000"))  // makes the folder and its lock file
        deleted.withLock { $0 = false }
        let file = try await media.file(for: server.url("/bytes/2000"))
        #expect(deleted.withLock { $0 })
        #expect(try Data(contentsOf: file) == MediaServer.body(2_000))
        #expect(file.path.hasPrefix(directory.path))
    }

    @Test func aRequestNeverReturnsAFileThatAClearHadAlreadyDeleted() async throws {
        let media = media()
        let tick = Shared(0)
        var violations = 0
        for round in 0..<300 {
            let url = server.url("/bytes/\(1_000 + round % 7)")
            async let requested: (URL, Int)? = {
                guard let file = try? await media.file(for: url) else { return nil }
                return (file, tick.withLock { $0 += 1; return $0 })
            }()
            async let cleared: Int = {
                media.clear()
                return tick.withLock { $0 += 1; return $0 }
            }()
            let (request, clearDone) = await (requested, cleared)
            // A clear that finished before the request returned must not have deleted its file.
            if let (file, returnedAt) = request, clearDone < returnedAt, !FileManager.default.fileExists(atPath: file.path) {
                violations += 1
            }
        }
        #expect(violations == 0)
    }

    // MARK: Other traffic and loaded machines (items 2 and 6)

    @Test func manySmallDownloadsThroughOneSlotFinishWhileTheCPUIsBusy() async throws {
        // Before: under load, 2 of 3 fresh processes waited 60 s for a 4,000-byte body (URLError
        // timedOut) through one slot, while curl got it in 13 ms.
        let busy = Atomic<Bool>(true)
        for _ in 0..<2 {
            Thread.detachNewThread { while busy.load(ordering: .relaxed) { _ = (0..<1_000).reduce(0, &+) } }
        }
        defer { busy.store(false, ordering: .relaxed) }
        let media = media(maxConcurrentDownloads: 1)
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<60 {
                group.addTask {
                    let file = try await media.file(for: self.server.url("/bytes/\(4_000 + index)"))
                    #expect(try Data(contentsOf: file).count == 4_000 + index)
                }
            }
            try await group.waitForAll()
        }
        // Not a speed goal: a stall of the kind seen before takes 60 s, so anything near it is one.
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func twoHundredURLsFiveCallersEachWithRandomCancellationWhileOtherTrafficFlows() async throws {
        let media = media()
        func otherRequest() async throws -> Duration {
            let start = ContinuousClock.now
            let (data, _) = try await URLSession.shared.data(from: server.url("/bytes/100"))
            #expect(data.count == 100)
            return ContinuousClock.now - start
        }
        var idle: [Duration] = []
        for _ in 0..<20 { idle.append(try await otherRequest()) }
        let stressing = Shared(true)
        let other = Task {
            var during: [Duration] = []
            while stressing.value { during.append(try await otherRequest()) }
            return during
        }
        var rng = SplitMix64(seed: 0x5EED_0012)
        let plan = (0..<200).map { _ in (size: 20_000 + Int(rng.next() % 400_000), cancel: (0..<5).map { _ in rng.next() % 3 == 0 }) }
        await withTaskGroup(of: Void.self) { group in
            for (index, item) in plan.enumerated() {
                let url = server.url("/drip/\(item.size)?chunk=65536&pause_ms=1&n=\(index)")
                let callers = item.cancel.map { cancel in
                    Task { () -> Void in
                        if let file = try? await media.file(for: url) {
                            #expect(FileManager.default.fileExists(atPath: file.path))
                        }
                        _ = cancel
                    }
                }
                for (caller, cancel) in zip(callers, item.cancel) where cancel { caller.cancel() }
                group.addTask { for caller in callers { await caller.value } }
            }
        }
        stressing.withLock { $0 = false }
        let during = try await other.value
        await eventually("no temporary file is left") { self.files().temporary.isEmpty }
        #expect(media.downloaderIsIdle)
        // The other task is not stalled: the fault this guards against held every request 1.7–4.8 s.
        // The margin is not a speed goal (those are benchmarks): 100 ms failed once on two cores
        // while the rest of the suite ran in parallel (180 ms beside an idle 57 ms).
        func p90(_ values: [Duration]) -> Duration { values.sorted()[max(0, values.count * 9 / 10 - 1)] }
        #expect(!during.isEmpty)
        #expect(p90(during) <= p90(idle) + .milliseconds(750), "other traffic p90 \(p90(during)) vs idle \(p90(idle))")
    }

    @Test(arguments: MediaTransport.tested)
    func aBusyServerIsNotAskedAgainBeforeItsRetryAfter(transport: MediaTransport) async throws {
        let media = media(transport)
        let url = server.url("/busy/30")
        let busy = AsyncMediaError.unavailable(status: 503, url: url, retryAfter: .seconds(30))
        await #expect(throws: busy) { try await media.file(for: url) }
        // Answered without asking; a progress subscribed before it ends (no download will).
        let progress = media.progress(for: url)
        await #expect(throws: busy) { try await media.file(for: url) }
        var seen: [DownloadProgress] = []
        for await value in progress { seen.append(value) }
        #expect(seen.isEmpty)
        #expect(try await server.counts().requests["/busy/30"] == 1)
        #expect(busy.retryAfter == .seconds(30))
        #expect(Transfer.delay(retryAfter: "Wed, 21 Oct 2015 07:28:30 GMT", now: Date(timeIntervalSince1970: 1_445_412_480)) == .seconds(30))
    }
}
