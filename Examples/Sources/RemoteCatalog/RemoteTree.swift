import Avenues
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A file found under the remote folder (or a folder that could not be listed, as its own row).
public struct RemoteFile: Sendable, Hashable {
    /// The path relative to the starting URL, names percent-decoded, as shown.
    public var path: String
    /// Where to download it.
    public var url: URL
    /// The size the index gave, if it gave one exactly.
    public var size: Int64?
    /// Why this folder could not be listed; `nil` for a file.
    public var problem: String?
}

/// Every file under an HTTP folder index, recursively, in path order, as a ``PageSource``.
///
/// A page is `size` files gathered from as many folder index pages as it takes (the paging contract
/// wants full pages; a folder is one listing, usually within one page). Each folder's listing is
/// asked through a `MultiplexerMap` keyed by folder URL: one fetch per folder however many pages and
/// runs need it, kept for ``listingTimeToLive`` and on disk, and when the server cannot be reached
/// the copy on disk is served whatever its age (offline fallback).
///
/// The crawl never leaves the starting URL: only links to direct children of a folder are followed
/// (see ``DirectoryIndex``), redirects are followed only inside the starting URL's host and path,
/// folders deeper than ``maxDepth`` are not listed, and the crawl ends after ``maxFiles`` files.
public struct RemoteTree: PageSource {
    /// Where the crawl is: the folders being listed, outermost first, each with its next entry.
    public struct Cursor: Hashable, Sendable {
        struct Frame: Hashable, Sendable {
            /// The folder's path relative to the root, `""` or ending in `/`.
            var folder: String
            var next: Int
            var depth: Int
        }
        var stack: [Frame]
        var files: Int
    }

    /// The folder every listed file is under; it ends in `/`.
    public let root: URL
    /// The deepest folder listed (the root is depth 0); 32 by default.
    public let maxDepth: Int
    /// The most files listed; 100,000 by default.
    public let maxFiles: Int
    let listings: MultiplexerMap<String, [IndexEntry]>

    /// How long a folder's listing is used without asking the server again.
    public static let listingTimeToLive = Duration.seconds(10 * 60)

    /// The tree under `root`.
    ///
    /// - Parameters:
    ///   - root: an `http` or `https` folder URL (a missing final `/` is added).
    ///   - listingsFolder: where listings are kept across runs; `nil` for memory only.
    ///   - connection: how index pages are fetched (tests pass their own).
    public init(root: URL, listingsFolder: URL?, maxDepth: Int = 32, maxFiles: Int = 100_000, connection: IndexConnection) {
        let root = root.path.hasSuffix("/") ? root : root.appendingPathComponent("", isDirectory: true)
        self.root = root
        self.maxDepth = maxDepth
        self.maxFiles = maxFiles
        listings = MultiplexerMap(
            cacheKey: listingsFolder == nil ? nil : "browse-listings", timeToLive: Self.listingTimeToLive,
            countLimit: 2_000, maxConcurrentFetches: 4, directory: listingsFolder
        ) { folder in
            guard let url = URL(string: folder) else { throw URLError(.badURL) }
            return try DirectoryIndex.parse(try await connection.get(url, inside: root), folder: url)
        }
    }

    /// The root folder's listing: asked before the screen starts, so a URL that is not a folder
    /// index, or a server that cannot be reached with nothing cached, is one clear line.
    public func checkRoot() async throws {
        _ = try await listings.value(for: root.absoluteString)
    }

