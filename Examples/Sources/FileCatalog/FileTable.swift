import Avenues
import AvenuesSQLite
import Foundation
import Synchronization

/// The rows both examples show: the files, the avenue that summarizes them by row, and counters for
/// the status line.
///
/// The avenue keeps summaries in memory (`MemoryStorage`, 5,000 rows) and its processor is the
/// summarizer cached in a `SQLiteStorage` keyed by path + size + modification time: a second run
/// finds unchanged files' summaries on disk, read on a processor worker, never on the drawing thread.
public final class FileTable: Sendable {
    /// The files, sorted by path.
    public let entries: [FileEntry]
    /// Loads summaries by row.
    public let avenue: Avenue<Int, FileRef, FileSummary>
    /// The disk cache, if one is used.
    public let diskCache: SQLiteStorage<FileRef>?
    /// How far the summaries of large files being computed have read.
    public let progress = SummaryProgress()
    private let diskHits: DiskHitCounter?

    /// Sets up the table.
    ///
    /// - Parameters:
    ///   - entries: the files.
    ///   - cacheFolder: where summaries are kept across runs (`summaries.sqlite`); `nil` for no disk cache.
    ///   - latency: a pause before each summary, to watch loading on a fast disk.
    ///   - maxConcurrent: summaries computed at once.
    public init(entries: [FileEntry], cacheFolder: URL?, latency: Duration = .zero, maxConcurrent: Int = 6) {
        self.entries = entries
        let summarizer = FileSummarizer(latency: latency, progress: progress)
        let processor: AutoProcessor<FileRef, FileSummary>
        if let cacheFolder {
            Self.removeFilePerEntryCache(in: cacheFolder)
            let disk = SQLiteStorage<FileRef>(file: cacheFolder.appendingPathComponent("summaries.sqlite"), sizeLimit: 64 << 20) { Self.diskKey($0) }
            let counter = DiskHitCounter(disk.codable(FileSummary.self))
            diskCache = disk
            diskHits = counter
            processor = AutoProcessor(maxConcurrent: maxConcurrent, UnlessEmpty(cached: summarizer.cached(in: counter), direct: summarizer))
        } else {
            diskCache = nil
            diskHits = nil
            processor = AutoProcessor(maxConcurrent: maxConcurrent, summarizer)
        }
        avenue = Avenue(storage: MemoryStorage(countLimit: 5_000), processor: processor)
    }

    /// Which summaries the disk cache holds: raised when the summary of the same bytes changes, so
    /// that a summary an earlier version made is made again (2: a preview cut inside a character
    /// ends before it, where it ended with a replacement character).
    static let summaryVersion = 2

    /// The disk cache's key for `file`: the summary's version, then the file's key.
    static func diskKey(_ file: FileRef) -> String {
        "v\(summaryVersion):" + file.cacheKey
    }

    /// The key of row `index`, or `nil` past either end, for a folder (nothing to compute) and for
    /// an entry that could not be looked at (its row says why).
    public func key(_ index: Int) -> FileRef? {
        guard entries.indices.contains(index), !entries[index].isFolder, entries[index].problem == nil else { return nil }
        return entries[index].ref
    }

    /// What row `index` shows in its computed columns now.
    public func content(at index: Int) -> RowContent {
        guard entries.indices.contains(index) else { return .pending }
        return RowContent(avenue, entry: entries[index], row: index)
    }

    /// How many rows are files and how many folders.
    public var kinds: (files: Int, folders: Int) {
        let folders = entries.lazy.filter(\.isFolder).count
        return (entries.count - folders, folders)
    }

    /// Commits the summaries still waiting for their batch (SQLiteStorage commits within 10 ms by
    /// itself; a tool ending now would lose those).
    public func flush() {
        try? diskCache?.flush()
    }

    /// Deletes, in the background and once, the one-file-per-summary cache (a `DiskStorage`, marked
    /// by its lock file) that earlier versions kept in `folder`: up to a file and an inode per file
    /// ever summarized. Only its own entry files and its lock file are deleted.
    public static func removeFilePerEntryCache(in folder: URL) {
        let lock = folder.appendingPathComponent(".avenues-lock")
        guard FileManager.default.fileExists(atPath: lock.path) else { return }
        Task.detached(priority: .utility) {
            DiskStorage<String>(directory: folder).removeAll()
            try? FileManager.default.removeItem(at: lock)
        }
    }

    /// The default cache folder: `avenues-examples/summaries` in the platform cache folder.
    public static func defaultCacheFolder() throws -> URL {
        try DiskStorage<String>.cacheFolder().appendingPathComponent("avenues-examples/summaries", isDirectory: true)
    }

    /// Counters for a status line.
    public var status: Status {
        let statistics = avenue.statistics
        let activity = avenue.processor.activity
        return Status(
            running: activity.running, queued: activity.queued, cancelled: statistics.loadsCancelled,
            memoryHits: statistics.cacheHits, diskHits: diskHits?.hits ?? 0
        )
    }

    /// What the status line shows.
    public struct Status: Sendable, Hashable {
        /// Summaries being computed now.
        public var running: Int
        /// Summaries waiting for a worker.
        public var queued: Int
        /// Loads dropped because their rows scrolled away.
        public var cancelled: Int
        /// Rows whose summary was in memory when shown.
        public var memoryHits: Int
        /// Summaries read from the disk cache instead of computed.
        public var diskHits: Int
    }
}

/// Counts disk cache reads that found a summary.
final class DiskHitCounter: Storage {
    private let base: ValueMappedStorage<SQLiteStorage<FileRef>, FileSummary>
    private let count = Atomic<Int>(0)

    init(_ base: ValueMappedStorage<SQLiteStorage<FileRef>, FileSummary>) { self.base = base }

    var hits: Int { count.load(ordering: .relaxed) }

    func value(for key: FileRef) -> FileSummary? {
        let value = base.value(for: key)
        if value != nil { count.add(1, ordering: .relaxed) }
        return value
    }

    func set(_ value: FileSummary, for key: FileRef) { base.set(value, for: key) }
    func removeValue(for key: FileRef) { base.removeValue(for: key) }
    func removeAll() { base.removeAll() }
}

/// Summaries from the disk cache, except for files that say they are empty: procfs and sysfs files
/// say 0 bytes and keep one modification time while what they hold changes (`/proc/meminfo`,
/// `/proc/sys/kernel/random/uuid`), so their cache key never changed and a second run showed the
/// first run's content. An empty file costs nothing to read again.
struct UnlessEmpty<Cached: Processor<FileRef, FileSummary>, Direct: Processor<FileRef, FileSummary>>: Processor {
    let cached: Cached
    let direct: Direct

    func process(_ file: FileRef) async throws -> FileSummary {
        file.size == 0 ? try await direct.process(file) : try await cached.process(file)
    }

    func isAvailableOffline(_ file: FileRef) -> Bool { file.size == 0 || cached.isAvailableOffline(file) }
}
