import Foundation
import Synchronization

/// Downloads files once, streamed to disk, and keeps them in a folder: what a list uses to show
/// downloaded media by row.
///
/// - **Once per URL.** However many callers ask for a URL, one download runs; each caller's claim
///   is counted, and when every caller has left (their tasks cancelled) the transfer stops at once
///   and its download slot is free. URLs differing only in the case of their scheme or host, a
///   default port, a `#fragment` or the way an IP address is written (`[0:0:0:0:0:0:0:1]` and
///   `[::1]`; `127.1`, `0x7f.0.0.1` and `127.0.0.1`) are one URL.
/// - **Streamed, memory bounded, nobody stalled.** The body is written to the folder by the thread
///   that receives it, so the network goes no faster than the disk and nothing piles up in memory,
///   whatever the file's size. Bytes move through a ``DownloadTransport``: on Linux ``CurlTransport``
///   (libcurl: `http` and `https`, HTTP/2, proxies from the environment, kept-alive connections), on
///   Apple platforms `URLSessionTransport`.
/// - **Only whole files are cached.** A 200 or 203 answer (or a 206 continuing a resume) whose
///   body has its announced length, and whose compressed streams (`gzip`, `deflate`; every
///   `Content-Encoding` and `Transfer-Encoding` field is read) ended with their checksums, is put
///   into the cache in one step: a file with no name (`O_TMPFILE`, Linux) linked into place, or a
///   temporary file renamed. Anything else — another status, a body cut short, a
///   coding that cannot be decoded, a limit — caches nothing and throws ``AsyncMediaError``. A body
///   without a length or a coding that ends when the server closes the connection cannot be told
///   from one cut short, and is cached.
/// - **Limits.** ``DownloadLimits`` (a silent server, a body that never ends, a size), and the
///   folder's `sizeLimit`, which also bounds one file: a download stops as soon as its decoded
///   bytes pass either, so a compressed bomb cannot fill the disk.
/// - **Redirects** are followed (at most ``maximumRedirects``), to `http` and `https` only; headers
///   that carry credentials (`Authorization`, `Cookie`, `Proxy-Authorization`, and names with
///   `api-key`, `token`, `secret`, `password` or `session`) are sent only to the first URL's origin
///   (scheme, host and port), as curl and browsers do. A user name and password in a URL
///   (`https://user:secret@host/`) are sent as the transport sends them, but never written to the
///   folder (its records name such a URL by a hash) nor shown in an error's message (`user:***@`).
/// - **Resume.** A download cut short (the server dropped the connection, the process was killed)
///   whose response had a validator (a strong `ETag` or `Last-Modified`), no content coding and a
///   length of 64 KiB or more (or none) is kept as a partial file; the next request of the URL asks only for the rest (`Range` +
///   `If-Range`), and starts over if the file changed. At most 16 partial files are kept, for a day.
/// - **Cached, revalidated.** With no `timeToLive` (the default) files are assumed immutable: a
///   cached file is returned without asking the server. With one, a file older than that is
///   revalidated (`If-None-Match`/`If-Modified-Since`), and so is one recorded more than a second
///   in the future (while the wall clock was ahead): a `304` keeps the file (no body moves) and
///   renews it; if the server cannot be reached (or answers 5xx), the old file is returned. Names
///   are the URL's SHA-256 (its first 128 bits) plus its path extension: no server can pick a URL
///   whose name is another's. With a `sizeLimit`, least recently used
///   files are deleted down to 80 % of it, across processes sharing the folder. A deleted folder is
///   created again on the next download.
/// - **Many small files.** While `maxConcurrentDownloads` transfers move, as many more are prepared
///   (their file open, their request made); when one ends, the transport's thread starts the next
///   at once, in the queue's order (a freed slot waits for a more urgent download queued behind
///   them). A prepared download counts as queued in ``activity`` and against no limit until it moves.
/// - `file:` URLs are returned as they are; schemes other than `http`/`https` are an error.
///
/// `AsyncMedia` is a ``SchedulingProcessor`` (URL → local file URL): an ``Avenue`` over it (or over
/// a transform of it) shows downloads by row with one queue — its `maxConcurrentDownloads` — where
/// each row's priority decides the order, a row scrolled into view moves its download forward, and a
/// row scrolled away releases its claim. It is thread-safe.
///
/// ```swift
/// let media = AsyncMedia(directory: cacheFolder)
/// let file = try await media.file(for: imageURL)
/// for await progress in media.progress(for: videoURL) { print(progress) }
/// ```
public final class AsyncMedia: SchedulingProcessor {
    /// What is asked for: a remote (or `file:`) URL.
    public typealias Key = URL
    /// What is returned: the URL of the local file.
    public typealias Value = URL

    /// The shared instance, keeping files in `avenues-media` in the platform cache folder
    /// (`$XDG_CACHE_HOME` or `~/.cache` on Linux), or in the temporary folder if there is none.
    public static let shared = AsyncMedia(
        directory: ((try? DiskStorage<String>.cacheFolder()) ?? FileManager.default.temporaryDirectory)
            .appendingPathComponent("avenues-media", isDirectory: true)
    )

    /// The most redirects followed in a row.
    public static let maximumRedirects = 5

    /// The folder holding the downloaded files.
    public var directory: URL { folder.directory }
    /// The largest total size of the downloaded files in bytes, or `nil` for no limit (the default).
    public var sizeLimit: Int? { folder.sizeLimit }
    /// When a download is given up.
    public let limits: DownloadLimits
    /// How long a downloaded file is used without asking the server again, or `nil` (the default)
    /// for as long as it is kept.
    public let timeToLive: Duration?
    /// What moves the bytes.
    public let transport: any DownloadTransport
    /// Which redirects are followed: `allowsRedirect(from, to)`; any `http` or `https` target by
    /// default.
    public let allowsRedirect: @Sendable (_ from: URL, _ to: URL) -> Bool

    private let folder: MediaFolder
    private let progress: ProgressHub
    private let validators: Validators
    private let downloader: AutoProcessor<MediaDownload, URL>
    /// Which prepared transfers move: `maxConcurrentDownloads` at once.
    private let slots: TransferGate
    /// URLs whose server asked to wait (429/503 with `Retry-After`).
    private let gate = RetryGate<URL>()
    /// Ends a transport this instance made for itself (a URLSession is invalidated with it).
    private let endOwnedTransport: (@Sendable () -> Void)?
    /// Why `headers:` cannot be sent, if one of them is not an HTTP field: every download fails with it.
    private let headerProblem: AsyncMediaError?

