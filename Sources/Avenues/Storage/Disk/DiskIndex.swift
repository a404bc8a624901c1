#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a ``DiskStorage`` knows of its folder: entry file names by recency, with their sizes.
///
/// Built lazily from the folder on first use (oldest modification first, so a reopened storage
/// evicts what was written longest ago) and kept in memory after, so reads never write to disk
/// just to record that they happened.
struct DiskIndex {
    static let entrySuffix = ".entry"
    static let temporaryPrefix = ".tmp-"
    /// Temporary files of a live process older than this are treated as abandoned too.
    static let staleTemporaryAge: Int64 = 10 * 60 * 1_000_000_000

    var folderExists = false
    private(set) var isLoaded = false
    private var table = LRUTable<String, Int>()
    /// Which files in the folder are entries (others are never counted, swept or deleted).
    private let isEntry: @Sendable (String) -> Bool

    /// An index of the files `isEntry` accepts; ``DiskStorage``'s entries by default.
    init(isEntry: @escaping @Sendable (String) -> Bool = DiskIndex.isEntryName) {
        self.isEntry = isEntry
    }

    var count: Int { table.count }
    var totalSize: Int { table.totalCost }
    var namesByRecency: [String] { table.keysByRecency }

    // MARK: Names

    /// `<16 hex digits>.entry`: only this character set, so no key can name a path outside the folder.
    static func entryName(for key: [UInt8]) -> String {
        StableHash.hex(StableHash.fnv1a64(key)) + entrySuffix
    }

    static func isEntryName(_ name: String) -> Bool {
        let utf8 = Array(name.utf8)
        return utf8.count == 16 + entrySuffix.utf8.count
            && name.hasSuffix(entrySuffix)
            && utf8.prefix(16).allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// A hidden, unique name in the same folder (so `rename(2)` stays on one file system), carrying
    /// the writer's process id so a leftover of a killed writer can be recognised.
    static func temporaryName(for entryName: String) -> String {
        temporaryPrefix + entryName.prefix(16) + "-\(getpid())-" + StableHash.hex(UInt64.random(in: .min ... .max))
    }

    /// `true` for a temporary file nobody will finish: its writer process is gone, or it is old.
    static func isAbandonedTemporary(_ name: String, modified: Int64, now: Int64) -> Bool {
        if modified < now - staleTemporaryAge { return true }
        let parts = name.dropFirst(temporaryPrefix.count).split(separator: "-")
        guard parts.count == 3, let pid = pid_t(parts[1]), pid > 0 else { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    static func isTemporaryName(_ name: String) -> Bool {
        name.hasPrefix(temporaryPrefix)
    }

    // MARK: Changes

    /// Reads the folder: every entry file by modification time; abandoned temporary files are deleted.
    mutating func load(from folder: String) {
        isLoaded = true
        table.removeAll()
        guard let names = try? FileSystem.contents(of: folder) else { return }
        folderExists = true
        let now = Self.wallClockNanoseconds()
        var found: [(name: String, size: Int, modified: Int64)] = []
        for name in names {
            guard let info = try? FileSystem.linkStatus(folder + "/" + name), info.isRegularFile else { continue }
            if isEntry(name) {
                found.append((name, info.size, info.modified))
            } else if Self.isTemporaryName(name), Self.isAbandonedTemporary(name, modified: info.modified, now: now) {
                try? FileSystem.remove(folder + "/" + name)
            }
        }
        found.sort { ($0.modified, $0.name) < ($1.modified, $1.name) }
        for entry in found { table.set(entry.size, for: entry.name, cost: entry.size) }
    }

    /// A written entry, now the most recently used.
    mutating func record(_ name: String, size: Int) {
        table.set(size, for: name, cost: size)
    }

    /// A read entry: the most recently used (added if another process wrote it).
    mutating func touch(_ name: String, size: Int) {
        if table.value(for: name) == nil { table.set(size, for: name, cost: size) }
    }

    mutating func forget(_ name: String) {
        table.removeValue(for: name)
    }

    mutating func forgetAll() {
        table.removeAll()
        isLoaded = true
    }

    /// When over a limit, removes least recently used entries down to 80 % of the limits and returns
    /// their names for deletion.
    mutating func evict(sizeLimit: Int?, countLimit: Int?) -> [String] {
        let overCount = countLimit.map { count > $0 } ?? false
        let overSize = sizeLimit.map { totalSize > $0 } ?? false
        guard overCount || overSize else { return [] }
        let countTarget = countLimit.map { $0 * 4 / 5 } ?? Int.max
        let sizeTarget = sizeLimit.map { $0 / 5 * 4 } ?? Int.max
        var victims: [String] = []
        while count > countTarget || totalSize > sizeTarget, let victim = table.removeLeastRecentlyUsed() {
            victims.append(victim.key)
        }
        return victims
    }

    private static func wallClockNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
