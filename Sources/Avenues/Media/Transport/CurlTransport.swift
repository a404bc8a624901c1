import CAvenuesNetwork
import Foundation
import Synchronization

/// Downloads through libcurl — the client FoundationNetworking itself is built on — driven through
/// its multi interface from threads of ours (``defaultThreads``: two where there are two cores).
/// ``AsyncMedia``'s default transport on Linux.
///
/// libcurl is loaded at run time (`libcurl.so.4`, present wherever `FoundationNetworking` works),
/// so the library builds without its headers and links against nothing. It brings TLS with the
/// system's CA store, HTTP/2, proxies from `http_proxy`/`https_proxy`/`no_proxy`/`all_proxy`, and
/// connection reuse: requests to one host share kept-alive connections (HTTP/1.1) or one
/// multiplexed connection (HTTP/2) per thread.
///
/// What it avoids of URLSession on Linux: nothing here is shared with URLSession's process-wide
/// queues, so a fast download stalls no other traffic; bodies are written by AsyncMedia's sink on
/// its thread as they arrive (so a full disk is an error, never a trap, and memory stays bounded);
/// no thread blocks in `getaddrinfo` or `connect` per download; a cancel returns at once.
///
/// Bodies are handed over still in their content codings: AsyncMedia decodes them and checks that
/// each compressed stream is whole (libcurl 7.88 takes a `gzip` body cut in half for a whole one).
/// The CA file is `SSL_CERT_FILE` from the environment unless one is given. One that is not a
/// regular file when the transport is made (a FIFO, a device) fails every https download at once,
/// as TLS would open it on a transport thread, where a FIFO without a writer stalls every transfer
/// of that thread.
///
/// A process may call `exit()` while downloads run: before the libraries are torn down (OpenSSL's
/// clean-up, destructors), this transport's threads stop at their next step and sleep, and `exit()`
/// waits for that (a second at most), so the process exits instead of crashing in libcurl.
public final class CurlTransport: DownloadTransport {
    /// libcurl could not be loaded; the reason says why.
    public struct Unavailable: Error, CustomStringConvertible, Sendable {
        /// Why.
        public let reason: String
        /// What happened and what to do.
        public var description: String {
            "libcurl could not be loaded (\(reason)); install libcurl (Debian: libcurl4) or give AsyncMedia another transport."
        }
    }

    /// The transport every ``AsyncMedia`` uses by default on Linux, or `nil` if libcurl cannot be
    /// loaded. Its CA file is `SSL_CERT_FILE`'s, if set.
    public static let shared: CurlTransport? = try? CurlTransport()

    /// Why libcurl cannot be loaded (what a download without a transport fails with).
    static var loadError: Unavailable {
        Unavailable(reason: avenues_curl_load() == 0 ? "no multi handle" : String(cString: avenues_curl_load_error()))
    }

    /// libcurl's version text (`libcurl/7.88.1 OpenSSL/3.0.19 zlib/1.2.13 … nghttp2/1.52.0`), or
    /// `nil` if it cannot be loaded.
    public static var version: String? {
        avenues_curl_load() == 0 ? String(cString: avenues_curl_version()) : nil
    }

    /// libcurl delivers bodies as they were sent; AsyncMedia decodes them.
    public var decodesContentCodings: Bool { false }

    /// The file of CA certificates TLS trusts, or `nil` for the system's.
    public let caFile: String?
    /// Why ``caFile`` cannot be read by TLS, if it is not a regular file: https requests fail with it.
    private let caFileProblem: String?

    private let engines: [Engine]

