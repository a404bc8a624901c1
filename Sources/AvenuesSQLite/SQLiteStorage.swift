import Avenues
import CSQLite
import Foundation
import Synchronization

/// A thread-safe ``Storage`` of `Data` in one SQLite database file: the same contract as
/// ``DiskStorage``, for millions of small values (a summary per row, a diff stat per commit) where a
/// file per value costs an inode and a 4 KiB block each.
///
/// - **Pick it** for many small values: 100,000 values of 100 bytes take about 1/30 of
///   DiskStorage's disk space and write several times faster (Benchmarks/README.md). Keep files —
///   DiskStorage, or ``AsyncMedia`` for downloads — for values of a megabyte and more, which SQLite
///   copies through its pages and holds whole in memory to read.
/// - **Shared:** several threads and processes use one database (WAL journal, a busy timeout of
///   5 s); contention reaches a caller as a miss or ``SQLiteStorageError/Reason/busy``, never as a
///   wrong value. Each write is one transaction, so a process killed mid-write leaves the old entry
///   or the new one.
/// - **Checked:** every entry carries a checksum of its key, value and dates: a damaged page that
///   SQLite itself does not notice reads as a miss. A file that is not a database of ours —
///   corrupt, truncated, another program's — is renamed aside (`….corrupt`) and a new one created.
/// - **Limits:** with a `sizeLimit` (key and value bytes) and/or `countLimit`, a write that goes over
///   deletes the least recently used entries down to 80 % of the limits in the same transaction,
///   never the entry just written; so after any write returns, the database fits its limits,
///   whichever process wrote. Recency is each read's time, written in batches (with the next write,
///   or every 1,024 reads) so that reads do not become writes one by one.
/// - **Expiry:** with a `timeToLive`, expired entries read as misses with ``value(for:)`` and as
///   stale copies with ``lookup(_:)``; an entry stored "in the future" (the wall clock moved back)
///   is expired.
/// - **Safety:** the file is created 0600 in a 0700 folder; a symbolic link in its place, or in
///   place of its folder, is refused (``SQLiteStorageError/Reason/unsafeFile``).
///
/// The ``Storage`` methods never throw: a failed write is a later miss. Use
/// ``write(_:for:storedAt:expiresAt:)`` and ``entry(for:includingExpired:)`` to see why.
///
/// ```swift
/// let stats = try SQLiteStorage<String>(name: "my-tool/diff-stats.sqlite", countLimit: 1_000_000)
/// stats.set(Data("3 files +10 −2".utf8), for: commitID)
/// ```
public final class SQLiteStorage<Key: Sendable>: Storage {
    /// Entries are bytes.
    public typealias Value = Data

    /// An entry as stored: its bytes and when it was written.
    public struct Entry: Sendable, Hashable {
        /// The stored bytes.
        public let data: Data
        /// When the entry was written (wall-clock time).
        public let storedAt: Date
        /// When the entry stops being served, if it expires.
        public let expiresAt: Date?
    }

    /// The database file.
    public let file: URL
    /// The largest total size of the keys and values in bytes, or `nil` for no limit (the default).
    public let sizeLimit: Int?
    /// The most entries kept, or `nil` for no limit (the default).
    public let countLimit: Int?
    /// How long an entry is served after it is written, or `nil` to keep entries until evicted.
    public let timeToLive: Duration?

    private let keyString: @Sendable (Key) -> String
    private let now: @Sendable () -> Date
    // Safe: the connection is only used inside this lock.
    private let connection: Mutex<SQLiteConnection>

    /// How long a write waits for another process's transaction, in milliseconds.
    static var busyTimeout: Int32 { 5_000 }
    /// Reads whose recency is kept in memory before it is written.
    static var usesKept: Int { 1_024 }