    /// Creates a media cache in `directory` (created on the first download).
    ///
    /// - Parameters:
    ///   - directory: the folder for downloaded files; use one folder per instance (several
    ///     processes may share it).
    ///   - sizeLimit: the largest total size in bytes, which also bounds one file; `nil` (the
    ///     default) for no limit.
    ///   - maxConcurrentDownloads: the most transfers moving bytes at once, at least 1; 6 by default.
    ///     As many more are prepared to follow them, each with its file open: up to twice this many
    ///     files and this many connections are open at once, which must fit the process's limit
    ///     of open files (`ulimit -n`: 1,024 on most Linux systems, 256 on macOS).
    ///   - limits: when a download is given up; ``DownloadLimits/default`` (60 s without a byte, one
    ///     hour in all, no size limit) by default.
    ///   - timeToLive: how long a file is used before it is revalidated; `nil` (the default): files
    ///     are immutable.
    ///   - headers: sent on every request (those that carry credentials only to the first URL's
    ///     origin); none by default. The headers AsyncMedia sets itself (`Range`, `If-None-Match`,
    ///     `Accept-Encoding`…) are not taken from here.
    ///   - transport: what moves the bytes; by default ``CurlTransport/shared`` on Linux (if libcurl
    ///     cannot be loaded, every download fails with ``CurlTransport/Unavailable``, which says
    ///     what to install) and a `URLSessionTransport` of its own on Apple platforms (give one
    ///     made with a `URLSessionConfiguration` to configure URLSession).
    ///   - allowsRedirect: whether a redirect from one URL to another is followed (an `http` or
    ///     `https` target is required whatever it says); a refused one fails the download with
    ///     ``AsyncMediaError/redirectRefused(from:to:)``. Every redirect by default.
    public convenience init(
        directory: URL,
        sizeLimit: Int? = nil,
        maxConcurrentDownloads: Int = 6,
        limits: DownloadLimits = .default,
        timeToLive: Duration? = nil,
        headers: [String: String] = [:],
        transport: (any DownloadTransport)? = nil,
        allowsRedirect: @escaping @Sendable (_ from: URL, _ to: URL) -> Bool = { _, _ in true }
    ) {
        self.init(
            directory: directory, sizeLimit: sizeLimit, maxConcurrentDownloads: maxConcurrentDownloads, limits: limits,
            timeToLive: timeToLive, headers: headers, transport: transport, allowsRedirect: allowsRedirect,
            writeBytes: { descriptor, bytes, path in try FileSystem.writeAll(descriptor, bytes, path: path) }
        )
    }

    /// `writeBytes` writes a body's bytes to the file; tests replace it to fill the disk.
    init(
        directory: URL,
        sizeLimit: Int?,
        maxConcurrentDownloads: Int,
        limits: DownloadLimits,
        timeToLive: Duration?,
        headers: [String: String],
        transport: (any DownloadTransport)?,
        allowsRedirect: @escaping @Sendable (URL, URL) -> Bool = { _, _ in true },
        unnamedFiles: Bool = true,
        writeBytes: @escaping @Sendable (Int32, UnsafeRawBufferPointer, String) throws -> Void
    ) {
        precondition(timeToLive.map { $0 >= .zero } ?? true, "AsyncMedia timeToLive must not be negative")
        let folder = MediaFolder(directory: directory, sizeLimit: sizeLimit, unnamedFiles: unnamedFiles)
        let progress = ProgressHub()
        // Sorted: the order sent does not depend on hashing.
        let headers = headers.sorted { $0.key < $1.key }.map { HTTPField(name: $0.key, value: $0.value) }
        headerProblem = headers.lazy.compactMap { field in field.problem.map { AsyncMediaError.invalidHeader(name: field.name, reason: $0) } }.first
        let chosen: any DownloadTransport
        if let transport {
            chosen = transport
            endOwnedTransport = nil
        } else {
            #if canImport(FoundationNetworking)
            chosen = CurlTransport.shared ?? FailingTransport(error: CurlTransport.loadError)
            endOwnedTransport = nil
            #else
            let session = URLSessionTransport()
            chosen = session
            endOwnedTransport = { session.invalidate() }
            #endif
        }
        let timeToLive = timeToLive.map(Saturating.clamped)
        let validators = Validators(directory: folder.directory)
        precondition(maxConcurrentDownloads >= 1, "AsyncMedia needs maxConcurrentDownloads of at least 1")
        let gate = TransferGate(limit: maxConcurrentDownloads)
        let context = Context(
            folder: folder, progress: progress, validators: validators, transport: chosen, headers: headers, limits: limits,
            timeToLive: timeToLive, allowsRedirect: allowsRedirect, writeBytes: writeBytes, gate: gate,
            startsInSinkCalls: Self.startsInSinkCalls(chosen),
            originHeaders: Self.requestHeaders(headers, sameOrigin: true, decodes: chosen.decodesContentCodings)
        )
        self.allowsRedirect = allowsRedirect
        self.folder = folder
        self.progress = progress
        self.validators = validators
        self.limits = limits
        self.timeToLive = timeToLive
        self.transport = chosen
        // Twice as many runs as slots: while `maxConcurrentDownloads` transfers move, as many more
        // wait at the gate with their file open and their request made, and the transport's thread
        // starts one the moment another ends (2,000 small files: 92 ms against 107 with every run
        // waiting for its slot in the scheduler, fresh processes). Their priorities reach the gate.
        let (runs, overflow) = maxConcurrentDownloads.multipliedReportingOverflow(by: 2)
        let downloader = AutoProcessor<MediaDownload, URL>(
            maxConcurrent: overflow ? Int.max : runs, reservedForVisible: 0, rateLimit: nil, executor: nil, propagatesPriority: true,
            work: { download, run in try await Self.download(download.url, named: download.name, run: run, context) },
            workerRetired: { gate.workerRetired() }
        )
        gate.readQueuedPriority { [weak downloader] in downloader?.highestQueuedPriority }
        self.downloader = downloader
        slots = gate
    }

    deinit {
        endOwnedTransport?()
    }

    // MARK: Requests

    /// The local file for `url`: the cached file at once (revalidated first if it is older than
    /// ``timeToLive``), else one download shared by every caller.
    ///
    /// A file this returns existed when it returned; ``clear()-swift.method`` (or the size limit) may
    /// delete it later. A request overlapping a ``clear()-swift.method`` throws `CancellationError`.
    ///
    /// - Throws: ``AsyncMediaError`` (unsupported scheme or URL, HTTP status, incomplete or
    ///   malformed body, a limit, the folder; `.unavailable` for a 429 or 503, repeated without asking
    ///   the server until its `Retry-After` is over), a `URLError` when the network fails (see
    ///   `Error.isSilenceable`), or `CancellationError` if the caller's task is cancelled or
    ///   ``clear()-swift.method`` runs meanwhile.
    public func file(for url: URL) async throws -> URL {
        try await file(for: url, priority: nil)
    }

    /// ``file(for:)``, its download queued at `priority` (`.visible` without one).
    func file(for given: URL, priority: RunPriority?) async throws -> URL {
        switch try lookUp(given) {
        case .answered(let file): return file
        case .download(let download, let generation): return try await fetch(download, since: generation, priority: priority)
        }
    }

