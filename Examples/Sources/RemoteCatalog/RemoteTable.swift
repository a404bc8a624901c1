import Avenues
import FileCatalog
import Foundation
import Synchronization
import TerminalUI

/// A downloaded file's summary, and its size (for indexes that do not give one).
public struct RemoteSummary: Sendable, Hashable {
    /// What the computed columns show.
    public var summary: FileSummary
    /// The size of the downloaded file.
    public var size: Int64
}

/// The rows `browse URL` shows: the files and folders under a remote folder, listed a page at a
/// time, and each shown file downloaded by `AsyncMedia` and summarized from the local copy.
///
/// The summaries' avenue has `AsyncMedia` as its processor (through `asyncMapValues`, which keeps
/// it one scheduler): a row's priority reaches the download slot, a row that scrolls away cancels
/// its download, and a file already in the media folder is not downloaded again unless it is older
/// than ``fileTimeToLive`` — then it is revalidated (a `304` moves no body; a file that changed is
/// downloaded again), and one that cannot be revalidated, the server gone, is used as it is: which
/// is also what makes a second run work offline. Which rows' files load is up to the screen
/// (``show(_:details:)``): it shows the listing while it follows a growing end, and downloads only
/// where the user stops.
public final class RemoteTable: Sendable {
    /// The starting URL.
    public let root: URL
    /// The rows, in path order.
    public let files: PagedRows<RemoteTree>
    /// The rows whose path matches the filter, found over the whole tree: its scan walks the
    /// listings ahead of the list (each fetched once, through the same cache), and while it filters
    /// the rows shown are its matches (``file(at:)``, ``count``).
    public let filtered: FilteredRows<RemoteFile>
    /// Each row's summary.
    public let summaries: Avenue<Int, URL, RemoteSummary>
    /// The downloads.
    public let media: AsyncMedia
    /// Whether the server was reached.
    public let connection: IndexConnection
    let tree: RemoteTree
    private let details: RestingPrefetcher<URL, RemoteSummary>
    private let watchers = Mutex([URL: Task<Void, Never>]())
    private let progress = Mutex([URL: DownloadProgress]())

    /// Sets up the rows under `root`.
    ///
    /// - Parameters:
    ///   - cacheFolder: where listings (`listing-pages/`) and downloads (`media/`) are kept across runs.
    ///   - maxConcurrentDownloads: downloads running at once.
    ///   - prefetchAhead: files downloaded past the screen in the scroll direction.
    ///   - maxDepth: the deepest folder listed.
    ///   - maxFiles: the most files listed.
    ///   - maxFolders: the most folders listed.
    ///   - transport: what fetches listings and files (one connection pool for both); AsyncMedia's
    ///     default if `nil`. ``transport(caFile:)`` makes one that trusts a CA file.
    ///   - fileTimeToLive: how long a downloaded file is used before the server is asked whether it
    ///     changed.
    public init(
        root: URL, cacheFolder: URL, maxConcurrentDownloads: Int = 6, prefetchAhead: Int = 40, maxDepth: Int = 32, maxFiles: Int = 100_000,
        maxFolders: Int = 10_000, transport: (any DownloadTransport)? = nil, fileTimeToLive: Duration = RemoteTable.fileTimeToLive
    ) {
        let connection = IndexConnection()
        let tree = RemoteTree(
            root: root, listingsFolder: cacheFolder.appendingPathComponent("listing-pages", isDirectory: true),
            maxDepth: maxDepth, maxFiles: maxFiles, maxFolders: maxFolders, connection: connection, transport: transport
        )
        let media = AsyncMedia(
            directory: cacheFolder.appendingPathComponent("media", isDirectory: true), sizeLimit: Self.mediaSizeLimit,
            maxConcurrentDownloads: maxConcurrentDownloads, timeToLive: fileTimeToLive, transport: transport
        )
        let summarize = media.asyncMapValues { file in
            let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0
            let summary = try await FileSummarizer().process(FileRef(path: file.path, size: size, modified: 0))
            return RemoteSummary(summary: summary, size: size)
        }
        let files = PagedRows(source: tree, configuration: PagingConfiguration(pageSize: 100, prefetchDistance: 100))
        let filtered = FilteredRows<RemoteFile>(rows: files, chunk: 500, maxResident: 2_000) { (file: RemoteFile, query: TextQuery) -> Bool in query.matches(file.path) }
        self.root = tree.root
        self.tree = tree
        self.media = media
        self.connection = connection
        self.files = files
        self.filtered = filtered
        let summaries = Avenue<Int, URL, RemoteSummary>(storage: MemoryStorage(countLimit: 5_000), processor: summarize)
        self.summaries = summaries
        details = RestingPrefetcher(avenue: summaries, ahead: prefetchAhead) { [files, filtered] row in
            Self.file(at: row, files: files, filtered: filtered).flatMap { $0.isFolder || $0.problem != nil ? nil : $0.url }
        }
        summaries.onError = { [connection] error, _ in
            if error.isSilenceable { connection.noteReachable(false) }
        }
    }