    /// The threads that drive libcurl: ``init(caFile:)`` starts this many (two on a machine with two
    /// cores or more). One thread spent all its time on a burst of small files (2,000 over loopback)
    /// while the pool waited for it; two ended it 8–20 % sooner (`keepalive-bench.py`), and small
    /// requests made during a 1 GiB download waited a median 0.2 ms instead of 11 (the other thread
    /// takes them).
    public static var defaultThreads: Int { min(2, max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    /// How many threads drive libcurl, each with its own connections.
    public var threads: Int { engines.count }

    /// A transport with threads and connection pools of its own: ``defaultThreads`` of them.
    ///
    /// - Parameter caFile: a PEM file of the certificates to trust instead of the system's (a test
    ///   CA, a company's); `SSL_CERT_FILE` from the environment by default.
    /// - Throws: ``Unavailable`` if libcurl cannot be loaded.
    public convenience init(caFile: String? = ProcessInfo.processInfo.environment["SSL_CERT_FILE"]) throws(Unavailable) {
        try self.init(caFile: caFile, threads: Self.defaultThreads)
    }

    /// A transport with `threads` threads (1 to 16; other values are clamped), each driving its own
    /// libcurl multi handle with its own connections. A request goes to the thread with the fewest
    /// requests in hand, so the requests to one host may use up to `threads` connection pools.
    ///
    /// - Parameters:
    ///   - caFile: a PEM file of the certificates to trust instead of the system's.
    ///   - threads: how many threads; one keeps every request to a host on one connection pool
    ///     (one multiplexed connection for HTTP/2).
    /// - Throws: ``Unavailable`` if libcurl cannot be loaded.
    public init(caFile: String?, threads: Int) throws(Unavailable) {
        guard avenues_curl_load() == 0 else {
            throw Unavailable(reason: String(cString: avenues_curl_load_error()))
        }
        var multis: [UnsafeMutableRawPointer] = []
        for _ in 0 ..< min(max(threads, 1), 16) {
            guard let multi = avenues_curl_multi_init() else {
                for made in multis { avenues_curl_multi_cleanup(made) }
                throw Unavailable(reason: "no multi handle")
            }
            multis.append(multi)
        }
        engines = multis.map(Engine.init(multi:))
        self.caFile = caFile.flatMap { $0.isEmpty ? nil : $0 }
        caFileProblem = self.caFile.flatMap(Self.problem(ofCAFile:))
        for (number, engine) in engines.enumerated() {
            let thread = Thread { engine.run() }
            thread.name = engines.count == 1 ? "avenues.curl" : "avenues.curl.\(number + 1)"
            thread.start()
        }
    }

    deinit {
        for engine in engines { engine.submit(.shutDown) }
    }

    /// Why `path` cannot be the CA file: it exists and is not a regular file. TLS opens it on the
    /// transport's thread, where a FIFO without a writer blocked every transfer for ever (http
    /// ones too) and a pipe is read once at most. A missing or unreadable file is libcurl's to
    /// report (`error setting certificate file`).
    static func problem(ofCAFile path: String) -> String? {
        guard let info = try? FileSystem.status(path), !info.isRegularFile else { return nil }
        return "the CA file \(path.debugDescription) is not a regular file (a pipe or a device, which TLS cannot read); give a PEM file of CA certificates"
    }

    /// Starts `request` on this transport's thread; its head and body go to `sink`.
    public func start(_ request: DownloadRequest, into sink: any DownloadSink) -> DownloadHandle {
        // Looked at only when there is a problem: this runs once per request.
        let refusal = caFileProblem.flatMap { request.url.scheme?.lowercased() == "https" ? $0 : nil }
        let transfer = CurlTransfer(request: request, sink: sink, caFile: caFile, refusal: refusal)
        // The thread with the fewest requests in hand (the first of those tied). Read without a
        // lock: two requests started at once may both pick one thread, which only evens out later.
        var engine = engines[0]
        var least = engine.load.load(ordering: .relaxed)
        for other in engines.dropFirst() where least > 0 {
            let load = other.load.load(ordering: .relaxed)
            if load < least { (engine, least) = (other, load) }
        }
        engine.load.add(1, ordering: .relaxed)
        engine.started.add(1, ordering: .relaxed)
        engine.submit(.add(transfer))
        // Named by its serial number, not held: a weak reference gave every transfer a side table
        // (an allocation, and every later retain of it on the slow path), and a strong one would
        // make a cycle with a sink that keeps its handle. A cancel after the end finds no transfer
        // of that number active.
        let serial = transfer.serial
        return DownloadHandle { [weak engine] in
            engine?.submit(.cancel(serial))
        }
    }

    /// libcurl's message for a failed transfer, said plainly when the system refused a socket or a
    /// file for want of descriptors: libcurl says "Couldn't connect to server", which sends people
    /// to the server.
    static func failureDetail(_ message: String, systemError: Int) -> String {
        switch Int32(truncatingIfNeeded: systemError) {
        case EMFILE:
            return "too many open files: this process has as many open as its limit allows (ulimit -n); lower maxConcurrentDownloads (each download holds up to two files and a connection) or raise the limit — \(message)"
        case ENFILE:
            return "too many open files in the system; close some or raise the system's limit — \(message)"
        default:
            return message
        }
    }

    /// The proxy libcurl takes for `url` from `environment`, as it does (curl 7.88): `http_proxy`
    /// (lower case only) or `https_proxy`/`HTTPS_PROXY` by scheme, else `all_proxy`/`ALL_PROXY`;
    /// none when `no_proxy`/`NO_PROXY` is `*` or names the host or a domain above it. The variable's
    /// name and the proxy's host and port, never its user or password.
    static func proxy(for url: URL, environment: [String: String]) -> (variable: String, host: String, address: String)? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let names = (scheme == "https" ? ["https_proxy", "HTTPS_PROXY"] : scheme == "http" ? ["http_proxy"] : []) + ["all_proxy", "ALL_PROXY"]
        guard let variable = names.first(where: { !(environment[$0] ?? "").isEmpty }), let value = environment[variable] else { return nil }
        let exceptions = (environment["no_proxy"] ?? environment["NO_PROXY"] ?? "").split(separator: ",")
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        for exception in exceptions.map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) where !exception.isEmpty {
            if exception == "*" { return nil }
            let domain = exception.hasPrefix(".") ? String(exception.dropFirst()) : exception
            if bare == domain || bare.hasSuffix("." + domain) { return nil }
        }
        // A proxy given without a scheme is an http one to libcurl.
        let parsed = URL(string: value.contains("://") ? value : "http://" + value)
        guard let proxyHost = parsed?.host, !proxyHost.isEmpty else { return (variable, "", "(unreadable)") }
        let shown = proxyHost.contains(":") ? "[\(proxyHost)]" : proxyHost
        return (variable, proxyHost, parsed?.port.map { "\(shown):\($0)" } ?? shown)
    }

