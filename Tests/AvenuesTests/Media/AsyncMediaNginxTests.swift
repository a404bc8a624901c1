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
#endif

/// Resume and revalidation against nginx — a server nobody here wrote, with its own ranges and
/// ETags — cut by stopping it half way. Runs where nginx is on PATH (`.ci/run` installs it). The
/// cut nginx sends the first 600 KiB at once and then 4 KiB a second, so the cut comes before the
/// end however slowly the test runs; the nginx that answers the resumed request has no limit.
@Suite("AsyncMedia against nginx", .serialized, .timeLimit(.minutes(5)), .enabled(if: Nginx.executable != nil))
final class AsyncMediaNginxTests: Sendable {
    let folder = TemporaryFolder("media-nginx")
    static let size = 1 << 20

    /// Stops nginx once at least half of `url` has arrived (the server drops the connection), and
    /// returns the download's error.
    func cutAtHalf(_ media: AsyncMedia, _ url: URL, nginx: Nginx) async throws -> (any Error)? {
        let progress = media.progress(for: url)  // before the download starts, to see all of it
        let download = Task { () -> (any Error)? in
            do {
                _ = try await media.file(for: url)
                return nil
            } catch {
                return error
            }
        }
        for await step in progress where step.received >= Int64(Self.size / 2) {
            break
        }
        nginx.stop()
        return await download.value
    }

    @Test func aDownloadCutAtHalfResumesWithOnlyTheRest() async throws {
        let root = folder.child("root")
        let body = MediaServer.body(Self.size)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try body.write(to: root.appendingPathComponent("big.bin"))
        var nginx = try Nginx(root: root, work: folder.child("nginx"), slowAfterHalf: true)
        let media = AsyncMedia(directory: folder.child("media"), transport: CurlTransport.shared)
        let url = nginx.url("big.bin")
        let error = try await cutAtHalf(media, url, nginx: nginx)
        #expect(error != nil)
        #expect(media.cachedFile(for: url) == nil)

        nginx = try Nginx(root: root, work: folder.child("nginx"), port: nginx.port)
        let file = try await media.file(for: url)
        #expect(try Data(contentsOf: file) == body)
        let log = try nginx.log()
        // The second request was a range nginx answered with the rest only.
        #expect(log.last?.status == 206, "\(log)")
        // At least half had arrived when nginx stopped, so the rest is at most half.
        #expect((log.last?.bytes ?? .max) <= Self.size / 2, "\(log)")
        nginx.stop()
    }

    @Test func aFileChangedSinceTheCutStartsOver() async throws {
        let root = folder.child("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let path = root.appendingPathComponent("big.bin")
        try MediaServer.body(Self.size).write(to: path)
        var nginx = try Nginx(root: root, work: folder.child("nginx"), slowAfterHalf: true)
        let media = AsyncMedia(directory: folder.child("media"), transport: CurlTransport.shared)
        let url = nginx.url("big.bin")
        _ = try await cutAtHalf(media, url, nginx: nginx)

        // New bytes and a new modification time: nginx's ETag and Last-Modified change.
        let changed = Data(MediaServer.body(Self.size).reversed())
        try changed.write(to: path)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: path.path)
        nginx = try Nginx(root: root, work: folder.child("nginx"), port: nginx.port)
        let file = try await media.file(for: url)
        #expect(try Data(contentsOf: file) == changed)
        let log = try nginx.log()
        #expect(log.last?.status == 200 && log.last?.bytes == Self.size, "\(log)")
        nginx.stop()
    }

    @Test func anExpiredFileIsRevalidatedAndNginxSendsNoBody() async throws {
        let root = folder.child("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try MediaServer.body(50_000).write(to: root.appendingPathComponent("small.bin"))
        let nginx = try Nginx(root: root, work: folder.child("nginx"))
        let media = AsyncMedia(directory: folder.child("media"), timeToLive: .zero, transport: CurlTransport.shared)
        let url = nginx.url("small.bin")
        _ = try await media.file(for: url)
        let file = try await media.file(for: url)
        #expect(try Data(contentsOf: file) == MediaServer.body(50_000))
        let log = try nginx.log()
        #expect(log.map(\.status) == [200, 304] && log.last?.bytes == 0, "\(log)")
        nginx.stop()
    }
}

/// nginx in the foreground on a port of 127.0.0.1, serving a folder; its access log records each
/// request's status and body bytes.
struct Nginx: Sendable {
    /// nginx's path, if it is on PATH.
    static let executable: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin")
        .split(separator: ":").map { "\($0)/nginx" }.first { FileManager.default.isExecutableFile(atPath: $0) }

    let port: Int
    let work: URL
    private let process: Process

    init(root: URL, work: URL, port: Int? = nil, slowAfterHalf: Bool = false) throws {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let port = try port ?? Self.freePort()
        let path = work.path
        let config = """
            daemon off; master_process off; worker_processes 1;
            pid \(path)/nginx.pid; error_log \(path)/error.log;
            events { worker_connections 64; }
            http {
                log_format counted '$status $body_bytes_sent';
                access_log \(path)/access.log counted;
                client_body_temp_path \(path)/body; proxy_temp_path \(path)/proxy; fastcgi_temp_path \(path)/fastcgi;
                uwsgi_temp_path \(path)/uwsgi; scgi_temp_path \(path)/scgi;
                default_type application/octet-stream;
                server { listen 127.0.0.1:\(port); root \(root.path); \(slowAfterHalf ? "limit_rate_after 600k; limit_rate 4k;" : "") }
            }
            """
        try Data(config.utf8).write(to: work.appendingPathComponent("nginx.conf"))
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable ?? "nginx")
        process.arguments = ["-c", work.appendingPathComponent("nginx.conf").path, "-p", path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.port = port
        self.work = work
        // Ready once it accepts a connection (a bounded wait for another process to start).
        for _ in 0 ..< 500 where !Self.accepts(port) {
            guard process.isRunning else { throw CocoaError(.executableLoad) }
            usleep(10_000)
        }
    }

    func url(_ name: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)/\(name)")!
    }

    /// Every request so far: its status and the body bytes nginx sent.
    func log() throws -> [(status: Int, bytes: Int)] {
        let text = try String(contentsOf: work.appendingPathComponent("access.log"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 2, let status = Int(fields[0]), let bytes = Int(fields[1]) else { return nil }
            return (status, bytes)
        }
    }

    /// Stops nginx (its connections are dropped) and waits for it to exit. SIGKILL: a child of a
    /// process whose threads block SIGTERM inherits that mask, and nginx never sees the TERM.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