    /// The download (or the run joined) of canonical `url` for a caller whose look for a cached file
    /// failed at folder generation `generation`. Tests call it without the look: a caller whose look
    /// came just before another run moved the file in.
    func fetch(_ download: MediaDownload, since generation: UInt64, priority: RunPriority?) async throws -> URL {
        // At the priority of the avenue row asking, if one is (`.visible` otherwise).
        let url = download.url
        let file: URL
        do {
            file = try await downloader.value(for: download, priority: priority?.value ?? .visible, following: priority)
        } catch {
            return try downloaded(.failure(error), for: url, since: generation).get()
        }
        return try downloaded(.success(file), for: url, since: generation).get()
    }

    /// The local file of every URL of `urls`, as each is known: what ``file(for:)`` answers for it,
    /// without a task per URL. A cached file is answered when the walk of the list reaches it (a walk
    /// of 2,000 URLs takes a few milliseconds, so before almost any download ends); the others in
    /// the order their downloads end, claimed in the order given at `priority` (`.visible` by
    /// default; `.prefetch` lets any visible download go first; as with ``file(for:)``, the
    /// downloads prepared together move in the order they are ready). A URL given twice is
    /// downloaded once and answered twice. The sequence ends after the last answer.
    ///
    /// The URLs are claimed at once, off the calling thread. Stopping early — leaving the loop,
    /// cancelling the task that iterates, or dropping the sequence — withdraws the claims not yet
    /// answered: downloads nobody else asked for stop, and their slots are free. When most of the
    /// first 16 lookups fail (a cold cache), the folder is listed once for the rest, if it is small
    /// beside them. What this `AsyncMedia` downloads meanwhile is found; a file that another process
    /// (or another `AsyncMedia` on the same folder) adds after the listing is fetched again.
    ///
    /// ```swift
    /// for await answer in media.files(for: urls) {
    ///     if let file = try? answer.result.get() { show(file, for: answer.url) }
    /// }
    /// ```
    public func files(for urls: some Sequence<URL>, priority: LoadPriority = .visible) -> AsyncStream<Answer> {
        let (stream, continuation) = AsyncStream.makeStream(of: Answer.self)
        // Each answer is yielded before it is counted, so the one counted last finishes the
        // sequence after every other was yielded.
        guard let list = claimEvery(Array(urls), priority: priority, deliver: { continuation.yield($0) }, end: { continuation.finish() }) else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak downloader, slots] termination in
            guard case .cancelled = termination, let downloader else { return }
            Self.withdraw(list, from: downloader, slots: slots)
        }
        return stream
    }

    /// ``files(for:priority:)`` without a task to read the answers: `answer` is called once for each
    /// URL of `urls` (a URL given twice, twice), as each is known — cached files first, the others
    /// as their downloads end — one call at a time, on the thread that learned the answer.
    ///
    /// Nothing is woken to read an answer: on 2,000 small files from a server on the same machine
    /// that saved 7 ms of CPU a run beside a list read by a task (101 against 108 ms over http, 134
    /// against 141 over TLS; `keepalive-bench.py`). For front ends that cannot await (as
    /// ``Avenue`` claims its rows), and for long lists. `answer` must be quick and must not wait
    /// for this `AsyncMedia`: hand the answer to your own queue (the main one, for a screen) and
    /// return.
    ///
    /// ``FileListRequest/cancel()`` withdraws the claims not yet answered, as leaving a
    /// ``files(for:priority:)`` loop does; dropping the request does not.
    ///
    /// ```swift
    /// let request = media.files(for: urls) { answer in
    ///     DispatchQueue.main.async { show(answer) }
    /// }
    /// ```
    @discardableResult
    public func files(
        for urls: some Sequence<URL>, priority: LoadPriority = .visible, answer: @escaping @Sendable (Answer) -> Void
    ) -> FileListRequest {
        let stopped = Locked(false)
        let calls = SerialDrain<[Answer]>()
        let deliver: @Sendable (Answer) -> Void = { given in
            calls.submit({ pending in
                // Moved out and back: appended in place, not copied for each answer.
                var batch = pending.take() ?? []
                batch.append(given)
                pending = batch
            }) { batch in
                for each in batch where !stopped.withLock({ $0 }) { answer(each) }
            }
        }
        let list = claimEvery(Array(urls), priority: priority, deliver: deliver, end: {})
        return FileListRequest { [weak downloader, slots] in
            stopped.withLock { $0 = true }
            if let list, let downloader { Self.withdraw(list, from: downloader, slots: slots) }
        }
    }

    /// Claims every URL of `urls` at `priority`, off the calling thread: `deliver` is called once
    /// per URL (from any thread, on several at once), and `end` once, after the last `deliver`
    /// returned. `nil` for an empty list (neither is called).
    private func claimEvery(
        _ urls: [URL], priority: LoadPriority, deliver: @escaping @Sendable (Answer) -> Void, end: @escaping @Sendable () -> Void
    ) -> ClaimedList<AutoProcessor<MediaDownload, URL>.Claim>? {
        guard !urls.isEmpty else { return nil }
        let list = ClaimedList<AutoProcessor<MediaDownload, URL>.Claim>(count: urls.count)
        let answer: @Sendable (URL, Result<URL, any Error>) -> Void = { url, result in
            deliver(Answer(url: url, result: result))
            if list.answered() { end() }
        }
        Task.detached { [self] in
            // When the first lookups mostly fail (a cold cache), one listing of the folder stands in
            // for the rest, if the folder is small beside them.
            var listing: MediaFolder.Listing?
            var downloads = 0
            for (position, given) in urls.enumerated() {
                guard !list.isStopped else { return }
                if position == MediaFolder.smallestListedLookup, downloads * 4 >= position * 3 {
                    listing = folder.listing(forLookups: urls.count - position)
                }
                do {
                    switch try lookUp(given, listing: listing) {
                    case .answered(let file): answer(given, .success(file))
                    case .download(let download, let generation):
                        downloads += 1
                        let claim = downloader.claim(download, priority: priority) { [weak self] result in
                            answer(given, self?.downloaded(result, for: download.url, since: generation) ?? .failure(CancellationError()))
                        }
                        if !list.add(claim) { downloader.release(claim) }  // stopped meanwhile
                    }
                } catch {
                    answer(given, .failure(error))
                }
            }
        }
        return list
    }

    /// Withdraws the claims of `list` not yet answered.
    private static func withdraw(
        _ list: ClaimedList<AutoProcessor<MediaDownload, URL>.Claim>, from downloader: AutoProcessor<MediaDownload, URL>, slots: TransferGate
    ) {
        // No slot is handed on until every claim is withdrawn: a download waiting for a slot leaves
        // before the one moving frees it, whichever comes first in the list (they move in the order
        // they were ready, not the list's: releasing from the last, a moving one late in the list
        // gave its slot to a waiting one early in it, which started). Releasing a claim already
        // answered does nothing.
        slots.holding {
            for claim in list.stop().reversed() { downloader.release(claim) }
        }
    }

    /// One URL's answer from ``files(for:priority:)`` or ``files(for:priority:answer:)``.
    public struct Answer: Sendable {
        /// The URL as it was given.
        public let url: URL
        /// Its local file, or why there is none (what ``file(for:)`` would throw).
        public let result: Result<URL, any Error>
    }

    /// What a request finds before any download: its answer, or the download (of the canonical URL)
    /// and the folder's generation then.
    private enum LookUp {
        case answered(URL)
        case download(MediaDownload, since: UInt64)
    }

    /// The checks every request makes first: a `file:` URL, a cached file still fresh, headers that
    /// cannot be sent, a server that asked to wait. `listing`: the folder's names, if it was listed.
    private func lookUp(_ url: URL, listing: MediaFolder.Listing? = nil) throws -> LookUp {
        if url.isFileURL { return .answered(url) }
        let url = try Self.canonical(url)
        let generation = folder.generation
        let name = MediaFolder.fileName(for: url)
        if let file = folder.cachedFile(named: name, listing: listing), validators.isFresh(url, timeToLive: timeToLive) { return .answered(file) }
        if let headerProblem { throw headerProblem }
        if let error = gate.blocked(url) {  // the server asked to wait
            progress.finish(url, with: nil)  // no download will end the progress subscribed meanwhile
            throw error
        }
        return .download(MediaDownload(url: url, name: name), since: generation)
    }

    /// A download's result as its caller gets it: a failure noted (a `Retry-After` closes the URL for
    /// a while), a file deleted by a clear since the request began answered with `CancellationError`.
    private func downloaded(_ result: Result<URL, any Error>, for url: URL, since generation: UInt64) -> Result<URL, any Error> {
        switch result {
        case .success(let file):
            return folder.stillHolds(file, since: generation) ? .success(file) : .failure(CancellationError())
        case .failure(let error):
            gate.note(error, for: url)
            return .failure(error)
        }
    }

    /// Same as ``file(for:)``, so AsyncMedia can serve an ``Avenue``.
    public func process(_ url: URL) async throws -> URL {
        try await file(for: url)
    }

    /// ``file(for:)`` for a run at `priority`: the download waits for a slot at the run's priority and
    /// follows its changes, so an ``Avenue`` over AsyncMedia shares its queue.
    public func process(_ url: URL, priority: RunPriority) async throws -> URL {
        try await file(for: url, priority: priority)
    }

    /// The cached file for `url`, if it was downloaded (however old); never downloads. A `file:` URL
    /// is itself.
    public func cachedFile(for url: URL) -> URL? {
        if url.isFileURL { return url }
        return (try? Self.canonical(url)).flatMap { folder.cachedFile(for: $0) }
    }

    /// Whether `url` was downloaded (however old): offline, ``file(for:)`` answers with that file.
    public func isAvailableOffline(_ url: URL) -> Bool {
        if url.isFileURL { return true }
        return (try? Self.canonical(url)).map(folder.holds) ?? false
    }

    /// The progress of `url`'s download, as an async sequence that ends when the download does. A
    /// download reports when its body starts (the size expected, if the server told it), then
    /// after every 256 KiB or, when slower, every tenth of a second in which bytes came, and last
    /// when complete. A cached file (and a `file:` URL) reports once, complete. Subscribe before
    /// ``file(for:)`` to see the whole download; at most the newest value waits for a slow reader.
    /// It ends with no value when ``file(for:)`` fails without a download: a URL it cannot
    /// download, headers it cannot send, a server's `Retry-After` not over.
    public func progress(for url: URL) -> AsyncStream<DownloadProgress> {
        let (stream, continuation) = AsyncStream.makeStream(of: DownloadProgress.self, bufferingPolicy: .bufferingNewest(1))
        func complete(_ file: URL) {
            let size = Int64((try? FileSystem.linkStatus(file.path).size) ?? 0)
            continuation.yield(DownloadProgress(received: size, expected: size, isComplete: true))
            continuation.finish()
        }
        if url.isFileURL {  // its own file: never downloaded or revalidated, however old
            complete(url)
            return stream
        }
        guard headerProblem == nil, let key = try? Self.canonical(url) else {
            continuation.finish()  // never downloaded: file(for:) throws at once
            return stream
        }
        progress.subscribe(continuation, to: key)
        // Checked after subscribing, so a download that just finished is not missed.
        if let file = folder.cachedFile(for: key), validators.isFresh(key, timeToLive: timeToLive) { complete(file) }
        return stream
    }

    /// Cancels every download in flight and deletes every downloaded file (and partial download).
    /// The instance stays usable.
    public func clear() {
        downloader.cancelAll()
        folder.removeAll()
        validators.removeAll()
    }

    /// Downloaded files and their total size in bytes.
    public var usage: DiskUsage {
        let usage = folder.usage
        return DiskUsage(count: usage.count, size: usage.size)
    }

    /// The folder's clears so far, as a lookup records them (for tests).
    var generation: UInt64 { folder.generation }

    /// Whether no download is queued or running (for tests).
    var downloaderIsIdle: Bool { downloader.tableSizes.isIdle }

    /// Claims waiting on downloads, one per caller (for tests).
    var downloadClaims: Int { downloader.tableSizes.waiters }

    /// Downloads prepared and waiting at the gate for a transfer slot (for tests).
    var transfersWaitingForASlot: Int { slots.waitingCount }

    /// Downloads queued and running now: running ones move bytes (at most `maxConcurrentDownloads`);
    /// a download being prepared, or prepared and waiting for a transfer slot, counts as queued.
    public var activity: AutoProcessorActivity {
        // Running: the transfers holding a slot, as the gate counts them (never more than the
        // limit). The scheduler's own running count also holds the downloads being prepared and
        // those waiting at the gate; taking those out by the gate's waiting count, read under
        // another lock, counted 4 running with a limit of 2.
        let scheduled = downloader.activity
        let total = scheduled.queued + scheduled.running
        let running = min(slots.movingCount, total)
        return AutoProcessorActivity(queued: total - running, running: running)
    }

    // MARK: Downloading

    /// The URL a download is known by: scheme and host lowercased, the default port and the fragment
    /// dropped, an empty path made `/`, and the path's `.` and `..` segments resolved (RFC 3986
    /// §5.2.4; `%2e` is a dot, as in the WHATWG URL standard): `/a/./b/../c` is `/a/c`, as curl and
    /// browsers ask for it. Percent-encodings are kept as written: changing them would change the
    /// bytes a signed URL was signed over. Throws for schemes other than `http` and `https`, and for
    /// URLs that cannot be asked (no host, a port outside 1–65535).
    static func canonical(_ url: URL) throws(AsyncMediaError) -> URL {
        if isCanonical(url) { return url }
        return try canonicalFromComponents(url)
    }

    /// Whether `url` is already what ``canonical(_:)`` makes of it, read from its bytes where that is
    /// plain: `http://` or `https://`, a host of lowercase letters, digits, dots and hyphens, a port
    /// (1–65535, not the default, no leading zero) or none, a path that starts with `/` and has no
    /// segment that could be a dot segment, and no fragment. Parsing it with `URLComponents` took
    /// 5 % of a small download's time.
    static func isCanonical(_ url: URL) -> Bool {
        guard url.baseURL == nil else { return false }
        var text = url.absoluteString
        return text.withUTF8 { isCanonical(bytes: $0) }
    }

    /// ``isCanonical(_:)`` of a URL's bytes, read by position (through `Substring.UTF8View` it cost
    /// 5,000 instructions a download).
    private static func isCanonical(bytes text: UnsafeBufferPointer<UInt8>) -> Bool {
        let slash = UInt8(ascii: "/"), question = UInt8(ascii: "?"), hash = UInt8(ascii: "#"), colon = UInt8(ascii: ":")
        let http = text.starts(with: "http://".utf8)
        guard http || text.starts(with: "https://".utf8) else { return false }
        let authorityStart = http ? 7 : 8
        var authorityEnd = authorityStart
        while authorityEnd < text.count, text[authorityEnd] != slash, text[authorityEnd] != question {
            if text[authorityEnd] == hash { return false }
            authorityEnd += 1
        }
        guard authorityEnd < text.count, text[authorityEnd] == slash else { return false }  // an empty path
        // No fragment; in the path, no segment that starts with `.` or `%` (it may be a dot segment:
        // `.`, `..`, `%2e`…).
        var previous: UInt8 = 0
        var inPath = true
        for index in authorityEnd..<text.count {
            let byte = text[index]
            if byte == hash { return false }
            if byte == question { inPath = false }
            if inPath, previous == slash, byte == UInt8(ascii: ".") || byte == UInt8(ascii: "%") { return false }
            previous = byte
        }
        var hostEnd = authorityStart
        while hostEnd < authorityEnd, text[hostEnd] != colon { hostEnd += 1 }
        guard hostEnd > authorityStart else { return false }
        var hasX = false
        for index in authorityStart..<hostEnd {
            let byte = text[index]
            guard (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2E || byte == 0x2D else { return false }
            if byte == 0x78 { hasX = true }
        }
        // A host that may be an IPv4 address written another way (`127.1`, `0x7f.0.0.1`, `127.0.0.1.`).
        let host = UnsafeBufferPointer(rebasing: text[authorityStart..<hostEnd])
        if let last = host.last, (0x30...0x39).contains(last) || last == 0x2E || hasX, !isDottedDecimal(host) {
            let written = String(decoding: host, as: UTF8.self)
            if let dotted = dottedIPv4(written), dotted != written { return false }
        }
        guard hostEnd < authorityEnd else { return true }
        let digitsStart = hostEnd + 1
        guard (1...5).contains(authorityEnd - digitsStart), text[digitsStart] != UInt8(ascii: "0") else { return false }
        var port = 0
        for index in digitsStart..<authorityEnd {
            guard (0x30...0x39).contains(text[index]) else { return false }
            port = port * 10 + Int(text[index] - 0x30)
        }
        return port <= 65_535 && port != (http ? 80 : 443)
    }

    /// Whether `host` is an IPv4 address as ``dottedIPv4(_:)`` writes it (four numbers of 0–255
    /// without leading zeros), read without making a string: the usual case of ``isCanonical(_:)``'s
    /// look for another way of writing one.
    private static func isDottedDecimal(_ host: UnsafeBufferPointer<UInt8>) -> Bool {
        var labels = 0, digits = 0, value = 0, leadingZero = false
        for byte in host {
            if byte == UInt8(ascii: ".") {
                guard digits > 0 else { return false }
                labels += 1
                digits = 0
                value = 0
                continue
            }
            guard (0x30...0x39).contains(byte), !leadingZero || digits == 0, digits < 3 else { return false }
            leadingZero = digits == 0 && byte == UInt8(ascii: "0")
            value = value * 10 + Int(byte - 0x30)
            digits += 1
            guard value <= 255 else { return false }
        }
        return labels == 3 && digits > 0
    }

    /// ``canonical(_:)`` through `URLComponents`, for every URL.
    static func canonicalFromComponents(_ url: URL) throws(AsyncMediaError) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { throw .unsupportedScheme(url) }
        guard let host = components.percentEncodedHost, !host.isEmpty else { throw .invalidURL(url, reason: "it has no host") }
        if let port = components.port, !(1...65_535).contains(port) { throw .invalidURL(url, reason: "the port \(port) is outside 1–65535") }
        components.scheme = scheme
        components.percentEncodedHost = canonicalHost(host)
        components.fragment = nil
        if components.port == (scheme == "http" ? 80 : 443) { components.port = nil }
        components.percentEncodedPath = withoutDotSegments(components.percentEncodedPath)
        return components.url ?? url
    }

    /// `path` (percent-encoded) with its `.` and `..` segments resolved, as RFC 3986 §5.2.4 removes
    /// them from a path that has an authority: always starting with `/`, a trailing dot segment
    /// leaving the `/` before it. A segment is a dot whatever case its `%2e` is written in.
    static func withoutDotSegments(_ path: String) -> String {
        let segments = path.hasPrefix("/") ? path.dropFirst().split(separator: "/", omittingEmptySubsequences: false) : [Substring(path)]
        var kept: [Substring] = []
        for (position, segment) in segments.enumerated() {
            let isLast = position == segments.count - 1
            switch segment.lowercased() {
            case ".", "%2e":
                if isLast { kept.append("") }
            case "..", ".%2e", "%2e.", "%2e%2e":
                if !kept.isEmpty { kept.removeLast() }
                if isLast { kept.append("") }
            default:
                kept.append(segment)
            }
        }
        return "/" + kept.joined(separator: "/")
    }

    /// A host as a download is known by: lowercased, an IPv4 address in dotted decimal however it
    /// is written (``dottedIPv4(_:)``), and an IPv6 literal in its one text form (RFC 5952:
    /// `[0:0:0:0:0:0:0:1]` and `[::1]` are one host, so one file); a zone (`%25eth0`) is kept as it
    /// is written (interface names are case-sensitive).
    static func canonicalHost(_ host: String) -> String {
        guard host.hasPrefix("["), host.hasSuffix("]") else {
            let lowercased = host.lowercased()
            return dottedIPv4(lowercased) ?? lowercased
        }
        let inside = host.dropFirst().dropLast()
        let zoneStart = inside.range(of: "%25")?.lowerBound ?? inside.endIndex
        let address = String(inside[..<zoneStart])
        return "[" + (rfc5952(address) ?? address.lowercased()) + inside[zoneStart...] + "]"
    }

    /// `host` (lowercase) as an IPv4 address in dotted decimal, if it is one however it is written,
    /// else `nil`: one to four numbers, each decimal, hex (`0x`) or octal (a leading `0`), the last
    /// filling the bytes left — `127.1`, `0x7f.0.0.1`, `0177.0.0.1`, `2130706433` and `127.0.0.1.`
    /// are all `127.0.0.1`, so one file. The C library's `inet_aton` reads these forms (as curl and
    /// the WHATWG URL standard do); one trailing dot is dropped first, as they drop it.
    static func dottedIPv4(_ host: String) -> String? {
        let number = host.hasSuffix(".") ? String(host.dropLast()) : host
        // Digits, letters and dots only: `inet_aton` stops at a space and takes what came before.
        guard !number.isEmpty, number.utf8.allSatisfy({ $0 == 0x2E || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) || (0x41...0x5A).contains($0) })
        else { return nil }
        var address = in_addr()
        guard inet_aton(number, &address) != 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `address` (an IPv6 address without brackets or zone) in its RFC 5952 form, or `nil` if it is
    /// not one.
    private static func rfc5952(_ address: String) -> String? {
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &bytes, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// What every download run of an instance needs.
    /// A class, not a struct: a download's closures capture it, and a copy of a struct of eleven
    /// references was eleven retains and releases each time.
    final class Context: Sendable {
        let folder: MediaFolder
        let progress: ProgressHub
        let validators: Validators
        let transport: any DownloadTransport
        let headers: [HTTPField]
        let limits: DownloadLimits
        let timeToLive: Duration?
        let allowsRedirect: @Sendable (URL, URL) -> Bool
        let writeBytes: @Sendable (Int32, UnsafeRawBufferPointer, String) throws -> Void
        let gate: TransferGate
        /// Whether the next transfer may be started on the thread of a sink call that freed a slot.
        let startsInSinkCalls: Bool
        /// ``requestHeaders(_:for:origin:decodes:)`` of a request to the URL downloaded itself, made
        /// once: every request but a redirect's sends these (filtered per request, they cost an
        /// array and a lowercased name per header each time).
        let originHeaders: [HTTPField]

        init(
            folder: MediaFolder, progress: ProgressHub, validators: Validators, transport: any DownloadTransport, headers: [HTTPField],
            limits: DownloadLimits, timeToLive: Duration?, allowsRedirect: @escaping @Sendable (URL, URL) -> Bool,
            writeBytes: @escaping @Sendable (Int32, UnsafeRawBufferPointer, String) throws -> Void, gate: TransferGate,
            startsInSinkCalls: Bool, originHeaders: [HTTPField]
        ) {
            (self.folder, self.progress, self.validators, self.transport, self.headers) = (folder, progress, validators, transport, headers)
            (self.limits, self.timeToLive, self.allowsRedirect, self.writeBytes) = (limits, timeToLive, allowsRedirect, writeBytes)
            (self.gate, self.startsInSinkCalls, self.originHeaders) = (gate, startsInSinkCalls, originHeaders)
        }
    }

    /// Whether `transport` may be asked to start a request from inside a call it makes to a sink:
    /// ours call sinks outside their locks. Another transport might not (a lock held around its
    /// sink calls would deadlock), so its requests are started from a task instead.
    static func startsInSinkCalls(_ transport: any DownloadTransport) -> Bool {
        #if canImport(FoundationNetworking)
        transport is CurlTransport
        #else
        transport is CurlTransport || transport is URLSessionTransport
        #endif
    }

    /// One download run: revalidates a cached file or fetches it (resuming a partial one), following
    /// redirects, into a partial file moved into place when whole.
    private static func download(_ url: URL, named name: String, run: RunPriority?, _ context: Context) async throws -> URL {
        let folder = context.folder
        // With a time-to-live the file kept decides what is asked (a revalidation) and is the answer
        // when the server cannot be reached. Without one the caller found none just before, and a run
        // of the same URL in this process is joined, never repeated: not looked for again (a
        // failing lookup per download; a file another process fetched meanwhile is fetched again).
        let cached = context.timeToLive == nil ? nil : folder.cachedFile(named: name)
        if let cached, context.validators.isFresh(url, timeToLive: context.timeToLive) { return cached }  // revalidated while queued
        // Its caller looked just before another run of this URL moved the file in, and claimed just
        // after that run ended (a URL given twice in a list, two callers): found, not fetched twice.
        if context.timeToLive == nil, folder.wasCommittedHere(name), let file = folder.cachedFile(named: name) {
            let size = Int64((try? FileSystem.linkStatus(file.path).size) ?? 0)
            context.progress.finish(url, with: DownloadProgress(received: size, expected: size, isComplete: true))
            return file
        }
        let generation = folder.generation
        let partial: MediaFolder.Partial
        do {
            partial = try folder.openPartial(for: url, named: name)
        } catch {
            throw AsyncMediaError.cannotStore(url, reason: error)
        }
        defer { partial.close() }
        var known = cached == nil ? nil : context.validators.validators(for: url)
        var target = url
        var redirects = 0
        var resume = partial.validator
        while true {
            let existing = resume == nil ? 0 : partial.size
            let (plan, outcome) = await attempt(
                url: url, target: target, partial: partial, resumingFrom: existing > 0 ? existing : nil, validator: resume,
                revalidating: known, run: run, context: context
            )
            switch outcome {
            case .success(.file(let size)):
                do {
                    partial.forgetValidator()  // before the move: a record never outlives its partial file
                    let local = try folder.commit(partial, for: url, named: name, size: size, since: generation)
                    // Validators serve revalidation only, which needs a time-to-live; without one,
                    // recording them cost a second cache entry (a file written, renamed and counted)
                    // per download.
                    if context.timeToLive != nil { context.validators.record(plan, for: url) }
                    context.progress.finish(url, with: DownloadProgress(received: size, expected: size, isComplete: true))
                    return local
                } catch {
                    partial.discard()
                    context.progress.finish(url, with: nil)
                    throw error
                }
            case .success(.notModified):
                context.validators.renew(url)
                guard let cached else { throw AsyncMediaError.httpStatus(304, url: url) }
                context.progress.finish(url, with: nil)
                return cached
            case .success(.redirect(let location)):
                redirects += 1
                guard redirects <= maximumRedirects else {
                    context.progress.finish(url, with: nil)
                    throw AsyncMediaError.tooManyRedirects(url, count: redirects)
                }
                guard let next = URL(string: location, relativeTo: target)?.absoluteURL,
                      let scheme = next.scheme?.lowercased(), scheme == "http" || scheme == "https"
                else {
                    context.progress.finish(url, with: nil)
                    throw AsyncMediaError.malformedResponse(url, reason: "a redirect to \(location.prefix(200).debugDescription)")
                }
                guard context.allowsRedirect(target, next) else {
                    partial.discard()
                    context.progress.finish(url, with: nil)
                    throw AsyncMediaError.redirectRefused(from: target, to: next)
                }
                target = next
            case .failure(AsyncMediaError.httpStatus(416, _)) where resume != nil,
                 .failure(is TransferStateMachine.AnotherVersion) where resume != nil:
                resume = nil  // the part kept no longer fits the file, or is of another version: start over
            case .failure(is TransferStateMachine.AnotherVersion) where known != nil:
                known = nil  // a 304 of another version renews nothing: fetch it whole
            case .failure(let error):
                let keep = partial.resumable && plan?.resumeValidator != nil && partial.hasValidator && partial.size > 0
                    && isInterruption(error) && folder.generation == generation
                // Emptied: a caller told "disk full" finds the space free when it tries again.
                if !keep { partial.discard(emptying: true) }
                context.progress.finish(url, with: nil)
                // The server cannot be reached (or fails): the file kept is better than nothing.
                if let cached, isInterruption(error) || isServerFailure(error), !(error is CancellationError) { return cached }
                throw error
            }
        }
    }

    /// One request of a run, to `target`, into the partial file.
    private static func attempt(
        url: URL, target: URL, partial: MediaFolder.Partial, resumingFrom: Int64?, validator: String?,
        revalidating known: Validators.Entry?, run: RunPriority?, context: Context
    ) async -> (TransferStateMachine.BodyPlan?, Result<TransferStateMachine.Outcome, any Error>) {
        var headers = target == url ? context.originHeaders
            : requestHeaders(context.headers, for: target, origin: url, decodes: context.transport.decodesContentCodings)
        if let resumingFrom, let validator {
            headers.append(HTTPField(name: "Range", value: "bytes=\(resumingFrom)-"))
            headers.append(HTTPField(name: "If-Range", value: validator))
        } else if let known {
            if let etag = known.etag { headers.append(HTTPField(name: "If-None-Match", value: etag)) }
            if let lastModified = known.lastModified { headers.append(HTTPField(name: "If-Modified-Since", value: lastModified)) }
        }
        let folderLimit = context.folder.sizeLimit.map { Int64($0) }
        // Not `[a, b].compactMap { $0 }.min()`: two arrays allocated per request.
        let maximum = folderLimit.map { min($0, context.limits.maximumSize ?? $0) } ?? context.limits.maximumSize
        let request = TransferStateMachine.Request(
            url: url, resumingFrom: validator == nil ? nil : resumingFrom, resumeValidator: resumingFrom == nil ? nil : validator,
            conditional: known != nil && resumingFrom == nil, revalidatedETag: resumingFrom == nil ? known?.etag : nil,
            maximumSize: maximum, limitIsFolderSize: maximum != nil && maximum == folderLimit && maximum != context.limits.maximumSize,
            transportDecodes: context.transport.decodesContentCodings
        )
        // A run cancelled while it prepared does not take a slot it would give back at once.
        if Task.isCancelled { return (nil, .failure(CancellationError())) }
        // The transfer owns the file too, until its transport is done with it, which may be after
        // this run moved on (a cancel resumes the run at once).
        let ticket = context.gate.ticket()
        let transfer = Transfer(
            request: request, file: Transfer.FileTarget(path: partial.path, descriptor: partial.file.retain(), existing: resumingFrom ?? 0),
            limits: context.limits, writeBytes: context.writeBytes,
            bodyStarts: { plan in
                // A body smaller than this is fetched again whole: resuming it would save less than
                // recording its validator costs (a file created, renamed and deleted per download).
                let worthResuming = plan.expectedTotal.map { $0 >= MediaFolder.smallestResumable } ?? true
                partial.saveValidator(partial.resumable && worthResuming ? plan.resumeValidator : nil, for: url)
            },
            report: { [progress = context.progress] in progress.report($0, for: url) },
            slot: (context.gate, ticket)
        )
        let sent = DownloadRequest(url: target, headers: headers, limits: context.limits)
        let begin: @Sendable () -> Void = { [transport = context.transport] in
            // Withdrawn after its last look at cancellation, before its wait: a request nobody
            // wants is not sent (its slot goes straight back).
            if run?.isWithdrawn == true {
                transfer.withdrawnAtItsStart()
                return
            }
            transfer.moved()
            transfer.attach(transport.start(sent, into: transfer))
        }
        if context.startsInSinkCalls {
            context.gate.enter(ticket, priority: run, start: begin)
        } else {
            context.gate.enter(ticket, priority: run) { Task.detached { begin() } }
        }
        do {
            let outcome = try await transfer.wait()
            return (transfer.plan, .success(outcome))  // read after the wait: the head came by then
        } catch {
            return (transfer.plan, .failure(error))
        }
    }

    /// The headers of a request to `target` for a download of `origin`: the configured ones (those
    /// carrying credentials only to `origin`'s own scheme, host and port), and the encodings this
    /// side can decode.
    static func requestHeaders(_ configured: [HTTPField], for target: URL, origin: URL, decodes: Bool) -> [HTTPField] {
        requestHeaders(configured, sameOrigin: target == origin || Self.origin(of: target) == Self.origin(of: origin), decodes: decodes)
    }

    /// The headers of a request to the download's own origin (`sameOrigin`) or to another.
    static func requestHeaders(_ configured: [HTTPField], sameOrigin: Bool, decodes: Bool) -> [HTTPField] {
        var headers = configured.filter { field in
            let name = field.name.lowercased()
            if reservedHeaders.contains(name) { return false }
            return sameOrigin || !isCredential(name)
        }
        if !decodes { headers.append(HTTPField(name: "Accept-Encoding", value: "gzip, deflate")) }
        return headers
    }

    /// Headers AsyncMedia sets itself, whatever `headers` says.
    static let reservedHeaders: Set<String> = [
        "host", "connection", "accept-encoding", "content-length", "transfer-encoding", "te", "range", "if-range",
        "if-none-match", "if-modified-since", "upgrade",
    ]

    /// Whether a header named `name` (lowercased) carries credentials.
    static func isCredential(_ name: String) -> Bool {
        if ["authorization", "proxy-authorization", "cookie"].contains(name) { return true }
        return ["api-key", "apikey", "api_key", "token", "secret", "password", "session", "auth"].contains { name.contains($0) }
    }

    /// Scheme, host (lowercased) and port, with the default port filled in.
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }

    /// A failure that a resume can continue after: the connection dropped, a timeout, a cancel.
    static func isInterruption(_ error: any Error) -> Bool {
        if error is CancellationError { return true }
        if let error = error as? URLError {
            return [.networkConnectionLost, .timedOut, .cannotConnectToHost, .cannotFindHost, .notConnectedToInternet, .secureConnectionFailed]
                .contains(error.code)
        }
        if case .incompleteBody? = error as? AsyncMediaError { return true }
        return false
    }

    /// A 5xx answer: the server failed, the file kept may still be served.
    static func isServerFailure(_ error: any Error) -> Bool {
        switch error as? AsyncMediaError {
        case .httpStatus(let status, _)?: (500..<600).contains(status)
        case .unavailable?: true
        default: false
        }
    }
}