    /// How long a downloaded file is used without asking the server whether it changed: as long as
    /// a listing (``RemoteTree/listingTimeToLive``). Files were kept for ever, so a file changed on
    /// the server showed its old lines, size and checksum in every later run.
    public static let fileTimeToLive = RemoteTree.listingTimeToLive

    /// The most the downloads may take on disk, and so the largest file that is downloaded.
    public static let mediaSizeLimit = 512 << 20

    /// The default cache folder: `avenues-examples/remote` in the platform cache folder.
    public static func defaultCacheFolder() throws -> URL {
        try DiskStorage<String>.cacheFolder().appendingPathComponent("avenues-examples/remote", isDirectory: true)
    }

    /// Lists the root folder (from the server, or from the disk when it cannot be reached); throws
    /// when neither can give it.
    public func checkRoot() async throws { try await tree.checkRoot() }

    /// What the crawl stopped at, if it stopped before the end of the tree.
    public var crawlLimit: String? { tree.limits.reachedLimit }

    /// Folders listed so far.
    public var foldersListed: Int { tree.limits.foldersListed }

    /// Whether the rows are the filter's matches.
    public var isFiltering: Bool { filtered.query != nil }

    /// Shows only the rows whose path matches `query` (`nil`: every row again).
    public func filter(_ query: TextQuery?) {
        filtered.filter(query)
        refreshDetails()
    }

    /// How many rows there are: the matches while filtering.
    public var count: RowCount { isFiltering ? filtered.count : files.count }

    /// Row `row`'s file, once listed (a match's, while filtering).
    public func file(at row: Int) -> RemoteFile? { Self.file(at: row, files: files, filtered: filtered) }

    private static func file(at row: Int, files: PagedRows<RemoteTree>, filtered: FilteredRows<RemoteFile>) -> RemoteFile? {
        filtered.query != nil ? filtered.item(at: row) : files.item(at: row)
    }

    /// The list shows `rows`; their files (and the prefetch window's) load if the list rests
    /// there (`details`; see ``RestingPrefetcher``).
    public func show(_ rows: Range<Int>, details resting: Bool = true) {
        if isFiltering {
            filtered.show(rows)
        } else {
            files.show(rows)
        }
        details.show(rows, resting: resting)
    }

    /// Row `index`'s summary, if the summaries' row `index` is this file's (the rows' files change
    /// when the filter does, before the prefetcher has shown the rows again).
    private func summary(at index: Int, of file: RemoteFile) -> (value: RemoteSummary?, error: (any Error)?) {
        guard summaries.key(at: index) == file.url else { return (nil, nil) }
        return (summaries.item(at: index), summaries.state(at: index).error)
    }

    /// Shows the details of the rows last shown again: rows listed since may have files to load.
    public func refreshDetails() {
        details.refresh()
    }

    /// What row `index` shows in its computed columns now.
    public func content(at index: Int) -> RowContent {
        guard let file = file(at: index) else { return .pending }
        if let problem = file.problem { return .failed(problem) }
        if file.isFolder { return .folder }
        let summary = summary(at: index, of: file)
        if let value = summary.value { return .loaded(value.summary) }
        if let error = summary.error { return .failed(RemoteTree.message(for: error)) }
        return .pending
    }

    /// Row `index`'s size: the index's, else the downloaded file's, else unknown (`nil` for a folder).
    public func size(at index: Int) -> Int64? {
        guard let file = file(at: index), !file.isFolder else { return nil }
        return file.size ?? summary(at: index, of: file).value?.size
    }

    /// The newest progress of row `index`'s download, if it is being watched.
    public func progress(at index: Int) -> DownloadProgress? {
        guard let url = file(at: index)?.url else { return nil }
        return progress.withLock { $0[url] }
    }