    /// Creates a storage in the database `file` (created on first use if needed).
    ///
    /// - Parameters:
    ///   - file: the database; use one file per storage. Several processes may share it.
    ///   - sizeLimit: the largest total size of keys and values in bytes; `nil` (the default) for
    ///     no limit. Must not be negative.
    ///   - countLimit: the most entries; `nil` (the default) for no limit. Must not be negative.
    ///   - timeToLive: how long entries are served; `nil` (the default) for as long as they are kept.
    ///   - now: the wall clock, replaceable in tests.
    ///   - keyString: the key's stable string form: the same key must give the same string on every
    ///     run, and different keys different strings.
    public init(
        file: URL,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        keyString: @escaping @Sendable (Key) -> String
    ) {
        precondition(sizeLimit.map { $0 >= 0 } ?? true, "SQLiteStorage sizeLimit must be 0 or more")
        precondition(countLimit.map { $0 >= 0 } ?? true, "SQLiteStorage countLimit must be 0 or more")
        precondition(timeToLive.map { $0 >= .zero } ?? true, "SQLiteStorage timeToLive must not be negative")
        self.file = file.standardizedFileURL
        self.sizeLimit = sizeLimit
        self.countLimit = countLimit
        self.timeToLive = timeToLive
        self.now = now
        self.keyString = keyString
        connection = Mutex(SQLiteConnection(path: self.file.path))
    }

    /// Creates a storage in the database `name` inside the platform's cache folder
    /// (``DiskStorage/cacheFolder()``), such as `"my-tool/rows.sqlite"`.
    ///
    /// - Throws: ``SQLiteStorageError`` with `.invalidName` for an empty or absolute name or one
    ///   containing `..`, or `.noCacheFolder` when no cache folder can be found.
    public convenience init(
        name: String,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        keyString: @escaping @Sendable (Key) -> String
    ) throws(SQLiteStorageError) {
        let components = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !name.isEmpty, !name.hasPrefix("/"), !name.contains("\0"),
              components.allSatisfy({ !$0.isEmpty && $0 != ".." && $0 != "." })
        else { throw SQLiteStorageError(.invalidName, path: name) }
        let folder: URL
        do {
            folder = try DiskStorage<String>.cacheFolder()
        } catch {
            throw SQLiteStorageError(.noCacheFolder, path: "")
        }
        self.init(
            file: folder.appendingPathComponent(name), sizeLimit: sizeLimit, countLimit: countLimit, timeToLive: timeToLive,
            now: now, keyString: keyString
        )
    }

    deinit {
        connection.withLock { connection in try? flushUses(connection) }
    }

    // MARK: Storage

    /// The bytes stored for `key`, or `nil` if absent, expired, unreadable or damaged.
    public func value(for key: Key) -> Data? {
        (try? entry(for: key))?.data
    }

    /// The bytes stored for `key`, marked stale when the entry expired; `nil` if absent, unreadable
    /// or damaged.
    public func lookup(_ key: Key) -> StoredValue<Data>? {
        guard let entry = try? entry(for: key, includingExpired: true) else { return nil }
        return StoredValue(entry.data, isStale: isExpired(entry))
    }

    /// Stores `value` for `key`; a failure leaves a miss. Use ``write(_:for:storedAt:expiresAt:)``
    /// to learn why a write failed.
    public func set(_ value: Data, for key: Key) {
        try? write(value, for: key)
    }

    /// Deletes the entry for `key`.
    public func removeValue(for key: Key) {
        let name = keyString(key)
        try? withConnection { connection throws(SQLiteStorageError) in
            connection.uses[name] = nil
            let statement = try connection.statement("DELETE FROM entries WHERE key = ?1")
            connection.bind(statement, 1, name)
            try connection.run(statement)
        }
    }

    /// Deletes every entry.
    public func removeAll() {
        try? withConnection { connection throws(SQLiteStorageError) in
            connection.uses = [:]
            try transaction(connection) { () throws(SQLiteStorageError) in
                try connection.execute("DELETE FROM entries")
            }
        }
    }

    // MARK: Entries