/// A download's key: its canonical URL, with its file's name, worked out once (a SHA-256 of the URL)
/// by the look for a cached file that came first, so the download does not work it out again. Equal
/// and hashed by the URL alone: the name is a function of it.
struct MediaDownload: Hashable, Sendable {
    let url: URL
    let name: String

    static func == (lhs: MediaDownload, rhs: MediaDownload) -> Bool { lhs.url == rhs.url }
    func hash(into hasher: inout Hasher) { hasher.combine(url) }
}

/// What each downloaded file was served with (its `ETag` and `Last-Modified`) and when it was
/// fetched or last revalidated: how a file older than a time-to-live is revalidated.
final class Validators: Sendable {
    struct Entry: Codable, Sendable, Equatable {
        var etag: String?
        var lastModified: String?
        /// Seconds since 1970 (wall time: it must survive a restart).
        var fetchedAt: Double
    }

    /// Keyed by ``RedactedURL/recorded(_:)``: a URL's password is never written to the folder.
    private let storage: ValueMappedStorage<DiskStorage<String>, Entry>
    private let now: @Sendable () -> Date

    init(directory: URL, now: @escaping @Sendable () -> Date = { Date() }) {
        storage = DiskStorage<String>(directory: directory.appendingPathComponent(".avenues-validators", isDirectory: true), countLimit: 65_536)
            .codable(Entry.self)
        self.now = now
    }

