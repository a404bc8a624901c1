import Avenues
import Foundation
import Synchronization


/// A file or a folder found under the remote folder.
public struct RemoteFile: Sendable, Hashable {
    /// The path relative to the starting URL, names percent-decoded, as shown; a folder's ends with `/`.
    public var path: String
    /// ``path``'s bytes as the server's links encode them (a name need not be UTF-8): output that
    /// must give the name back uses them.
    public var pathBytes: [UInt8]
    /// Where to download it (a folder: its listing).
    public var url: URL
    /// The size the index gave, if it gave one exactly.
    public var size: Int64?
    /// Whether it is a folder.
    public var isFolder: Bool = false
    /// Why this folder could not be listed, if it could not.
    public var problem: String?
}

/// Every file and folder under an HTTP folder index, recursively, in path order, as a ``PageSource``
/// (a folder comes just before what it holds, as `find` lists them).
///
/// A page is `size` rows gathered from as many folder listings as it takes. Listings are fetched
/// through ``Listings`` (AsyncMedia: one fetch per folder however many pages need it, revalidated
/// after ``listingTimeToLive``, kept on disk for the next run and served from there when the server
/// cannot be reached).
///
/// The crawl never leaves the starting URL: only links to direct children of a folder are followed
/// (see ``DirectoryIndex``), redirects are followed only inside the starting URL's host and path,
/// folders deeper than ``maxDepth`` are not listed, and it ends after ``maxFiles`` files or
/// ``maxFolders`` folders listed — what it stopped at is in ``Limits``.
public struct RemoteTree: PageSource {
    /// Where the crawl is: the folders being listed, outermost first, each with its next entry.
    public struct Cursor: Hashable, Sendable {
        struct Frame: Hashable, Sendable {
            /// The folder's path relative to the root as shown, `""` or ending in `/`.
            var folder: String
            /// The same path as its URL has it (percent-encoded).
            var encoded: String
            var next: Int
            var depth: Int
            /// Whether the folder's own row was given (it is, with its listing's outcome, when it
            /// is first listed).
            var announced: Bool
        }
        var stack: [Frame]
        var files: Int
        var folders: Int
    }

    /// What the crawl stopped at, if it stopped before the end of the tree.
    public final class Limits: Sendable {
        private let reached = Mutex<[String]>([])
        /// Folders listed so far (the largest count a page reached).
        private let listed = Atomic<Int>(0)

        /// "10000 folders (--max-folders)", once a limit was reached (every limit reached, in the
        /// order they were met, joined by "and").
        public var reachedLimit: String? {
            let limits = reached.withLock { $0 }
            return limits.isEmpty ? nil : limits.joined(separator: " and ")
        }
        /// The folders listed so far.
        public var foldersListed: Int { listed.load(ordering: .relaxed) }

        func note(_ limit: String) {
            reached.withLock { if !$0.contains(limit) { $0.append(limit) } }
        }
        func noteListed(_ count: Int) {
            var current = listed.load(ordering: .relaxed)
            while current < count {
                let (exchanged, original) = listed.compareExchange(expected: current, desired: count, ordering: .relaxed)
                if exchanged { break }
                current = original
            }
        }
    }

    /// The folder every listed row is under; it ends in `/`.
    public let root: URL
    /// The deepest folder listed (the root is depth 0); 32 by default.
    public let maxDepth: Int
    /// The most files listed; 100,000 by default.
    public let maxFiles: Int
    /// The most folders listed; 10,000 by default.
    public let maxFolders: Int
    /// What the crawl stopped at.
    public let limits = Limits()
    let listings: Listings

    /// How long a folder's listing is used without asking the server again.
    public static let listingTimeToLive = Duration.seconds(10 * 60)