    /// Writes `data` for `key` in one transaction, evicting least recently used entries if a limit
    /// is exceeded.
    ///
    /// - Parameters:
    ///   - storedAt: when the data was produced, if earlier than now; now by default.
    ///   - expiresAt: when the entry stops being served; by default `timeToLive` after `storedAt`,
    ///     or never.
    /// - Throws: ``SQLiteStorageError``: `.exceedsLimit` (the older entry for the key is removed, so
    ///   a read never returns a value older than the last write), `.diskFull`, `.busy`,
    ///   `.permissionDenied`, `.unsafeFile`, `.folderUnavailable`, `.io`. A failed write changes
    ///   nothing.
    public func write(_ data: Data, for key: Key, storedAt: Date? = nil, expiresAt: Date? = nil) throws(SQLiteStorageError) {
        let name = keyString(key)
        let size = name.utf8.count.addingReportingOverflow(data.count)
        if countLimit == 0 || size.overflow || sizeLimit.map({ size.partialValue > $0 }) ?? false {
            removeValue(for: key)
            throw SQLiteStorageError(.exceedsLimit, path: name, detail: countLimit == 0 ? "the countLimit is 0" : "\(size.partialValue) bytes with its key, over the sizeLimit")
        }
        let written = storedAt ?? now()
        let expires = expiresAt ?? timeToLive.map { written.addingTimeInterval(Self.seconds($0)) }
        let usedAt = Self.nanoseconds(now())
        try withConnection { connection throws(SQLiteStorageError) in
            connection.uses[name] = nil
            try transaction(connection) { () throws(SQLiteStorageError) in
                try writeUses(connection)
                let statement = try connection.statement(
                    """
                    INSERT INTO entries(key, value, size, stored_at, expires_at, used_at, checksum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                    ON CONFLICT(key) DO UPDATE SET value = excluded.value, size = excluded.size, stored_at = excluded.stored_at,
                        expires_at = excluded.expires_at, used_at = excluded.used_at, checksum = excluded.checksum
                    """
                )
                connection.bind(statement, 1, name)
                connection.bind(statement, 3, Int64(size.partialValue))
                connection.bind(statement, 4, written.timeIntervalSince1970)
                connection.bind(statement, 5, expires?.timeIntervalSince1970)
                connection.bind(statement, 6, usedAt)
                connection.bind(statement, 7, Self.checksum(name, data, written.timeIntervalSince1970, expires?.timeIntervalSince1970))
                let result = data.withUnsafeBytes { bytes in
                    connection.bindBlob(statement, 2, bytes)
                    return connection.step(statement)  // before the bytes go: they are not copied
                }
                guard result == SQLITE_DONE else { throw connection.failure(result) }
                try evictIfOver(connection, sparing: name)
            }
        }
    }

    /// The entry for `key` with its dates, or `nil` if there is none or it expired (unless
    /// `includingExpired`). A damaged entry (its checksum does not match) is deleted and reads as
    /// `nil`.
    ///
    /// - Throws: ``SQLiteStorageError`` when the database cannot be opened or read.
    public func entry(for key: Key, includingExpired: Bool = false) throws(SQLiteStorageError) -> Entry? {
        let name = keyString(key)
        let usedAt = Self.nanoseconds(now())
        let found = try withConnection { connection throws(SQLiteStorageError) -> Entry? in
            let statement = try connection.statement("SELECT value, stored_at, expires_at, checksum FROM entries WHERE key = ?1")
            defer { sqlite3_reset(statement) }
            connection.bind(statement, 1, name)
            let result = sqlite3_step(statement)
            if result == SQLITE_DONE { return nil }
            guard result == SQLITE_ROW else { throw connection.failure(result) }
            let count = Int(sqlite3_column_bytes(statement, 0))
            let data = sqlite3_column_blob(statement, 0).map { Data(bytes: $0, count: count) } ?? Data()
            let storedAt = sqlite3_column_double(statement, 1)
            let expiresAt: Double? = sqlite3_column_type(statement, 2) == SQLITE_NULL ? nil : sqlite3_column_double(statement, 2)
            guard sqlite3_column_int64(statement, 3) == Self.checksum(name, data, storedAt, expiresAt) else {
                sqlite3_reset(statement)
                let remove = try connection.statement("DELETE FROM entries WHERE key = ?1")
                connection.bind(remove, 1, name)
                try? connection.run(remove)
                return nil
            }
            connection.uses[name] = usedAt
            if connection.uses.count >= Self.usesKept { try? flushUses(connection) }
            return Entry(data: data, storedAt: Date(timeIntervalSince1970: storedAt), expiresAt: expiresAt.map(Date.init(timeIntervalSince1970:)))
        }
        guard let found else { return nil }
        return includingExpired || !isExpired(found) ? found : nil
    }