    /// Whether `url`'s file may be used without asking the server.
    func isFresh(_ url: URL, timeToLive: Duration?) -> Bool {
        guard let timeToLive else { return true }
        guard let entry = storage.value(for: RedactedURL.recorded(url)) else { return false }
        let age = now().timeIntervalSince1970 - entry.fetchedAt
        // Recorded more than a second ahead (while the wall clock was ahead, since set right): its
        // age is unknown, so it is revalidated; counted as 0, a day ahead went a day unasked.
        guard age >= -1 else { return false }
        return max(0, age) < Saturating.seconds(timeToLive)
    }

    /// What was recorded for `url`; a validator that is not a valid field value (an entry damaged
    /// on disk, or written by a build that did not check) is left out: it is sent in a request.
    func validators(for url: URL) -> Entry? {
        guard var entry = storage.value(for: RedactedURL.recorded(url)) else { return nil }
        if let etag = entry.etag, HTTPField(name: "If-None-Match", value: etag).problem != nil { entry.etag = nil }
        if let date = entry.lastModified, HTTPField(name: "If-Modified-Since", value: date).problem != nil { entry.lastModified = nil }
        return entry
    }

    /// Records a file just downloaded.
    func record(_ plan: TransferStateMachine.BodyPlan?, for url: URL) {
        storage.set(Entry(etag: plan?.etag, lastModified: plan?.lastModified, fetchedAt: now().timeIntervalSince1970), for: RedactedURL.recorded(url))
    }