    /// `message` of a connection that failed, saying that it was the proxy's when libcurl's text
    /// names the proxy's host: "Failed to connect to 127.0.0.1 port 1" does not say it is a proxy.
    static func namingTheProxy(_ message: String, for url: URL, environment: [String: String]) -> String {
        guard let (variable, host, address) = proxy(for: url, environment: environment),
              !host.isEmpty, message.contains(host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
        else { return message }
        return "\(message) (the proxy \(address) from \(variable); check that it runs, or unset \(variable))"
    }

    /// Connections libcurl opened since the transport started (kept-alive ones are opened once).
    var connectionsOpened: Int { engines.reduce(0) { $0 + $1.connectionsOpened.withLock { $0 } } }
    /// Easy handles made since the transport started (one ending well serves the next request).
    var handlesMade: Int { engines.reduce(0) { $0 + $1.handlesMade.withLock { $0 } } }
    /// Requests started on each thread so far.
    var requestsPerThread: [Int] { engines.map { $0.started.load(ordering: .relaxed) } }
}

/// What a curl thread is asked to do.
private enum Command: Sendable {
    case add(CurlTransfer)
    /// The transfer of this ``CurlTransfer/serial``, if it is still active.
    case cancel(UInt64)
    case shutDown
}

/// One curl thread's state: its multi handle and the transfers on it.
// Safe: `multi`, `active` and every easy handle are used only by the curl thread (`run`); other
// threads only append to `inbox` (locked), signal `idle`, and call curl_multi_wakeup, which libcurl
// documents as safe to call from any thread.
private final class Engine: @unchecked Sendable {
    let multi: UnsafeMutableRawPointer
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Easy handles of transfers that ended well, configured for this transport, for the next
    /// requests: making and setting up a handle per request was 8 % of this thread's time in a
    /// burst of small files. At most ``idleHandlesKept``.
    private var idleHandles: [UnsafeMutableRawPointer] = []
    static let idleHandlesKept = 16
    /// Commands for the thread; whether it sleeps (`idle`: nothing to watch) or waits in
    /// `curl_multi_poll` (`polling`): only then does a command need to wake it. (A wakeup per
    /// request was a system call on each side and, in a burst, filled libcurl's wakeup pipe.)
    private let inbox = Locked<(commands: [Command], idle: Bool, polling: Bool)>(([], false, false))
    private let idle = DispatchSemaphore(value: 0)
    let connectionsOpened = Locked(0)
    /// Requests given to this engine whose sinks it has not ended: how ``CurlTransport`` picks one.
    let load = Atomic<Int>(0)
    /// Requests given to this engine so far.
    let started = Atomic<Int>(0)
    let handlesMade = Locked(0)