    /// The entries and their total size in bytes (keys and values), as every process sharing the
    /// database sees them.
    public var usage: DiskUsage? {
        try? withConnection { connection throws(SQLiteStorageError) -> DiskUsage in
            let statement = try connection.statement("SELECT count, size FROM totals WHERE id = 0")
            defer { sqlite3_reset(statement) }
            let result = sqlite3_step(statement)
            guard result == SQLITE_ROW else { throw connection.failure(result) }
            return DiskUsage(count: Int(clamping: max(0, sqlite3_column_int64(statement, 0))), size: Int(clamping: max(0, sqlite3_column_int64(statement, 1))))
        }
    }

    /// Writes the recency of the reads made since the last write (it is also written with each
    /// write, and every 1,024 reads).
    public func flush() throws(SQLiteStorageError) {
        try withConnection { connection throws(SQLiteStorageError) in try flushUses(connection) }
    }

    // MARK: Internals

    private func isExpired(_ entry: Entry) -> Bool {
        let now = now()
        if entry.storedAt.timeIntervalSince(now) > 1 { return true }  // the wall clock moved back
        return entry.expiresAt.map { $0 <= now } ?? false
    }

    /// Runs `body` with the open connection; a database found damaged is set aside and `body` runs
    /// once more on a new one.
    private func withConnection<Result: Sendable>(_ body: (SQLiteConnection) throws(SQLiteStorageError) -> Result) throws(SQLiteStorageError) -> Result {
        try connection.withLock { (connection: inout SQLiteConnection) throws(SQLiteStorageError) -> Result in
            try connection.open(busyTimeout: Self.busyTimeout)
            do throws(SQLiteStorageError) {
                return try body(connection)
            } catch where error.isDamage {
                connection.close()
                connection.uses = [:]
                try connection.open(busyTimeout: Self.busyTimeout, settingAside: true)
                return try body(connection)
            }
        }
    }

