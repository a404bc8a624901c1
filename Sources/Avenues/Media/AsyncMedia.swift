import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads files once, streamed to disk, and keeps them in a folder: what a list uses to show
/// downloaded media by row.
///
/// - **Once per URL.** However many callers ask for a URL, one download runs; each caller's claim
///   is counted, and when every caller has left (their tasks cancelled) the transfer stops and its
///   temporary file is deleted. URLs differing only in the case of their scheme or host, a default
///   port or a `#fragment` are one URL.
/// - **Streamed, memory bounded, nobody stalled.** The body is written to a hidden temporary file by
///   the thread that reads it from the network, so the network goes no faster than the disk and
///   nothing piles up in memory, whatever the file's size (256 MiB: within a few MB of a 1 MiB
///   download). Plain `http` is read from a socket of its own (`SocketTransport`, internal); `https`, proxies
///   and bodies the server insists on encoding go through URLSession.
/// - **Only whole files are cached.** A 200 or 203 answer whose body has its announced
///   `Content-Length` (checked only when the body is not `gzip`-encoded) is moved into the cache
///   with one `rename(2)`. A 206 (partial) or 204 (empty) answer, another status, a body cut short,
///   or a download stopped by a ``DownloadLimits`` caches nothing and throws ``AsyncMediaError``.
///   A body without a length that ends when the server closes the connection cannot be told from
///   one cut short, and is cached.
/// - **Cached.** Files are assumed immutable: a cached file is returned without asking the server.
///   Names are a stable hash of the URL plus its path extension. With a `sizeLimit`, least recently
///   used files are deleted down to 80 % of it, across processes sharing the folder. A deleted
///   folder is created again on the next download.
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

    /// The folder holding the downloaded files.
    public var directory: URL { folder.directory }
    /// The largest total size of the downloaded files in bytes, or `nil` for no limit (the default).
    public var sizeLimit: Int? { folder.sizeLimit }
    /// When a download is given up.
    public let limits: DownloadLimits

    private let folder: MediaFolder
    private let progress: ProgressHub
    private let session: SessionTransport
    private let downloader: AutoProcessor<URL, URL>
    /// URLs whose server asked to wait (429/503 with `Retry-After`).
    private let gate = RetryGate<URL>()

    /// Creates a media cache in `directory` (created on the first download).
    ///
    /// - Parameters:
    ///   - directory: the folder for downloaded files; use one folder per instance (several
    ///     processes may share it).
    ///   - sizeLimit: the largest total size in bytes; `nil` (the default) for no limit.
    ///   - maxConcurrentDownloads: the most transfers running at once; 6 by default.
    ///   - limits: when a download is given up; ``DownloadLimits/default`` (60 s without a byte, one
    ///     hour in all, no size limit) by default.
    ///   - configuration: the URL session's configuration, for `https` and proxies; `.default` by
    ///     default. It is copied, and the copy's `urlCache` is switched off: the downloaded files are
    ///     the cache. Its `httpAdditionalHeaders` are sent on every request.
    public convenience init(
        directory: URL,
        sizeLimit: Int? = nil,
        maxConcurrentDownloads: Int = 6,
        limits: DownloadLimits = .default,
        configuration: URLSessionConfiguration = .default
    ) {
        self.init(
            directory: directory, sizeLimit: sizeLimit, maxConcurrentDownloads: maxConcurrentDownloads, limits: limits,
            configuration: configuration, sockets: true,
            writeBytes: { descriptor, bytes in try FileSystem.writeAll(descriptor, [bytes], path: "") }
        )
    }

    /// `writeBytes` writes a body's bytes to the temporary file; tests replace it to fill the disk.
    /// `sockets: false` sends `http` through URLSession too, so tests cover both transports.
    init(
        directory: URL,
        sizeLimit: Int?,
        maxConcurrentDownloads: Int,
        limits: DownloadLimits,
        configuration: URLSessionConfiguration,
        sockets: Bool,
        writeBytes: @escaping @Sendable (Int32, UnsafeRawBufferPointer) throws -> Void
    ) {
        let folder = MediaFolder(directory: directory, sizeLimit: sizeLimit)
        let progress = ProgressHub()
        let session = SessionTransport(configuration: configuration)
        let headers = (configuration.httpAdditionalHeaders ?? [:]).compactMap { name, value -> (String, String)? in
            guard let name = name as? String else { return nil }
            return (name, "\(value)")
        }
        self.folder = folder
        self.progress = progress
        self.session = session
        self.limits = limits
        downloader = AutoProcessor(maxConcurrent: maxConcurrentDownloads) { url in
            try await Self.download(
                url, folder: folder, progress: progress, session: session, sockets: sockets, headers: headers, limits: limits,
                writeBytes: writeBytes
            )
        }
    }

    deinit {
        session.invalidate()
    }

    // MARK: Requests

    /// The local file for `url`: the cached file at once, else one download shared by every caller.
    ///
    /// A file this returns existed when it returned; ``clear()-swift.method`` (or the size limit) may
    /// delete it later. A request overlapping a ``clear()-swift.method`` throws `CancellationError`.
    ///
    /// - Throws: ``AsyncMediaError`` (unsupported scheme, HTTP status, incomplete body, a limit, the
    ///   folder; `.unavailable` for a 429 or 503, repeated without asking the server until its
    ///   `Retry-After` is over), a `URLError` when the network fails (see
    ///   `Error.isSilenceable`), or `CancellationError` if the caller's task is cancelled or
    ///   ``clear()-swift.method`` runs meanwhile.
    public func file(for url: URL) async throws -> URL {
        if url.isFileURL { return url }
        let url = try Self.canonical(url)
        let generation = folder.generation
        if let file = folder.cachedFile(for: url) { return file }
        if let error = gate.blocked(url) { throw error }  // the server asked to wait
        // At the priority of the avenue row asking, if one is (`.visible` otherwise).
        let file: URL
        do {
            file = try await downloader.process(url)
        } catch {
            gate.note(error, for: url)
            throw error
        }
        guard folder.stillHolds(file, since: generation) else { throw CancellationError() }
        return file
    }

    /// Same as ``file(for:)``, so AsyncMedia can serve an ``Avenue`` (at the priority of the row
    /// asking).
    public func process(_ url: URL) async throws -> URL {
        try await file(for: url)
    }

    /// The cached file for `url`, if it was downloaded; never downloads. A `file:` URL is itself.
    public func cachedFile(for url: URL) -> URL? {
        if url.isFileURL { return url }
        return (try? Self.canonical(url)).flatMap(folder.cachedFile(for:))
    }

    /// The progress of `url`'s download, as an async sequence that ends when the download does. A
    /// cached file reports once, complete. Subscribe before ``file(for:)`` to see the whole
    /// download; at most the newest value waits for a slow reader.
    public func progress(for url: URL) -> AsyncStream<DownloadProgress> {
        let (stream, continuation) = AsyncStream.makeStream(of: DownloadProgress.self, bufferingPolicy: .bufferingNewest(1))
        let key = (try? Self.canonical(url)) ?? url
        progress.subscribe(continuation, to: key)
        // Checked after subscribing, so a download that just finished is not missed.
        if let file = cachedFile(for: url) {
            let size = Int64((try? FileSystem.linkStatus(file.path).size) ?? 0)
            continuation.yield(DownloadProgress(received: size, expected: size, isComplete: true))
            continuation.finish()
        }
        return stream
    }

    /// Cancels every download in flight and deletes every downloaded file. The instance stays usable.
    public func clear() {
        downloader.cancelAll()
        folder.removeAll()
    }

    /// Downloaded files and their total size in bytes.
    public var usage: DiskUsage {
        let usage = folder.usage
        return DiskUsage(count: usage.count, size: usage.size)
    }

    /// Whether no download is queued or running (for tests).
    var downloaderIsIdle: Bool { downloader.tableSizes.isIdle }

    /// Downloads queued and running now.
    public var activity: AutoProcessorActivity { downloader.activity }

    // MARK: Earlier names

    /// ``file(for:)``: a URL is a key, labelled `for:` everywhere (CONTRIBUTING.md); AsyncMux's name.
    @available(*, deprecated, renamed: "file(for:)")
    public func request(url: URL) async throws -> URL { try await file(for: url) }

    /// ``cachedFile(for:)``: a URL is a key, labelled `for:` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "cachedFile(for:)")
    public func cachedValue(url: URL) -> URL? { cachedFile(for: url) }

    /// ``progress(for:)``: a URL is a key, labelled `for:` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "progress(for:)")
    public func progress(url: URL) -> AsyncStream<DownloadProgress> { progress(for: url) }

    /// Downloads through ``shared``, as AsyncMux spells it: `AsyncMedia.shared.file(for: url)`.
    @available(*, deprecated, message: "use AsyncMedia.shared.file(for:), or an instance with a folder of your own")
    public static func request(url: URL) async throws -> URL { try await shared.file(for: url) }

    /// The file ``shared`` holds for `url`, as AsyncMux spells it: `AsyncMedia.shared.cachedFile(for: url)`.
    @available(*, deprecated, message: "use AsyncMedia.shared.cachedFile(for:)")
    public static func cachedValue(url: URL) -> URL? { shared.cachedFile(for: url) }

    /// Deletes every file ``shared`` downloaded and cancels its downloads, as AsyncMux spells it:
    /// `AsyncMedia.shared.clear()`.
    @available(*, deprecated, message: "use AsyncMedia.shared.clear()")
    public static func clear() { shared.clear() }

    // MARK: Downloading

    /// The URL a download is known by: scheme and host lowercased, the default port and the fragment
    /// dropped. Throws for schemes other than `http` and `https`.
    static func canonical(_ url: URL) throws(AsyncMediaError) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { throw .unsupportedScheme(url) }
        components.scheme = scheme
        if let host = components.percentEncodedHost { components.percentEncodedHost = host.lowercased() }
        components.fragment = nil
        if components.port == (scheme == "http" ? 80 : 443) { components.port = nil }
        return components.url ?? url
    }

    /// One download run: into a temporary file, checked, then moved into place.
    private static func download(
        _ url: URL, folder: MediaFolder, progress: ProgressHub, session: SessionTransport, sockets: Bool,
        headers: [(String, String)], limits: DownloadLimits,
        writeBytes: @escaping @Sendable (Int32, UnsafeRawBufferPointer) throws -> Void
    ) async throws -> URL {
        if let file = folder.cachedFile(for: url) { return file }  // finished while this run was queued
        let generation = folder.generation
        let (temporary, descriptor): (String, Int32)
        do {
            (temporary, descriptor) = try folder.makeTemporaryFile(for: url)
        } catch {
            throw AsyncMediaError.cannotStore(url, reason: error)
        }
        let transfer = Transfer(
            url: url, temporaryPath: temporary, descriptor: descriptor, limits: limits, writeBytes: writeBytes,
            report: { progress.report($0, for: url) }
        )
        if sockets, SocketTransport.handles(url) {
            SocketTransport.start(url, headers: headers, transfer: transfer) { handedOver in
                session.start(handedOver, headers: headers, transfer: transfer)
            }
        } else {
            session.start(url, headers: headers, transfer: transfer)
        }
        do {
            let size = try await transfer.wait()
            let local = try folder.commit(temporary, for: url, size: size, since: generation)
            progress.finish(url, with: DownloadProgress(received: size, expected: size, isComplete: true))
            return local
        } catch {
            try? FileSystem.remove(temporary)
            progress.finish(url, with: nil)
            throw error
        }
    }
}