    init(multi: UnsafeMutableRawPointer) {
        self.multi = multi
        _ = avenues_curl_multi_setopt_long(multi, CurlOption.maxConnects, 64)
    }

    func submit(_ command: Command) {
        let (wasIdle, polling) = inbox.withLock { inbox -> (Bool, Bool) in
            inbox.commands.append(command)
            defer { inbox.idle = false }
            return (inbox.idle, inbox.polling)
        }
        if wasIdle {
            idle.signal()
        } else if polling {
            _ = avenues_curl_multi_wakeup(multi)
        }  // else the thread is running and reads the inbox before it polls again
    }

    func run() {
        // Between steps the thread passes the exit gate: once the process calls exit(), it sleeps
        // there instead of running libcurl under the libraries' clean-up (network.c).
        avenues_curl_thread_enter()
        defer { avenues_curl_thread_leave() }
        // Swapped with the inbox's list, and emptied keeping its room: the two lists take turns,
        // and a command submitted costs no allocation.
        var commands: [Command] = []
        while true {
            avenues_curl_thread_checkpoint()
            commands.removeAll(keepingCapacity: true)
            inbox.withLock { inbox in swap(&inbox.commands, &commands) }
            for command in commands {
                switch command {
                case .add(let transfer): add(transfer)
                case .cancel(let serial):
                    // A linear search: cancels are rare, and a thread has a few dozen transfers at most.
                    if let transfer = active.values.first(where: { $0.serial == serial }) { remove(transfer, result: nil, cancelled: true) }
                case .shutDown:
                    for transfer in Array(active.values) { remove(transfer, result: nil, cancelled: true) }
                    for easy in idleHandles { avenues_curl_easy_cleanup(easy) }
                    idleHandles = []
                    avenues_curl_multi_cleanup(multi)
                    return
                }
            }
            var running: Int32 = 0
            _ = avenues_curl_multi_perform(multi, &running)
            var easy: UnsafeMutableRawPointer?
            var result: Int32 = 0
            while avenues_curl_multi_next_done(multi, &easy, &result) == 1 {
                if let easy, let transfer = active[easy] { remove(transfer, result: result, cancelled: false) }
            }
            if active.isEmpty {
                // Nothing to watch: sleep until a command comes.
                let wait = inbox.withLock { inbox -> Bool in
                    guard inbox.commands.isEmpty else { return false }
                    inbox.idle = true
                    return true
                }
                if wait {
                    avenues_curl_thread_leave()  // asleep outside libcurl: exit need not wait
                    idle.wait()
                    avenues_curl_thread_enter()
                }
            } else {
                // Marked under the lock that `submit` appends under: a command that came meanwhile
                // is taken first; one that comes after finds `polling` and wakes the poll.
                let poll = inbox.withLock { inbox -> Bool in
                    guard inbox.commands.isEmpty else { return false }
                    inbox.polling = true
                    return true
                }
                if poll {
                    var descriptors: Int32 = 0
                    _ = avenues_curl_multi_poll(multi, 1_000, &descriptors)
                    inbox.withLock { $0.polling = false }
                }
            }
        }
    }