    /// The local copy of row `index`'s file, if it was downloaded.
    public func localFile(at index: Int) -> URL? {
        guard let file = file(at: index), !file.isFolder else { return nil }
        return media.cachedFile(for: file.url)
    }

    /// Watches the downloads of `rows` that are still loading (and stops watching the others);
    /// `changed` is called with each progress.
    public func watchProgress(of rows: Range<Int>, changed: @escaping @Sendable () -> Void) {
        var wanted = Set<URL>()
        for row in rows {
            guard let file = file(at: row), !file.isFolder, file.problem == nil, case let summary = summary(at: row, of: file),
                  summary.value == nil, summary.error == nil else { continue }
            wanted.insert(file.url)
        }
        let (stopped, started) = watchers.withLock { watchers -> ([Task<Void, Never>], [URL]) in
            let stopped = watchers.filter { !wanted.contains($0.key) }
            for url in stopped.keys { watchers[url] = nil }
            return (Array(stopped.values), wanted.filter { watchers[$0] == nil })
        }
        for task in stopped { task.cancel() }
        for url in started {
            let task = Task { [weak self, media] in
                for await update in media.progress(for: url) {
                    self?.progress.withLock { $0[url] = update }
                    changed()
                }
                self?.progress.withLock { $0[url] = nil }
            }
            let extra = watchers.withLock { watchers -> Task<Void, Never>? in
                if watchers[url] != nil { return task }
                watchers[url] = task
                return nil
            }
            extra?.cancel()
        }
    }

    /// Listings are files already kept on disk as they arrive: nothing is left to write at the end.
    public func save() {}

    /// Stops loading and watching.
    public func stop() {
        files.stop()
        filtered.stop()
        details.stop()
        let tasks = watchers.withLock { watchers in
            defer { watchers = [:] }
            return Array(watchers.values)
        }
        for task in tasks { task.cancel() }
    }
}

extension RemoteTable {
    /// Every row in order (only the matches of `filter`, if given), as soon as it and the rows
    /// before it are settled, with up to `ahead` rows listed and downloading beyond it: the whole
    /// tree streams in bounded memory. A listing that failed ends the stream: the error, if any.
    @discardableResult
    public func streamInOrder(ahead: Int, filter query: TextQuery? = nil, emit: (_ file: RemoteFile, _ size: Int64?, _ content: RowContent) -> Void) async -> (any Error)? {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        files.onChange = { _ in wake.yield() }
        summaries.onStateChange = { _ in wake.yield() }
        if let query { filter(query) }
        let matches = Task { [filtered] in
            for await _ in filtered.subscribe() { wake.yield() }
        }
        defer {
            files.onChange = nil
            summaries.onStateChange = nil
            matches.cancel()
        }
        var iterator = wakes.makeAsyncIterator()
        var next = 0
        var failure: (any Error)?
        while true {
            // Shown again on every wake: rows listed or matched since have files to load.
            show(next..<next + ahead)
            let shown = next
            while let file = file(at: next), case let content = content(at: next), content.isSettled {
                emit(file, size(at: next), content)
                next += 1
            }
            let count = count
            if count.isExact, next >= count.value { break }
            // Rows were printed: show the window from the new row before waiting, or the rows past
            // the old window would never be asked for (and no change would come).
            if next != shown { continue }
            if isFiltering, let error = filtered.error {
                failure = error
                break
            }
            if !isFiltering, case .failed(let error, _) = files.state(at: next) {
                failure = error
                break
            }
            guard await iterator.next() != nil else { break }
        }
        stop()
        return failure
    }

    /// A transport that trusts the CA certificates in the PEM file at `caFile` instead of the
    /// system's (`--ca-file`, as curl's `--cacert`); an error line if that cannot be.
    public static func transport(caFile: String) throws(CAFileProblem) -> any DownloadTransport {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: caFile, isDirectory: &isFolder), !isFolder.boolValue,
              FileManager.default.isReadableFile(atPath: caFile)
        else {
            let what = isFolder.boolValue ? "is a folder" : "cannot be read"
            throw CAFileProblem(description: "the CA file \(TerminalSafe.clean(caFile)) \(what); give a readable PEM file of CA certificates")
        }
        // A FIFO or a device: TLS would open it on the transport's thread and, for a FIFO without a
        // writer, wait there for ever.
        guard (try? URL(fileURLWithPath: caFile).resolvingSymlinksInPath().resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else {
            throw CAFileProblem(description: "the CA file \(TerminalSafe.clean(caFile)) is not a regular file (a pipe or a device); give a readable PEM file of CA certificates")
        }
        #if os(Linux)
        do {
            return try CurlTransport(caFile: caFile)
        } catch {
            throw CAFileProblem(description: error.description)
        }
        #else
        throw CAFileProblem(description: "--ca-file is read on Linux only (libcurl); here, add the CA to the system's trust settings")
        #endif
    }

