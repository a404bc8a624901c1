import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads files once, streamed to disk, and keeps them in a folder: what a list uses to show
/// downloaded media by row.
///
/// - **Once per URL.** However many callers ask for a URL, one download runs; each caller's claim
///   is counted, and when every caller has left (their tasks cancelled) the transfer stops and its
///   temporary file is deleted.
/// - **Streamed.** The body is written to a hidden temporary file chunk by chunk as it arrives, and
///   the network waits for the disk, so memory does not grow with the file. Only a complete 2xx body (its length checked against
///   `Content-Length` when the server gives one) is moved into the cache, with one `rename(2)`.
///   A non-2xx status is ``AsyncMediaError/httpStatus(_:url:)``; nothing is cached.
/// - **Cached.** Files are assumed immutable: a cached file is returned without asking the server.
///   Names are a stable hash of the URL plus its path extension. With a `sizeLimit`, least recently
///   used files are deleted down to 80 % of it.
/// - `file:` URLs are returned as they are; schemes other than `http`/`https` are an error.
///
/// `AsyncMedia` is a ``Processor`` (URL → local file URL), so an ``Avenue`` can show downloads by
/// row. It is thread-safe.
///
/// ```swift
/// let media = AsyncMedia(directory: cacheFolder)
/// let file = try await media.request(url: imageURL)
/// for await progress in media.progress(url: videoURL) { print(progress) }
/// ```
public final class AsyncMedia: Processor {
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

    private let folder: MediaFolder
    private let progress: ProgressHub
    private let session: URLSession
    private let downloader: AutoProcessor<URL, URL>

    /// Creates a media cache in `directory` (created on the first download).
    ///
    /// - Parameters:
    ///   - directory: the folder for downloaded files; use one folder per instance.
    ///   - sizeLimit: the largest total size in bytes; `nil` (the default) for no limit.
    ///   - maxConcurrentDownloads: the most transfers running at once; 6 by default.
    ///   - configuration: the URL session's configuration; `.default` by default. It is copied, and
    ///     the copy's `urlCache` is switched off: the downloaded files are the cache.
    public init(
        directory: URL,
        sizeLimit: Int? = nil,
        maxConcurrentDownloads: Int = 6,
        configuration: URLSessionConfiguration = .default
    ) {
        let folder = MediaFolder(directory: directory, sizeLimit: sizeLimit)
        let progress = ProgressHub()
        let router = DownloadRouter()
        #if canImport(FoundationNetworking)
        let queue: OperationQueue = BackpressureQueue(limit: 64)  // at most 64 chunks (about 1 MiB) waiting
        #else
        let queue = OperationQueue()  // Apple's URLSession buffers and throttles by itself
        queue.maxConcurrentOperationCount = 1  // a download's chunks are written in order
        #endif
        let configuration = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let session = URLSession(configuration: configuration, delegate: router, delegateQueue: queue)
        self.folder = folder
        self.progress = progress
        self.session = session
        downloader = AutoProcessor(maxConcurrent: maxConcurrentDownloads) { url in
            try await Self.download(url, session: session, router: router, folder: folder, progress: progress)
        }
    }

    deinit {
        session.invalidateAndCancel()
    }

    // MARK: Requests

    /// The local file for `url`: the cached file at once, else one download shared by every caller.
    ///
    /// - Throws: ``AsyncMediaError`` (unsupported scheme, HTTP status, incomplete body),
    ///   ``DiskStorageError`` (the folder or file cannot be written), the transfer's `URLError`, or
    ///   `CancellationError` if the caller's task is cancelled.
    public func request(url: URL) async throws -> URL {
        if url.isFileURL { return url }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw AsyncMediaError.unsupportedScheme(url)
        }
        if let file = folder.cachedFile(for: url) { return file }
        return try await downloader.value(for: url)
    }

    /// Same as ``request(url:)``, so AsyncMedia can serve an ``Avenue``.
    public func process(_ url: URL) async throws -> URL {
        try await request(url: url)
    }

    /// The cached file for `url`, if it was downloaded; never downloads. A `file:` URL is itself.
    public func cachedValue(url: URL) -> URL? {
        url.isFileURL ? url : folder.cachedFile(for: url)
    }

    /// The progress of `url`'s download, as an async sequence that ends when the download does. A
    /// cached file reports once, complete. Subscribe before ``request(url:)`` to see the whole
    /// download; at most the newest value waits for a slow reader.
    public func progress(url: URL) -> AsyncStream<DownloadProgress> {
        let (stream, continuation) = AsyncStream.makeStream(of: DownloadProgress.self, bufferingPolicy: .bufferingNewest(1))
        progress.subscribe(continuation, to: url)
        // Checked after subscribing, so a download that just finished is not missed.
        if let file = cachedValue(url: url) {
            let size = Int64((try? FileSystem.linkStatus(file.path).size) ?? 0)
            continuation.yield(DownloadProgress(received: size, expected: size, isComplete: true))
            continuation.finish()
        }
        return stream
    }

    /// Cancels every download in flight and deletes every downloaded file. The instance stays usable.
    public func clear() async {
        downloader.cancelAll()
        folder.removeAll()
    }

    /// Downloaded files and their total size in bytes.
    public var usage: (count: Int, size: Int) { folder.usage }

    // MARK: The seeds' static spelling

    /// `AsyncMedia.shared.request(url:)`, as the later AsyncMux seed spells it.
    public static func request(url: URL) async throws -> URL { try await shared.request(url: url) }
    /// `AsyncMedia.shared.cachedValue(url:)`.
    public static func cachedValue(url: URL) -> URL? { shared.cachedValue(url: url) }
    /// `AsyncMedia.shared.clear()`.
    public static func clear() async { await shared.clear() }

    // MARK: Downloading

    /// One download run: into a temporary file, checked, then moved into place.
    private static func download(
        _ url: URL, session: URLSession, router: DownloadRouter, folder: MediaFolder, progress: ProgressHub
    ) async throws -> URL {
        if let file = folder.cachedFile(for: url) { return file }  // finished while this run was queued
        let (temporary, file) = try folder.makeTemporaryFile(for: url)
        let download = Download(url: url, temporaryPath: temporary, file: file) { progress.report($0, for: url) }
        let task = session.dataTask(with: URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData))
        router.register(download, for: task)
        do {
            let size = try await withTaskCancellationHandler {
                task.resume()
                return try await download.waitUntilFinished()
            } onCancel: {
                task.cancel()
            }
            let local = try folder.commit(temporary, for: url, size: size)
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