    /// The file was revalidated (304): it is fresh again.
    func renew(_ url: URL) {
        var entry = storage.value(for: RedactedURL.recorded(url)) ?? Entry(fetchedAt: 0)
        entry.fetchedAt = now().timeIntervalSince1970
        storage.set(entry, for: RedactedURL.recorded(url))
    }

    func removeAll() {
        storage.removeAll()
    }
}

/// The subscribers to each URL's progress.
final class ProgressHub: Sendable {
    private struct Subscribers {
        var next: UInt64 = 0
        var byURL: [URL: [UInt64: AsyncStream<DownloadProgress>.Continuation]] = [:]
    }

    private let subscribers = Locked(Subscribers())
    /// How many subscriptions are open, read without the lock: most downloads have none, and their
    /// reports then cost no lock and no hashing of the URL.
    private let open = Atomic<Int>(0)

    func subscribe(_ continuation: AsyncStream<DownloadProgress>.Continuation, to url: URL) {
        // Counted before it is listed: a finish that reads no subscription open finds none listed
        // (it is as if the finish came first).
        open.add(1, ordering: .sequentiallyConsistent)
        let id = subscribers.withLock { subscribers in
            subscribers.next += 1
            subscribers.byURL[url, default: [:]][subscribers.next] = continuation
            return subscribers.next
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            subscribers.withLock { subscribers in
                subscribers.byURL[url]?[id] = nil
                if subscribers.byURL[url]?.isEmpty == true { subscribers.byURL[url] = nil }
            }
            open.subtract(1, ordering: .relaxed)
        }
    }