    /// The tree under `root`.
    ///
    /// - Parameters:
    ///   - root: an `http` or `https` folder URL (a missing final `/` is added).
    ///   - listingsFolder: where listings are kept across runs.
    ///   - transport: what fetches the listings; AsyncMedia's default if `nil`.
    ///   - connection: reachability, shared with the downloads.
    public init(
        root: URL, listingsFolder: URL, maxDepth: Int = 32, maxFiles: Int = 100_000, maxFolders: Int = 10_000, connection: IndexConnection,
        transport: (any DownloadTransport)? = nil
    ) {
        let root = root.path.hasSuffix("/") ? root : root.appendingPathComponent("", isDirectory: true)
        self.root = root
        self.maxDepth = max(0, maxDepth)
        self.maxFiles = max(1, maxFiles)
        self.maxFolders = max(1, maxFolders)
        listings = Listings(root: root, folder: listingsFolder, timeToLive: Self.listingTimeToLive, connection: connection, transport: transport)
    }

    /// The root folder's listing: asked before the screen starts, so a URL that is not a folder
    /// index, or a server that cannot be reached with nothing cached, is one clear line.
    public func checkRoot() async throws {
        _ = try await listings.entries(of: root)
    }

    public func page(_ request: PageRequest<Cursor>) async throws -> Page<Cursor, RemoteFile> {
        var cursor = request.cursor ?? Cursor(stack: [.init(folder: "", encoded: "", next: 0, depth: 0, announced: true)], files: 0, folders: 1)
        var items: [RemoteFile] = []
        var listed: [String: Result<[IndexEntry], any Error>] = [:]
        while items.count < request.size, cursor.files < maxFiles, var frame = cursor.stack.popLast() {
            try Task.checkCancellation()
            let folderURL = url(of: frame.encoded, isFolder: true)
            let listing: Result<[IndexEntry], any Error>
            if let known = listed[frame.encoded] {
                listing = known
            } else {
                do {
                    listing = .success(try await listings.entries(of: folderURL))
                } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    // The root's failure is the list's (retried by the paged rows); a subfolder's is a row.
                    if frame.folder.isEmpty { throw error }
                    listing = .failure(error)
                }
                listed[frame.encoded] = listing
            }
            if !frame.announced {
                frame.announced = true
                let problem: String? = if case .failure(let error) = listing { Self.message(for: error) } else { nil }
                items.append(RemoteFile(path: frame.folder, pathBytes: DirectoryIndex.percentDecoded(frame.encoded[...]), url: folderURL, size: nil, isFolder: true, problem: problem))
                if problem != nil { continue }
                if items.count >= request.size {
                    cursor.stack.append(frame)
                    break
                }
            }
            guard case .success(let entries) = listing, frame.next < entries.count else { continue }
            let entry = entries[frame.next]
            frame.next += 1
            cursor.stack.append(frame)
            let path = frame.folder + entry.name
            let encoded = frame.encoded + entry.encoded
            if entry.isFolder {
                if frame.depth >= maxDepth {
                    items.append(RemoteFile(path: path + "/", pathBytes: DirectoryIndex.percentDecoded(encoded[...]) + [0x2F], url: url(of: encoded, isFolder: true), size: nil, isFolder: true, problem: "not listed: deeper than --max-depth \(maxDepth)"))
                    limits.note("folders deeper than \(maxDepth) (--max-depth)")
                } else if cursor.folders >= maxFolders {
                    items.append(RemoteFile(path: path + "/", pathBytes: DirectoryIndex.percentDecoded(encoded[...]) + [0x2F], url: url(of: encoded, isFolder: true), size: nil, isFolder: true, problem: "not listed: \(maxFolders) folders listed (--max-folders)"))
                    limits.note("\(maxFolders) folders (--max-folders)")
                } else {
                    cursor.folders += 1
                    limits.noteListed(cursor.folders)
                    cursor.stack.append(.init(folder: path + "/", encoded: encoded + "/", next: 0, depth: frame.depth + 1, announced: false))
                }
            } else {
                items.append(RemoteFile(path: path, pathBytes: DirectoryIndex.percentDecoded(encoded[...]), url: url(of: encoded, isFolder: false), size: entry.size))
                cursor.files += 1
                if cursor.files >= maxFiles { limits.note("\(maxFiles) files (--max-files)") }
            }
        }
        let more = !cursor.stack.isEmpty && cursor.files < maxFiles
        return Page(items: items, cursorAfter: more ? cursor : nil)
    }

    /// The URL of `encoded` (a path relative to the root, percent-encoded; a folder's ends with "/").
    func url(of encoded: String, isFolder: Bool) -> URL {
        guard !encoded.isEmpty else { return root }
        return DirectoryIndex.resolve(encoded + (isFolder && !encoded.hasSuffix("/") ? "/" : ""), in: root) ?? root
    }

    /// A short message for a row: "offline", "HTTP 404", or what the error says.
    public static func message(for error: any Error) -> String {
        switch error {
        case let error as AsyncMediaError:
            switch error {
            case .httpStatus(let status, _): "HTTP \(status)"
            case .tooLarge: "listing too large"
            default: error.description
            }
        case is DirectoryIndex.NotAnIndex: "not a folder index"
        case is URLError: "offline (not downloaded before)"
        default: String(describing: error)
        }
    }
}

