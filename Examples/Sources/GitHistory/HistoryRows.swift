import Avenues
import AvenuesSQLite
import Foundation
import Synchronization

/// The rows `history` shows: the log, a page at a time, and each visible commit's diff stat, cached
/// on disk by commit id in one SQLite database (a commit never changes, so a cached stat is never
/// stale; a file per stat took an inode and a block for 40 bytes).
public final class HistoryRows: Sendable {
    /// The log.
    public let log: GitLog
    /// The commits.
    public let commits: PagedRows<GitLog>
    /// Each row's diff stat.
    public let stats: Avenue<Int, String, DiffStat>
    /// The diff stats of a filter's matches (``filter(maxResident:)``), by their row among the
    /// matches: the storage and processor of ``stats``, so a stat loaded for one shows in the other,
    /// and one git process answers both.
    public let matchStats: Avenue<Int, String, DiffStat>
    private let diskHits = HitCounter()
    private let statsCache: SQLiteStorage<String>?
    /// What computes (or reads from disk) the stats of both avenues: its work is counted once.
    private let statsProcessor: AutoProcessor<String, DiffStat>

    /// Sets up the rows of `log`. Which rows' stats load is up to the screen (a row's key is
    /// ``statKey(at:)``): `history` asks for them where the list rests.
    ///
    /// - Parameters:
    ///   - pageSize: commits per page.
    ///   - statsFolder: where diff stats are kept across runs (`stats.sqlite`); `nil` for memory only.
    public init(log: GitLog, pageSize: Int = 50, statsFolder: URL?) {
        self.log = log
        commits = PagedRows(source: log, configuration: Self.configuration(pageSize: pageSize))
        let memory = MemoryStorage<String, DiffStat>(countLimit: 2_000)
        // A screen's rows all ask at once, so DiffStats answers them with one git process.
        // Under `-- PATHS` a commit's stat counts those paths only, as `git log --stat -- PATHS` does.
        let processor = DiffStats(repository: log.repository, paths: log.paths)
        let source: AutoProcessor<String, DiffStat>
        if let statsFolder {
            // Earlier versions kept a file per stat here (a DiskStorage, whose lock file marks it):
            // deleted once, in the background, entry files and lock file only.
            let oldLock = statsFolder.appendingPathComponent(".avenues-lock")
            if FileManager.default.fileExists(atPath: oldLock.path) {
                Task.detached(priority: .utility) {
                    DiskStorage<String>(directory: statsFolder).removeAll()
                    try? FileManager.default.removeItem(at: oldLock)
                }
            }
            let database = SQLiteStorage<String>(file: statsFolder.appendingPathComponent("stats.sqlite"), sizeLimit: 64 << 20)
            statsCache = database
            // One database for every run: a stat limited to paths is kept under its hash and paths.
            let paths = log.paths
            let disk = database.codable(DiffStat.self).mapKeys { (hash: String) in
                paths.isEmpty ? hash : ([hash, "--"] + paths).joined(separator: "\u{0}")
            }
            let hits = diskHits
            source = AutoProcessor(maxConcurrent: 64, processor.cached(in: CountingStorage(disk) { hits.count() }))
        } else {
            statsCache = nil
            source = AutoProcessor(maxConcurrent: 64, processor)
        }
        statsProcessor = source
        stats = Avenue(storage: memory, processor: source)
        matchStats = Avenue(storage: memory, processor: source)
    }

    /// Commits the diff stats still waiting for their batch (before the tool ends).
    public func flush() {
        try? statsCache?.flush()
    }

    /// What row `row`'s diff stat is loaded by: its commit's hash, once the commit is read.
    public func statKey(at row: Int) -> String? {
        commits.item(at: row)?.hash
    }

    /// Pages of `pageSize` commits, one page ahead, at most 2,000 commits in memory; the first screen
    /// asks for one page only.
    public static func configuration(pageSize: Int) -> PagingConfiguration {
        let (twoPages, overflow) = pageSize.multipliedReportingOverflow(by: 2)  // `--page-size` is the user's: it may be Int.max
        return PagingConfiguration(pageSize: pageSize, prefetchDistance: pageSize, initialLoadSize: pageSize, maxResident: max(2_000, overflow ? .max : twoPages))
    }