    func report(_ progress: DownloadProgress, for url: URL) {
        guard open.load(ordering: .relaxed) > 0 else { return }
        let continuations = subscribers.withLock { Array(($0.byURL[url] ?? [:]).values) }
        for continuation in continuations { continuation.yield(progress) }
    }

    /// Ends every subscription to `url`, after a last value if the download completed.
    func finish(_ url: URL, with last: DownloadProgress?) {
        guard open.load(ordering: .sequentiallyConsistent) > 0 else { return }
        let continuations = subscribers.withLock { Array(($0.byURL.removeValue(forKey: url) ?? [:]).values) }
        for continuation in continuations {
            if let last { continuation.yield(last) }
            continuation.finish()
        }
    }
}

/// The claims of one ``AsyncMedia/files(for:priority:)``: how many answers are still to come, and
/// whether its reader stopped (then the claims are handed back once, and no more are kept).
final class ClaimedList<Claim: Sendable>: Sendable {
    private struct State {
        var unanswered: Int
        var claims: [Claim] = []
        var stopped = false
    }

    private let state: Locked<State>

    init(count: Int) {
        state = Locked(State(unanswered: count))
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Counts an answer; true for the last.
    func answered() -> Bool {
        state.withLock { state in
            state.unanswered -= 1
            return state.unanswered == 0
        }
    }

    /// Keeps `claim`; false if the reader stopped (the caller releases it).
    func add(_ claim: Claim) -> Bool {
        state.withLock { state in
            guard !state.stopped else { return false }
            state.claims.append(claim)
            return true
        }
    }

    /// Marks the reader gone; returns the claims kept so far (each once).
    func stop() -> [Claim] {
        state.withLock { state in
            state.stopped = true
            defer { state.claims = [] }
            return state.claims
        }
    }
}
