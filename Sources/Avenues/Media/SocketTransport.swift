import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
#error("Unsupported platform")
#endif

/// Plain `http://` downloads over a POSIX socket, one connection and one thread per transfer.
///
/// Why not URLSession: on Linux, Foundation's URLSession replaces a timeout timer through libdispatch's
/// single, process-wide manager queue after every 16 KB it receives, so one fast download stalls every
/// other URLSession request in the process for as long as it runs (a 100-byte request to another
/// server waited 1.3–4.8 s during a 1 GiB download; a raw socket in the same process, 1–11 ms). It
/// also offers no way to pause receiving, so bounding memory meant blocking its thread. Here the
/// thread that reads the socket writes the file: the network goes exactly as fast as the disk, with
/// nothing queued, and nothing is shared with other downloads or sessions.
///
/// HTTP/1.1 with `Connection: close`, `Accept-Encoding: identity` (so the bytes on the wire are the
/// file), up to 5 redirects to `http` URLs, bodies framed by length, by chunks or by the end of the
/// connection. What this does not do — `https`, a proxy from the environment, a body the server
/// encoded anyway — it hands back as ``Handover`` and ``AsyncMedia`` uses URLSession instead.
enum SocketTransport {
    /// Why this transport gave a download back to URLSession.
    struct Handover: Error {
        let url: URL
    }

    static let maximumRedirects = 5

    /// Whether this transport can start `url`: plain `http`, with no proxy configured for its host.
    static func handles(_ url: URL) -> Bool {
        guard url.scheme == "http", let host = url.host, !host.isEmpty else { return false }
        return !proxyConfigured(for: host)
    }

    /// Starts `url` into `transfer` on a thread of its own and returns at once; the transfer learns
    /// the outcome. When URLSession must take over (an `https` redirect, an encoded body), `handOver`
    /// is called on that thread with the URL to fetch, before any byte was written.
    static func start(_ url: URL, headers: [(String, String)], transfer: Transfer, handOver: @escaping @Sendable (URL) -> Void) {
        let thread = Thread {
            do {
                try fetch(url, headers: headers, transfer: transfer, redirects: 0)
            } catch let handover as Handover {
                handOver(handover.url)
            } catch {
                transfer.end(error)
            }
        }
        thread.name = "avenues.media.http"
        thread.start()
    }

    // MARK: One request