    private func add(_ transfer: CurlTransfer) {
        if let refusal = transfer.refusal {
            load.subtract(1, ordering: .relaxed)
            transfer.sink.end(URLError(.secureConnectionFailed, userInfo: [NSURLErrorFailingURLErrorKey: transfer.request.url, NSLocalizedDescriptionKey: refusal]))
            return
        }
        let idle = idleHandles.popLast()
        if idle == nil { handlesMade.withLock { $0 += 1 } }
        guard let easy = transfer.configure(reusing: idle) else {
            load.subtract(1, ordering: .relaxed)
            transfer.sink.end(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "libcurl could not make a request handle"]))
            return
        }
        guard avenues_curl_multi_add_handle(multi, easy) == 0 else {
            transfer.cleanUp()
            load.subtract(1, ordering: .relaxed)
            transfer.sink.end(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "libcurl refused a request"]))
            return
        }
        active[easy] = transfer
    }

    /// Takes `transfer` off the multi handle and ends its sink: with `result` (libcurl's code), or
    /// as cancelled.
    private func remove(_ transfer: CurlTransfer, result: Int32?, cancelled: Bool) {
        guard let easy = transfer.easy, active.removeValue(forKey: easy) != nil else { return }
        var connects = 0
        _ = avenues_curl_easy_getinfo_long(easy, CurlInfo.numConnects, &connects)
        connectionsOpened.withLock { $0 += connects }
        _ = avenues_curl_multi_remove_handle(multi, easy)
        let outcome: (any Error)? = cancelled ? CancellationError() : transfer.outcome(result ?? 0)
        // Only a handle whose transfer ended well is used again (one cut short or refused is not
        // worth reasoning about); it keeps no pointer into the transfer.
        if let idle = transfer.cleanUp(keepingHandle: !cancelled && result == 0 && idleHandles.count < Self.idleHandlesKept) {
            idleHandles.append(idle)
        }
        load.subtract(1, ordering: .relaxed)
        transfer.sink.end(outcome)
    }
}