    public func page(_ request: PageRequest<Cursor>) async throws -> Page<Cursor, RemoteFile> {
        var cursor = request.cursor ?? Cursor(stack: [.init(folder: "", next: 0, depth: 0)], files: 0)
        var items: [RemoteFile] = []
        while items.count < request.size, cursor.files < maxFiles, var frame = cursor.stack.popLast() {
            try Task.checkCancellation()
            let folderURL = url(of: frame.folder, isFolder: true)
            let entries: [IndexEntry]
            do {
                entries = try await listings.value(for: folderURL.absoluteString)
            } catch {
                // The root's failure is the list's (retried by the paged rows); a subfolder's is a row.
                if frame.folder.isEmpty || error is CancellationError { throw error }
                items.append(RemoteFile(path: frame.folder, url: folderURL, size: nil, problem: Self.message(for: error)))
                cursor.files += 1
                continue
            }
            guard frame.next < entries.count else { continue }
            let entry = entries[frame.next]
            frame.next += 1
            cursor.stack.append(frame)
            let path = frame.folder + entry.name
            if entry.isFolder {
                if frame.depth < maxDepth { cursor.stack.append(.init(folder: path + "/", next: 0, depth: frame.depth + 1)) }
            } else {
                items.append(RemoteFile(path: path, url: url(of: path, isFolder: false), size: entry.size, problem: nil))
                cursor.files += 1
            }
        }
        let more = !cursor.stack.isEmpty && cursor.files < maxFiles
        return Page(items: items, cursorAfter: more ? cursor : nil)
    }

    /// The URL of `path` under the root, each name percent-encoded.
    func url(of path: String, isFolder: Bool) -> URL {
        path.isEmpty ? root : root.appending(path: path, directoryHint: isFolder ? .isDirectory : .notDirectory)
    }

    /// A short message for a row: "offline", "HTTP 404", or what the error says.
    public static func message(for error: any Error) -> String {
        switch error {
        case let error as IndexConnection.Failure: error.description
        case let error as AsyncMediaError:
            if case .httpStatus(let status, _) = error { "HTTP \(status)" } else { error.description }
        case is URLError: "offline (not downloaded before)"
        default: String(describing: error)
        }
    }
}

/// Fetches folder index pages over HTTP, following redirects only inside the starting URL, and
/// remembers whether the server could be reached.
public final class IndexConnection: Sendable {
    /// Why an index page could not be had.
    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// The server answered with a status other than 200.
        case httpStatus(Int, url: URL)
        /// A redirect to somewhere outside the starting URL, or too many of them.
        case redirectOutside(from: URL, to: String)

        /// What happened.
        public var description: String {
            switch self {
            case .httpStatus(let status, let url): "HTTP \(status) for \(url)"
            case .redirectOutside(let from, let to): "\(from) redirects to \(to), outside the folder browsed; not followed"
            }
        }
    }

    private let session: URLSession
    private let reachable = Mutex<Bool?>(nil)

    /// A connection with a 10-second timeout per request.
    public init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    /// Whether the last request reached the server (`nil` before any).
    public var serverReachable: Bool? { reachable.withLock { $0 } }

    /// Records a connectivity outcome seen elsewhere (a file download).
    public func noteReachable(_ value: Bool) { reachable.withLock { $0 = value } }

    /// The body of `url`, following up to 5 redirects that stay under `root`.
    func get(_ url: URL, inside root: URL) async throws -> Data {
        var current = url
        for _ in 0...5 {
            let data: Data
            let response: URLResponse
            do {
                (data, response) = try await session.data(from: current)
                noteReachable(true)
            } catch let error as URLError {
                if error.code != .cancelled { noteReachable(false) }
                throw error
            }
            guard let http = response as? HTTPURLResponse else { return data }
            switch http.statusCode {
            case 200: return data
            case 301, 302, 303, 307, 308:
                let location = http.value(forHTTPHeaderField: "Location") ?? ""
                guard let next = URL(string: location, relativeTo: current)?.absoluteURL, Self.isInside(next, root) else {
                    throw Failure.redirectOutside(from: current, to: location)
                }
                current = next
            default:
                throw Failure.httpStatus(http.statusCode, url: current)
            }
        }
        throw Failure.redirectOutside(from: url, to: current.absoluteString)
    }

    static func isInside(_ url: URL, _ root: URL) -> Bool {
        url.scheme?.lowercased() == root.scheme?.lowercased() && url.host?.lowercased() == root.host?.lowercased()
            && url.port == root.port && url.path(percentEncoded: true).hasPrefix(root.path(percentEncoded: true))
    }
}

/// Refuses every redirect, so ``IndexConnection`` decides which to follow.
private final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