/// Folder listings of one remote tree: each fetched by its own ``AsyncMedia`` (so the same
/// transport, de-duplication, revalidation and offline fallback as the files), parsed, and kept
/// parsed in memory for the time-to-live.
public final class Listings: Sendable {
    /// The most bytes one listing may take: an index larger than this is refused, not parsed.
    public static let maximumSize: Int64 = 16 << 20

    let media: AsyncMedia
    private let parsed = MemoryStorage<URL, Parsed>(countLimit: 2_000)
    private let timeToLive: Duration
    private let connection: IndexConnection

    struct Parsed: Sendable {
        let entries: [IndexEntry]
        let at: ContinuousClock.Instant
    }

    init(root: URL, folder: URL, timeToLive: Duration, connection: IndexConnection, transport: (any DownloadTransport)?) {
        self.timeToLive = timeToLive
        self.connection = connection
        media = AsyncMedia(
            directory: folder, sizeLimit: 256 << 20, maxConcurrentDownloads: 4,
            limits: DownloadLimits(idleTimeout: .seconds(10), totalTimeout: .seconds(120), maximumSize: Self.maximumSize),
            timeToLive: timeToLive, transport: transport,
            allowsRedirect: { _, to in IndexConnection.isInside(to, root) }
        )
    }

    /// The entries of `folder`'s listing.
    public func entries(of folder: URL) async throws -> [IndexEntry] {
        if let hit = parsed.value(for: folder), ContinuousClock.now - hit.at < timeToLive { return hit.entries }
        let file: URL
        do {
            file = try await media.file(for: folder)
            connection.noteReachable(true)
        } catch {
            if error.isSilenceable { connection.noteReachable(false) }
            throw error
        }
        let entries = try DirectoryIndex.parse(try Data(contentsOf: file), folder: folder)
        parsed.set(Parsed(entries: entries, at: .now), for: folder)
        return entries
    }
}

/// Whether the server could be reached, as the listings and downloads found it.
public final class IndexConnection: Sendable {
    private let reachable = Mutex<Bool?>(nil)

    /// A connection not tried yet.
    public init() {}

    /// Whether the last request reached the server (`nil` before any).
    public var serverReachable: Bool? { reachable.withLock { $0 } }

    /// Records a connectivity outcome.
    public func noteReachable(_ value: Bool) { reachable.withLock { $0 = value } }

    /// Whether `url` is under `root` (same scheme, host and port; its path under root's).
    static func isInside(_ url: URL, _ root: URL) -> Bool {
        url.scheme?.lowercased() == root.scheme?.lowercased() && url.host?.lowercased() == root.host?.lowercased()
            && url.port == root.port && url.path(percentEncoded: true).hasPrefix(root.path(percentEncoded: true))
    }
}