    private static func fetch(_ url: URL, headers: [(String, String)], transfer: Transfer, redirects: Int) throws {
        guard let host = url.host else { throw Handover(url: url) }
        let port = url.port ?? 80
        let socket: Socket
        do {
            socket = try Socket.connect(host: host, port: port, timeout: transfer.limits.idleTimeout)
        } catch {
            transfer.end(error)
            return
        }
        transfer.onStop { socket.shutdown() }
        defer { socket.close() }

        do {
            try socket.send(Array(request(for: url, host: host, port: port, headers: headers).utf8))
            var buffer = [UInt8](repeating: 0, count: 256 * 1024)
            var pending: [UInt8] = []
            // The head: read until the empty line.
            var headEnd: Int?
            while headEnd == nil {
                let count = try socket.receive(into: &buffer)
                guard count > 0 else { throw URLError(.networkConnectionLost, userInfo: [NSURLErrorFailingURLErrorKey: url]) }
                pending += buffer[0..<count]
                headEnd = pending.withUnsafeBytes { HTTPHead.end(in: $0) }
                if headEnd == nil, pending.count > HTTPHead.maximumSize { throw malformed(url, "a response head over 64 KiB") }
            }
            guard let headEnd else { return }
            let head: HTTPHead
            let framing: HTTPHead.BodyFraming
            do {
                head = try pending.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws(HTTPHead.Failure) -> HTTPHead in
                    try HTTPHead(parsing: UnsafeRawBufferPointer(rebasing: bytes[0..<headEnd]))
                }
                framing = try head.bodyFraming()
            } catch {
                throw malformed(url, "\(error)")
            }
            pending.removeFirst(headEnd)

            if (300..<400).contains(head.status), head.status != 304, let location = head.value("location") {
                guard redirects < maximumRedirects, let next = URL(string: location, relativeTo: url)?.absoluteURL,
                      let scheme = next.scheme?.lowercased(), scheme == "http" || scheme == "https"
                else { throw AsyncMediaError.httpStatus(head.status, url: url) }
                socket.close()
                guard scheme == "http", handles(next) else { throw Handover(url: next) }
                try fetch(next, headers: headers, transfer: transfer, redirects: redirects + 1)
                return
            }
            if let coding = head.value("content-encoding")?.lowercased(), coding != "identity", (200..<300).contains(head.status) {
                throw Handover(url: url)  // the server encoded the body although asked not to
            }
            let length: Int64? = if case .length(let length) = framing { length } else { nil }
            guard transfer.head(status: head.status, contentLength: length, encoded: false, retryAfter: head.value("retry-after")) else {
                transfer.end(nil)
                return
            }
            try readBody(framing, from: socket, first: pending, buffer: &buffer, into: transfer, url: url)
            transfer.end(nil)
        } catch let handover as Handover {
            throw handover
        } catch {
            transfer.end(error)
        }
    }

    /// Reads the body as `framing` says, handing it to `transfer` as it arrives.
    private static func readBody(
        _ framing: HTTPHead.BodyFraming, from socket: Socket, first: [UInt8], buffer: inout [UInt8], into transfer: Transfer, url: URL
    ) throws {
        switch framing {
        case .none:
            return
        case .length(let length):
            var remaining = length
            func take(_ bytes: UnsafeRawBufferPointer) throws {
                let used = Int(min(Int64(bytes.count), remaining))
                guard used > 0 else { return }
                guard transfer.body(UnsafeRawBufferPointer(rebasing: bytes[0..<used])) else { throw CancellationError() }
                remaining -= Int64(used)
            }
            try first.withUnsafeBytes(take)
            while remaining > 0 {
                let count = try socket.receive(into: &buffer)
                guard count > 0 else { return }  // cut short: the length check reports it
                try buffer.withUnsafeBytes { try take(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            }
        case .untilClose:
            // HTTP/1.0 style: a body cut short cannot be told from a whole one (documented).
            if !first.isEmpty { guard first.withUnsafeBytes(transfer.body) else { return } }
            while true {
                let count = try socket.receive(into: &buffer)
                guard count > 0 else { return }
                guard buffer.withUnsafeBytes({ transfer.body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) else { return }
            }
        case .chunked:
            var decoder = ChunkedBody()
            func feed(_ bytes: UnsafeRawBufferPointer) throws {
                do {
                    _ = try decoder.consume(bytes) { piece in
                        guard transfer.body(piece) else { throw CancellationError() }
                    }
                } catch let failure as ChunkedBody.Failure {
                    throw malformed(url, "\(failure)")
                }
            }
            try first.withUnsafeBytes(feed)
            while !decoder.isComplete {
                let count = try socket.receive(into: &buffer)
                guard count > 0 else {
                    throw URLError(.networkConnectionLost, userInfo: [NSURLErrorFailingURLErrorKey: url])
                }
                try buffer.withUnsafeBytes { try feed(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            }
        }
    }

    private static func malformed(_ url: URL, _ reason: String) -> AsyncMediaError {
        .malformedResponse(url, reason: reason)
    }

    /// The request head. Header values with line breaks are dropped (they could inject headers).
    static func request(for url: URL, host: String, port: Int, headers: [(String, String)]) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        let hostField = (host.contains(":") ? "[\(host)]" : host) + (port == 80 ? "" : ":\(port)")
        var lines = [
            "GET \(target) HTTP/1.1", "Host: \(hostField)", "User-Agent: Avenues-AsyncMedia",
            "Accept: */*", "Accept-Encoding: identity", "Connection: close",
        ]
        let reserved: Set<String> = ["host", "connection", "accept-encoding", "content-length", "transfer-encoding", "range"]
        for (name, value) in headers where !reserved.contains(name.lowercased()) {
            // Bytes, not Characters: "\r\n" is one Character, equal to neither "\r" nor "\n".
            guard !name.isEmpty, name.utf8.allSatisfy(HTTPHead.isTokenByte),
                  !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else { continue }
            lines.append("\(name): \(value)")
        }
        return lines.joined(separator: "\r\n") + "\r\n\r\n"
    }

    /// Whether the environment configures a proxy that libcurl (URLSession) would use for `host`.
    static func proxyConfigured(for host: String) -> Bool {
        let environment = ProcessInfo.processInfo.environment
        guard let proxy = environment["http_proxy"] ?? environment["HTTP_PROXY"] ?? environment["all_proxy"] ?? environment["ALL_PROXY"],
              !proxy.isEmpty
        else { return false }
        let exceptions = (environment["no_proxy"] ?? environment["NO_PROXY"] ?? "").split(separator: ",").map { $0.trimmingSpaces().lowercased() }
        let name = host.lowercased()
        return !exceptions.contains { exception in
            exception == "*" || name == exception || name.hasSuffix(exception.hasPrefix(".") ? exception : "." + exception)
        }
    }
}

/// A connected TCP socket that another thread may shut down (to stop a blocked receive) while the
/// owner uses it; closing is the owner's.
final class Socket: Sendable {
    private let state: Locked<Int32>

    private init(_ descriptor: Int32) {
        state = Locked(descriptor)
    }

    /// Connects to `host`:`port`, trying each address, waiting at most `timeout` for each.
    static func connect(host: String, port: Int, timeout: Duration) throws -> Socket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Darwin)
        hints.ai_socktype = SOCK_STREAM
        #else
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(bareHost, String(port), &hints, &list) == 0, let first = list else {
            throw URLError(.cannotFindHost)
        }
        defer { freeaddrinfo(list) }
        var lastError = URLError(.cannotConnectToHost)
        var address: UnsafeMutablePointer<addrinfo>? = first
        while let info = address {
            address = info.pointee.ai_next
            let descriptor = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard descriptor >= 0 else { continue }
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            #if canImport(Darwin)
            var on: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
            #endif
            if connectWaiting(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen, timeout: timeout) {
                return Socket(descriptor)
            }
            lastError = URLError(errno == ETIMEDOUT ? .timedOut : .cannotConnectToHost)
            posixClose(descriptor)
        }
        throw lastError
    }

    /// `connect(2)` without blocking longer than `timeout`.
    private static func connectWaiting(_ descriptor: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t, timeout: Duration) -> Bool {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(descriptor, F_SETFL, flags) }
        if posixConnect(descriptor, address, length) == 0 { return true }
        guard errno == EINPROGRESS else { return false }
        var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        let milliseconds = Int32(clamping: Saturating.milliseconds(timeout))
        let ready = poll(&poller, 1, milliseconds)
        guard ready > 0 else {
            errno = ready == 0 ? ETIMEDOUT : errno
            return false
        }
        var failure: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &size)
        errno = failure
        return failure == 0
    }

    /// Sends all of `bytes`.
    func send(_ bytes: [UInt8]) throws {
        let descriptor = state.withLock { $0 }
        var sent = 0
        while sent < bytes.count {
            #if canImport(Darwin)
            let flags: Int32 = 0
            #else
            let flags = Int32(MSG_NOSIGNAL)  // a closed peer is an error, not a SIGPIPE
            #endif
            let count = bytes.withUnsafeBytes { posixSend(descriptor, $0.baseAddress.map { $0 + sent }, bytes.count - sent, flags) }
            if count < 0 {
                if errno == EINTR { continue }
                throw URLError(.networkConnectionLost)
            }
            sent += count
        }
    }

    /// Receives into `buffer`; returns the count, 0 at the end of the stream (or after `shutdown`).
    func receive(into buffer: inout [UInt8]) throws -> Int {
        let descriptor = state.withLock { $0 }
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw URLError(errno == ECONNRESET ? .networkConnectionLost : .cannotLoadFromNetwork)
        }
    }

    /// Stops the connection from any thread: a blocked receive returns at once.
    func shutdown() {
        state.withLock { descriptor in
            if descriptor >= 0 { _ = posixShutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    /// Closes the socket (the owner, once).
    func close() {
        let descriptor = state.withLock { descriptor -> Int32 in
            defer { descriptor = -1 }
            return descriptor
        }
        if descriptor >= 0 { posixClose(descriptor) }
    }
}

// Module-level names, so the methods above can be called `send`, `shutdown` and `close`.
private func posixClose(_ descriptor: Int32) { _ = close(descriptor) }
private func posixSend(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int { send(descriptor, bytes, count, flags) }
private func posixShutdown(_ descriptor: Int32, _ how: Int32) -> Int32 { shutdown(descriptor, how) }
private func posixConnect(_ descriptor: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 { connect(descriptor, address, length) }