/// One request on the curl thread: its easy handle, header list and head parser.
// Safe: created on the caller's thread and handed to the curl thread through the engine's locked
// inbox; from then on only the curl thread (and libcurl's callbacks on it) touch it.
private final class CurlTransfer: @unchecked Sendable {
    let request: DownloadRequest
    let sink: any DownloadSink
    let caFile: String?
    /// Why this request fails before libcurl sees it, if it does.
    let refusal: String?
    private(set) var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutableRawPointer?
    /// libcurl writes its detailed message here (CURL_ERROR_SIZE); it must not move, so it is
    /// allocated, not an array.
    private let errorBuffer: UnsafeMutablePointer<CChar> = {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: 256)
        buffer.initialize(repeating: 0, count: 256)
        return buffer
    }()
    private var parser = HeaderBlockParser()
    private var headDelivered = false
    /// The sink asked to stop: its decision stands, whatever libcurl reports.
    private var stoppedBySink = false
    /// The response could not be read (a head too large, a folded line…).
    private var failure: (any Error)?

    /// Names the transfer for a cancel; never reused in the process (an address could be).
    let serial: UInt64
    private static let serials = Atomic<UInt64>(0)

    init(request: DownloadRequest, sink: any DownloadSink, caFile: String?, refusal: String?) {
        serial = Self.serials.add(1, ordering: .relaxed).newValue
        self.request = request
        self.sink = sink
        self.caFile = caFile
        self.refusal = refusal
    }

    deinit {
        cleanUp()
        errorBuffer.deallocate()
    }

    /// Configures an easy handle for this request: `idle` (one of this transport's, whose settings
    /// common to every request are made) or a new one. `nil` if libcurl could not make one.
    func configure(reusing idle: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
        guard let easy = idle ?? avenues_curl_easy_init() else { return nil }
        self.easy = easy
        if idle == nil { configureCommon(easy) }
        let context = Unmanaged.passUnretained(self).toOpaque()
        setString(CurlOption.url, request.url.absoluteString)
        _ = avenues_curl_easy_setopt_long(easy, CurlOption.connectTimeoutMilliseconds, Int(clamping: min(Saturating.milliseconds(request.limits.idleTimeout), Int64(Int32.max))))
        for field in request.headers {
            // A name or value with a line break or NUL could inject a header: such a field is dropped.
            guard !field.name.isEmpty, field.name.utf8.allSatisfy(HeaderBlockParser.isTokenByte),
                  !field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else { continue }
            headerList = avenues_curl_slist_append(headerList, "\(field.name): \(field.value)")
        }
        // Set whether or not there is one: a handle used before may still point to its last list.
        _ = avenues_curl_easy_setopt_pointer(easy, CurlOption.httpHeader, headerList)
        _ = avenues_curl_easy_setopt_pointer(easy, CurlOption.errorBuffer, errorBuffer)
        _ = avenues_curl_easy_setopt_pointer(easy, CurlOption.headerData, context)
        _ = avenues_curl_easy_setopt_pointer(easy, CurlOption.writeData, context)
        return easy
    }

    /// The settings every request of this transport shares, made once per easy handle.
    private func configureCommon(_ easy: UnsafeMutableRawPointer) {
        if avenues_curl_easy_setopt_pointer(easy, CurlOption.protocolsString, "http,https") != 0 {
            _ = avenues_curl_easy_setopt_long(easy, CurlOption.protocols, 3)  // before 7.85: CURLPROTO_HTTP | CURLPROTO_HTTPS
        }
        _ = avenues_curl_easy_setopt_long(easy, CurlOption.noSignal, 1)
        _ = avenues_curl_easy_setopt_long(easy, CurlOption.followLocation, 0)
        _ = avenues_curl_easy_setopt_long(easy, CurlOption.httpContentDecoding, 0)
        _ = avenues_curl_easy_setopt_long(easy, CurlOption.httpTransferDecoding, 1)
        _ = avenues_curl_easy_setopt_long(easy, CurlOption.transferEncoding, 0)
        _ = avenues_curl_easy_setopt_long(easy, CurlOption.suppressConnectHeaders, 1)
        _ = avenues_curl_easy_setopt_long(easy, CurlOption.tcpKeepAlive, 1)
        // No CURLOPT_PIPEWAIT: with it, a request to a host whose one connection was busy with a long
        // body waited for that body to end (OneSchedulerTests' control requests waited out a 24 s
        // download); other traffic must never wait behind a download.
        // 64 KiB, not 256: over TLS, 2,000 small files took 155 ms of CPU a run with 256 KiB and
        // 128 ms with 64 (in-process medians of 11), and 256 MiB arrived no faster with it.
        _ = avenues_curl_easy_setopt_long(easy, CurlOption.bufferSize, 64 * 1024)
        setString(CurlOption.userAgent, "Avenues-AsyncMedia")
        if let caFile { setString(CurlOption.caInfo, caFile) }
        _ = avenues_curl_easy_setopt_callback(easy, CurlOption.headerFunction, curlHeaderLine)
        _ = avenues_curl_easy_setopt_callback(easy, CurlOption.writeFunction, curlBodyPiece)
    }

    private func setString(_ option: Int32, _ value: String) {
        guard let easy else { return }
        _ = value.withCString { avenues_curl_easy_setopt_pointer(easy, option, $0) }  // libcurl copies strings
    }

    /// One header line: `false` stops the transfer.
    func header(_ line: UnsafeRawBufferPointer) -> Bool {
        do {
            guard let head = try parser.take(line) else { return true }
            headDelivered = true
            if !sink.head(status: head.status, fields: head.fields) {
                stoppedBySink = true
                return false
            }
            return true
        } catch {
            failure = AsyncMediaError.malformedResponse(request.url, reason: error.description)
            return false
        }
    }

    /// A piece of the body: `false` stops the transfer.
    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard headDelivered else {
            failure = AsyncMediaError.malformedResponse(request.url, reason: "a body before a complete head")
            return false
        }
        if !sink.body(bytes) {
            stoppedBySink = true
            return false
        }
        return true
    }

    /// How the transfer ended, as the sink is told: `nil` when the body ended as its framing says.
    func outcome(_ code: Int32) -> (any Error)? {
        if let failure { return failure }
        if stoppedBySink || code == 0 { return nil }
        let text = String(cString: errorBuffer)
        var systemError = 0
        if let easy { _ = avenues_curl_easy_getinfo_long(easy, CurlInfo.osErrno, &systemError) }
        // libcurl records no errno when `socket(2)` fails; whether descriptors ran out is seen by
        // asking for one (on this failure only).
        if code == 7, systemError == 0 {
            let probe = open("/dev/null", O_RDONLY | O_CLOEXEC)
            if probe >= 0 { close(probe) } else { systemError = Int(errno) }
        }
        var message = text.isEmpty ? String(cString: avenues_curl_easy_strerror(code)) : text
        if code == 7 || code == 28 {  // could not connect, or timed out: perhaps to the proxy
            message = CurlTransport.namingTheProxy(message, for: request.url, environment: ProcessInfo.processInfo.environment)
        }
        let detail = CurlTransport.failureDetail(message, systemError: systemError)
        return CurlTransfer.error(code, detail: detail, url: request.url)
    }

    /// libcurl's error as AsyncMedia reports it: connectivity as `URLError` (so callers see
    /// "offline"), a server's broken answer as ``AsyncMediaError``.
    static func error(_ code: Int32, detail: String, url: URL) -> any Error {
        let info: [String: Any] = [NSURLErrorFailingURLErrorKey: url, NSLocalizedDescriptionKey: detail]
        switch code {
        case 5, 6: return URLError(.cannotFindHost, userInfo: info)
        case 7: return URLError(.cannotConnectToHost, userInfo: info)
        case 28: return URLError(.timedOut, userInfo: info)
        case 16, 18, 52, 55, 56, 92: return URLError(.networkConnectionLost, userInfo: info)
        case 35, 77, 58: return URLError(.secureConnectionFailed, userInfo: info)
        case 60: return URLError(.serverCertificateUntrusted, userInfo: info)
        // CURLE_UNSUPPORTED_PROTOCOL: for an http or https URL, an answer that is not HTTP/1.x or
        // later (an HTTP/0.9 body, a status that is not three digits), not a fault of the URL.
        case 1:
            let scheme = url.scheme?.lowercased()
            return scheme == "http" || scheme == "https" ? AsyncMediaError.malformedResponse(url, reason: detail) : AsyncMediaError.unsupportedScheme(url)
        case 3: return AsyncMediaError.invalidURL(url, reason: detail)
        case 8: return AsyncMediaError.malformedResponse(url, reason: detail)
        default: return URLError(.unknown, userInfo: info)
        }
    }

    /// Lets go of the easy handle and the header list. With `keepingHandle`, returns the handle
    /// (off the multi handle) for another request instead of cleaning it up, its pointers into this
    /// transfer cleared.
    @discardableResult
    func cleanUp(keepingHandle: Bool = false) -> UnsafeMutableRawPointer? {
        var kept: UnsafeMutableRawPointer?
        if let easy {
            if keepingHandle {
                for option in [CurlOption.httpHeader, CurlOption.errorBuffer, CurlOption.headerData, CurlOption.writeData] {
                    _ = avenues_curl_easy_setopt_pointer(easy, option, nil)
                }
                kept = easy
            } else {
                avenues_curl_easy_cleanup(easy)
            }
        }
        if let headerList { avenues_curl_slist_free_all(headerList) }
        easy = nil
        headerList = nil
        return kept
    }
}