    /// The default folder for diff stats: `avenues-examples/history-stats` in the cache folder.
    public static func defaultStatsFolder() throws -> URL {
        try DiskStorage<String>.cacheFolder().appendingPathComponent("avenues-examples/history-stats", isDirectory: true)
    }

    /// The default folder for spooled logs: `avenues-examples/history-logs` in the cache folder.
    public static func defaultSpoolFolder() throws -> URL {
        try DiskStorage<String>.cacheFolder().appendingPathComponent("avenues-examples/history-logs", isDirectory: true)
    }

    /// How many commits there are: git's count once it finished, else at least those read.
    public var count: RowCount {
        if let total = log.knownTotal { return .exact(total) }
        let rows = commits.count
        return rows.isExact ? rows : .atLeast(max(rows.value, log.progress.read))
    }

    /// Whether `commit` matches what a user typed: its subject or author contains it (smart case),
    /// or, from 4 hexadecimal digits on, its hash starts with it.
    public static func commit(_ commit: Commit, matches query: TextQuery) -> Bool {
        if commit.subjectBytes.withUnsafeBytes({ query.matches(bytes: $0) }) { return true }
        if commit.authorBytes.withUnsafeBytes({ query.matches(bytes: $0) }) { return true }
        let text = query.text
        return text.count >= 4 && text.allSatisfy(\.isHexDigit) && commit.hash.hasPrefix(text.lowercased())
    }

    /// A filter over every commit of the log, read page by page from git's stream (the list's own
    /// pages are left alone), found while git is still reading.
    public func filter(maxResident: Int = 2_000) -> FilteredRows<Commit> {
        let log = log
        return FilteredRows(
            chunk: 1_000, maxResident: maxResident, count: { [weak self] in self?.count ?? .atLeast(0) },
            read: { range in try await log.page(at: range.lowerBound, size: range.count).items },
            matches: Self.commit(_:matches:)
        )
    }

    /// Diff stats read from the disk cache instead of computed.
    public var cacheHits: Int { diskHits.value }

    /// Page loads and diff stats in flight. A stat is counted once, by the processor the two
    /// avenues share: a commit shown in the whole log and among a filter's matches is one load (the
    /// two avenues' counts made it two).
    public var loadsInFlight: Int {
        let stats = statsProcessor.activity
        return commits.pages.statistics.loadsInFlight + stats.queued + stats.running
    }

    /// Prints every commit in order, as the rows arrive, holding at most `ahead` rows beyond the one
    /// to print: the whole log streams in bounded memory through the same paged rows. A commit
    /// whose record the rows hold cut (a subject past 64 KiB) is read whole just before it is
    /// emitted: what is printed is git's bytes, one long record in memory at a time. Returns why
    /// the log ended before its last commit (git failed after the commits printed), if it did.
    @discardableResult
    public func printAll(ahead: Int = 400, emit: (Commit) -> Void) async -> (any Error)? {
        let changes = commits.subscribe()
        var iterator = changes.makeAsyncIterator()
        var next = 0
        var failure: (any Error)?
        while true {
            commits.show(next ..< next + ahead)
            while let commit = commits.item(at: next) {
                emit(commit.cut == nil ? commit : (try? await log.whole(commit)) ?? commit)
                next += 1
                if next % (ahead / 2) == 0 { commits.show(next ..< next + ahead) }
            }
            let count = commits.count
            if count.isExact, next >= count.value { break }
            if case .failed(let error, _) = commits.state(at: next) {
                failure = error
                break
            }
            guard await iterator.next() != nil else { break }
        }
        commits.stop()
        return failure ?? log.failure
    }
}

/// A counter shared by closures.
final class HitCounter: Sendable {
    private let hits = Atomic<Int>(0)
    func count() { hits.add(1, ordering: .relaxed) }
    var value: Int { hits.load(ordering: .relaxed) }
}

/// Counts the reads of a storage that found a value.
final class CountingStorage<Base: Storage>: Storage {
    private let base: Base
    private let hit: @Sendable () -> Void

    init(_ base: Base, hit: @escaping @Sendable () -> Void) {
        self.base = base
        self.hit = hit
    }

    func value(for key: Base.Key) -> Base.Value? {
        let value = base.value(for: key)
        if value != nil { hit() }
        return value
    }

    func set(_ value: Base.Value, for key: Base.Key) { base.set(value, for: key) }
    func removeValue(for key: Base.Key) { base.removeValue(for: key) }
    func removeAll() { base.removeAll() }
}