/// The subscribers to each URL's progress.
final class ProgressHub: Sendable {
    private struct Subscribers {
        var next: UInt64 = 0
        var byURL: [URL: [UInt64: AsyncStream<DownloadProgress>.Continuation]] = [:]
    }

    private let subscribers = Locked(Subscribers())

    func subscribe(_ continuation: AsyncStream<DownloadProgress>.Continuation, to url: URL) {
        let id = subscribers.withLock { subscribers in
            subscribers.next += 1
            subscribers.byURL[url, default: [:]][subscribers.next] = continuation
            return subscribers.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { subscribers in
                subscribers.byURL[url]?[id] = nil
                if subscribers.byURL[url]?.isEmpty == true { subscribers.byURL[url] = nil }
            }
        }
    }

    func report(_ progress: DownloadProgress, for url: URL) {
        let continuations = subscribers.withLock { Array(($0.byURL[url] ?? [:]).values) }
        for continuation in continuations { continuation.yield(progress) }
    }

    /// Ends every subscription to `url`, after a last value if the download completed.
    func finish(_ url: URL, with last: DownloadProgress?) {
        let continuations = subscribers.withLock { Array(($0.byURL.removeValue(forKey: url) ?? [:]).values) }
        for continuation in continuations {
            if let last { continuation.yield(last) }
            continuation.finish()
        }
    }
}