/// libcurl's header callback: one line per call.
private let curlHeaderLine: avenues_curl_data_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let (length, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.header(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

/// libcurl's write callback: a piece of the body.
private let curlBodyPiece: avenues_curl_data_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let (length, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.body(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

/// libcurl's option numbers (curl.h; stable ABI).
private enum CurlOption {
    static let url: Int32 = 10002
    static let writeFunction: Int32 = 20011
    static let writeData: Int32 = 10001
    static let headerFunction: Int32 = 20079
    static let headerData: Int32 = 10029
    static let httpHeader: Int32 = 10023
    static let followLocation: Int32 = 52
    static let transferEncoding: Int32 = 207
    static let noSignal: Int32 = 99
    static let connectTimeoutMilliseconds: Int32 = 156
    static let caInfo: Int32 = 10065
    static let userAgent: Int32 = 10018
    static let protocols: Int32 = 181
    static let protocolsString: Int32 = 10318
    static let errorBuffer: Int32 = 10010
    static let bufferSize: Int32 = 98
    static let httpContentDecoding: Int32 = 158
    static let httpTransferDecoding: Int32 = 157
    static let tcpKeepAlive: Int32 = 213
    static let suppressConnectHeaders: Int32 = 265
    static let maxConnects: Int32 = 6  // CURLMOPT_MAXCONNECTS
}

/// libcurl's information numbers.
private enum CurlInfo {
    static let osErrno: Int32 = 2_097_177
    static let numConnects: Int32 = 2_097_178
}