    /// Why a CA file cannot be used: one line, what happened and what to do.
    public struct CAFileProblem: Error, CustomStringConvertible {
        /// The line.
        public let description: String
    }

    /// `url` as the tools show it: without the user name and password it may carry
    /// (`https://user:secret@host/`), which curl and browsers never show either.
    public static func shown(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              components.percentEncodedUser != nil || components.percentEncodedPassword != nil
        else { return url.absoluteString }
        components.percentEncodedUser = nil
        components.percentEncodedPassword = nil
        return components.string ?? "the URL given"
    }

    /// One line for a root that cannot be listed: what happened and what to do.
    public static func rootMessage(for error: any Error, root: URL) -> String {
        switch error {
        case let error as URLError where [.serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
                                          .serverCertificateNotYetValid].contains(error.code):
            "cannot make a secure connection to \(shown(root)) (\(error.localizedDescription)); if its certificate is signed by a CA of your own, give that CA with --ca-file or SSL_CERT_FILE"
        case let error as URLError where error.code == .secureConnectionFailed:
            // The handshake itself failed: a server that does not speak TLS on that port (OpenSSL's
            // "wrong version number") as often as a certificate.
            "cannot make a secure connection to \(shown(root)) (\(error.localizedDescription)); check that it serves https on that port, and if its certificate is signed by a CA of your own, give that CA with --ca-file or SSL_CERT_FILE"
        case let error as URLError:
            "cannot reach \(shown(root)) (\(error.code == .cannotConnectToHost ? "connection refused" : error.localizedDescription)), and it was never listed here before; check the URL and that the server runs"
        case let error as AsyncMediaError:
            switch error {
            case .httpStatus(let status, _): "\(shown(root)) answered HTTP \(status); give the URL of a folder listing"
            default: "\(error.description)"
            }
        case let error as DirectoryIndex.NotAnIndex:
            error.description
        default:
            String(describing: error)
        }
    }

    /// Whether `url` may name a file rather than a folder: its path has a last name, with no `/`
    /// after it (`…/app.log`, whose folder form `…/app.log/` is what a listing is asked at).
    public static func mayNameAFile(_ url: URL) -> Bool {
        !url.path.isEmpty && !url.hasDirectoryPath
    }

    /// Whether listing a folder failed because there is no folder listing there (a 4xx answer, or a
    /// page that is not an index), rather than because the server could not be reached.
    public static func isNoFolder(_ error: any Error) -> Bool {
        switch error {
        case let error as AsyncMediaError:
            if case .httpStatus(let status, _) = error { return (400..<500).contains(status) }
            return false
        case is DirectoryIndex.NotAnIndex:
            return true
        default:
            return false
        }
    }

    /// What is wrong with `argument` if it looks like a URL (`scheme://…`) that cannot be browsed,
    /// for a tool to say instead of "no such folder"; `nil` if it does not look like one, or is a
    /// remote folder URL.
    public static func urlProblem(_ argument: String) -> String? {
        guard remoteURL(argument) == nil, let separator = argument.range(of: "://") else { return nil }
        let scheme = argument[..<separator.lowerBound]
        guard let first = scheme.unicodeScalars.first, ("a"..."z").contains(first) || ("A"..."Z").contains(first),
              scheme.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) })
        else { return nil }
        switch scheme.lowercased() {
        case "http", "https":
            return "\(argument) is not a URL that can be read (it needs a host, and a port from 1 to 65535 if it has one); give the URL of a folder index, such as http://example.com/files/"
        case "file":
            let path = URL(string: argument)?.path ?? String(argument[separator.upperBound...])
            return "\(argument) is a file URL; give its path instead (\(path.isEmpty ? "/" : path))"
        default:
            return "\(scheme): URLs cannot be browsed; give an http:// or https:// URL of a folder index, or the path of a folder"
        }
    }

    /// `argument` as a remote folder URL, if it is an `http` or `https` URL with a host.
    public static func remoteURL(_ argument: String) -> URL? {
        guard let url = URL(string: argument), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host?.isEmpty == false else { return nil }
        return url
    }
}