    private func transaction(_ connection: SQLiteConnection, _ body: () throws(SQLiteStorageError) -> Void) throws(SQLiteStorageError) {
        try connection.execute("BEGIN IMMEDIATE")
        do throws(SQLiteStorageError) {
            try body()
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    private func flushUses(_ connection: SQLiteConnection) throws(SQLiteStorageError) {
        guard connection.isOpen, !connection.uses.isEmpty else { return }
        try transaction(connection) { () throws(SQLiteStorageError) in try writeUses(connection) }
    }

    /// Writes the pending recency, inside the caller's transaction.
    private func writeUses(_ connection: SQLiteConnection) throws(SQLiteStorageError) {
        guard !connection.uses.isEmpty else { return }
        let statement = try connection.statement("UPDATE entries SET used_at = max(used_at, ?2) WHERE key = ?1")
        for (name, usedAt) in connection.uses {
            sqlite3_reset(statement)
            connection.bind(statement, 1, name)
            connection.bind(statement, 2, usedAt)
            try connection.run(statement)
        }
        connection.uses = [:]
    }

    /// Deletes the least recently used entries but `spared` down to 80 % of the limits, if a limit
    /// is exceeded (inside the caller's transaction).
    private func evictIfOver(_ connection: SQLiteConnection, sparing spared: String) throws(SQLiteStorageError) {
        guard sizeLimit != nil || countLimit != nil else { return }
        let totals = try connection.statement("SELECT count, size FROM totals WHERE id = 0")
        var result = sqlite3_step(totals)
        guard result == SQLITE_ROW else {
            sqlite3_reset(totals)
            throw connection.failure(result)
        }
        var count = max(0, sqlite3_column_int64(totals, 0))
        var size = max(0, sqlite3_column_int64(totals, 1))
        sqlite3_reset(totals)
        let countTarget = Int64(countLimit.map { $0 / 5 * 4 + $0 % 5 * 4 / 5 } ?? Int.max)
        let sizeTarget = Int64(sizeLimit.map { $0 / 5 * 4 + $0 % 5 * 4 / 5 } ?? Int.max)
        let over = countLimit.map { count > Int64($0) } ?? false || sizeLimit.map { size > Int64($0) } ?? false
        guard over else { return }
        var victims: [Int64] = []
        let oldest = try connection.statement("SELECT rowid, size FROM entries WHERE key <> ?1 ORDER BY used_at, rowid")
        connection.bind(oldest, 1, spared)
        while count > countTarget || size > sizeTarget {
            result = sqlite3_step(oldest)
            guard result == SQLITE_ROW else { break }
            victims.append(sqlite3_column_int64(oldest, 0))
            count -= 1
            size -= min(size, max(0, sqlite3_column_int64(oldest, 1)))
        }
        sqlite3_reset(oldest)
        guard result == SQLITE_ROW || result == SQLITE_DONE else { throw connection.failure(result) }
        let remove = try connection.statement("DELETE FROM entries WHERE rowid = ?1")
        for rowid in victims {
            sqlite3_reset(remove)
            connection.bind(remove, 1, rowid)
            try connection.run(remove)
        }
    }

    /// FNV-1a over the key, the value and the dates: what SQLite does not check in a page's content.
    static func checksum(_ key: String, _ data: Data, _ storedAt: Double, _ expiresAt: Double?) -> Int64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        func mix<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
            for byte in bytes {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01B3
            }
        }
        mix(key.utf8)
        mix([0])
        data.withUnsafeBytes { mix($0) }
        withUnsafeBytes(of: storedAt.bitPattern.littleEndian) { mix($0) }
        withUnsafeBytes(of: (expiresAt ?? -1).bitPattern.littleEndian) { mix($0) }
        return Int64(bitPattern: hash)
    }

    /// Wall-clock nanoseconds since 1970, clamped.
    static func nanoseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1e9).rounded()
        guard !value.isNaN else { return 0 }
        if value >= 9_223_372_036_854_775_807.0 { return .max }
        if value <= -9_223_372_036_854_775_808.0 { return .min }
        return Int64(value)
    }

    /// A duration in seconds (huge durations are huge doubles; never traps).
    static func seconds(_ duration: Duration) -> Double {
        duration / .seconds(1)
    }
}

extension SQLiteStorage where Key: LosslessStringConvertible {
    /// Creates a storage in `file` for keys whose `description` is their stable string form
    /// (`String`, `Int`…). See ``init(file:sizeLimit:countLimit:timeToLive:now:keyString:)``.
    public convenience init(
        file: URL,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(file: file, sizeLimit: sizeLimit, countLimit: countLimit, timeToLive: timeToLive, now: now) { $0.description }
    }

    /// Creates a storage in the database `name` in the cache folder, for keys whose `description` is
    /// their stable string form. See ``init(name:sizeLimit:countLimit:timeToLive:now:keyString:)``.
    public convenience init(
        name: String,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(SQLiteStorageError) {
        try self.init(name: name, sizeLimit: sizeLimit, countLimit: countLimit, timeToLive: timeToLive, now: now) { $0.description }
    }
}

extension SQLiteStorage where Key == URL {
    /// Creates a storage in `file` keyed by URLs (their absolute string).
    public convenience init(
        file: URL,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(file: file, sizeLimit: sizeLimit, countLimit: countLimit, timeToLive: timeToLive, now: now) { $0.absoluteString }
    }
}
