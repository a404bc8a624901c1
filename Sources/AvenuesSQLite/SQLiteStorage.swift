import Avenues
import CSQLite
import Foundation

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
///   wrong value. Commits are transactions, so a process killed mid-write leaves the old entry or
///   the new one.
/// - **Batched:** ``set(_:for:)`` — what an ``Avenue`` calls — makes its value readable at once in
///   this instance and commits it with the values set within the next 10 ms (or 512 of them) in one
///   transaction: one commit per value cost more than a file per value. ``write(_:for:storedAt:expiresAt:)``
///   commits before it returns. Reads are served from a snapshot at most 20 ms old (a read
///   transaction per read cost as much as the read), so another instance or process sees a commit
///   within 20 ms; a killed process loses at most its last 10 ms of `set`s, never a value's bytes;
///   one that exits normally (`exit()`, or returning from `main`) commits them first.
/// - **Checked:** every entry carries a checksum of its key, value and dates: a damaged page that
///   SQLite itself does not notice reads as a miss. A file that is not a database of ours —
///   corrupt, truncated, another program's — is renamed aside (`….corrupt`) and a new one created.
/// - **Limits:** with a `sizeLimit` (key and value bytes) and/or `countLimit`, a write that goes over
///   deletes the least recently used entries down to 80 % of the limits in the same transaction,
///   never the entry just written; so after any write returns, the database fits its limits,
///   whichever process wrote. Recency is each read's time to the nearest ten seconds, written in
///   batches (with the next commit, or every 1,024 reads) so that reads do not become writes.
/// - **Expiry:** with a `timeToLive`, expired entries read as misses with ``value(for:)`` and as
///   stale copies with ``lookup(_:)``; an entry stored "in the future" (the wall clock moved back)
///   is expired.
/// - **Safety:** the file is created 0600 (its folder, if missing, 0700); a symbolic link in its
///   place, or in place of its folder, and a folder shared by every user (sticky, such as `/tmp`)
///   are refused (``SQLiteStorageError/Reason/unsafeFile``). An existing folder others can write
///   in is tightened to 0700; one they can only read (a home folder) is left as it is.
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
    /// Where the delayed commits and the ends of read transactions run: a queue of its own, not the
    /// tasks' cooperative pool, which work blocking its threads could hold up for seconds (it did,
    /// in a parallel test run).
    private let timers = DispatchQueue(label: "AvenuesSQLite.SQLiteStorage")
    private let now: @Sendable () -> Date
    private let connection: GuardedConnection

    /// How long a write waits for another process's transaction, in milliseconds.
    static var busyTimeout: Int32 { 5_000 }
    /// Reads whose recency is kept in memory before it is written.
    static var usesKept: Int { 1_024 }
    /// How stale an entry's recorded use may be before a read records it again (nanoseconds).
    static var recencyResolution: Int64 { 10_000_000_000 }

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
        connection = GuardedConnection(SQLiteConnection(path: self.file.path))
        ExitCommits.shared.add(ObjectIdentifier(self)) { [weak self] in self?.commitWaiting() }
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
        ExitCommits.shared.remove(ObjectIdentifier(self))
        commitWaiting()
    }

    /// Commits the values `set` that wait for their batch: when the storage is released, and when
    /// the process exits normally (a global storage is never released).
    private func commitWaiting() {
        connection.withLock { connection in try? commitPending(connection) }
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

    /// Stores `value` for `key`: readable at once through this instance, committed with the values
    /// set within the next few milliseconds in one transaction (one commit per value cost more than
    /// a file per value; see the type's notes). A failure leaves a miss. Use
    /// ``write(_:for:storedAt:expiresAt:)`` to commit before returning and learn why a write failed.
    public func set(_ value: Data, for key: Key) {
        let name = keyString(key)
        guard let write = try? pendingWrite(value, name: name, storedAt: nil, expiresAt: nil) else {
            removeValue(for: key)
            return
        }
        let schedule = connection.withLock { connection -> Bool in
            connection.addPending(write, for: name)
            if connection.pending.count >= batchCount || connection.pendingBytes >= batchBytes {
                try? commitPending(connection)
                return false
            }
            guard !connection.flushScheduled else { return false }
            connection.flushScheduled = true
            return true
        }
        if schedule {
            timers.asyncAfter(deadline: .now() + Self.commitDelay) { [weak self] in self?.commitScheduled() }
        }
    }

    /// The bytes of the values waiting for their commit (for tests).
    var pendingBytes: Int { connection.withLock { $0.pendingBytes } }

    /// How long a value given to `set` waits for others to share its commit.
    static var commitDelay: DispatchTimeInterval { .milliseconds(10) }

    /// The most values in one commit: at most half of the limits, so that the batch itself always
    /// fits (eviction spares it).
    private var batchCount: Int { max(1, min(512, (countLimit ?? .max) / 2)) }
    private var batchBytes: Int { max(1, min(8 << 20, (sizeLimit ?? .max) / 2)) }

    /// Ends the read transaction once it is old, so that it never holds back other processes'
    /// changes or the WAL's checkpoints for long.
    private func scheduleReadEnd(_ connection: SQLiteConnection) {
        guard !connection.readEndScheduled else { return }
        connection.readEndScheduled = true
        timers.asyncAfter(deadline: .now() + .milliseconds(SQLiteConnection.readAgeMilliseconds)) { [weak self] in self?.endOldRead() }
    }

    private func endOldRead() {
        let again = connection.withLock { connection -> Bool in
            connection.readEndScheduled = false
            guard connection.readIsOld else { return connection.isReading }
            connection.endRead()
            return false
        }
        if again { connection.withLock { scheduleReadEnd($0) } }
    }

    private func commitScheduled() {
        connection.withLock { connection in
            connection.flushScheduled = false
            try? commitPending(connection)
        }
    }

    /// Deletes the entry for `key`.
    public func removeValue(for key: Key) {
        let name = keyString(key)
        try? withConnection { connection throws(SQLiteStorageError) in
            connection.uses[name] = nil
            if let removed = connection.pending.removeValue(forKey: name) {
                connection.pendingBytes -= removed.size
                connection.pendingOrder.removeAll { $0 == name }
            }
            let statement = try connection.statement("DELETE FROM entries WHERE key = ?1")
            connection.bind(statement, 1, name)
            connection.endRead()
            try connection.run(statement)
        }
    }

    /// Deletes every entry.
    public func removeAll() {
        try? withConnection { connection throws(SQLiteStorageError) in
            connection.uses = [:]
            connection.pending = [:]
            connection.pendingOrder = []
            connection.pendingBytes = 0
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
    ///     or never. A date that is not a number (NaN) counts as 1970, as in `DiskStorage`.
    /// - Throws: ``SQLiteStorageError``: `.exceedsLimit` for a value over the `sizeLimit` or longer
    ///   than SQLite stores (a row of 1,000,000,000 bytes as usually built; the older entry for the
    ///   key is removed, so a read never returns a value older than the last write), `.diskFull`, `.busy`,
    ///   `.permissionDenied`, `.unsafeFile`, `.folderUnavailable`, `.io`. A failed write changes
    ///   nothing.
    public func write(_ data: Data, for key: Key, storedAt: Date? = nil, expiresAt: Date? = nil) throws(SQLiteStorageError) {
        let name = keyString(key)
        let write: PendingWrite
        do {
            write = try pendingWrite(data, name: name, storedAt: storedAt, expiresAt: expiresAt)
        } catch {
            removeValue(for: key)
            throw error
        }
        try withConnection { connection throws(SQLiteStorageError) in
            connection.addPending(write, for: name)
            try commitPending(connection)
        }
    }

    /// `data` for `name` as it will be committed; `.exceedsLimit` if it can never fit.
    private func pendingWrite(_ data: Data, name: String, storedAt: Date?, expiresAt: Date?) throws(SQLiteStorageError) -> PendingWrite {
        let size = name.utf8.count.addingReportingOverflow(data.count)
        if countLimit == 0 || size.overflow || sizeLimit.map({ size.partialValue > $0 }) ?? false {
            throw SQLiteStorageError(.exceedsLimit, path: name, detail: countLimit == 0 ? "the countLimit is 0" : "\(size.partialValue) bytes with its key, over the sizeLimit")
        }
        // SQLite refuses a row longer than its length limit; checked here, so that such a value is
        // refused by itself rather than failing the batch it would have been committed with.
        guard size.partialValue <= SQLiteConnection.largestRow - SQLiteConnection.rowOverhead else {
            throw SQLiteStorageError(
                .exceedsLimit, path: name,
                detail: "\(size.partialValue) bytes with its key, and SQLite stores rows of at most \(SQLiteConnection.largestRow) bytes; keep values this large in files (DiskStorage)"
            )
        }
        // A date that is not a number is the epoch, as in DiskStorage: SQLite stores NaN as NULL, so
        // such an entry was refused (stored_at) or deleted by its first read (expires_at).
        let written = Self.secondsSinceEpoch(storedAt ?? now())
        let expires = expiresAt.map(Self.secondsSinceEpoch) ?? timeToLive.map { written + Self.seconds($0) }
        return PendingWrite(data: data, size: size.partialValue, storedAt: written, expiresAt: expires, usedAt: Self.nanoseconds(now()))
    }

    /// Commits the pending values (and the pending recency) in one transaction, evicting what the
    /// limits ask for but none of them. On failure they are dropped: a later miss.
    private func commitPending(_ connection: SQLiteConnection) throws(SQLiteStorageError) {
        let order = connection.pendingOrder
        let pending = connection.pending
        connection.pending = [:]
        connection.pendingOrder = []
        connection.pendingBytes = 0
        guard !order.isEmpty || !connection.uses.isEmpty else { return }
        try connection.open(busyTimeout: Self.busyTimeout, verifyingFile: true)
        try transaction(connection) { () throws(SQLiteStorageError) in
            try writeUses(connection)
            guard !order.isEmpty else { return }
            let statement = try connection.statement(
                """
                INSERT INTO entries(key, value, size, stored_at, expires_at, used_at, checksum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                ON CONFLICT(key) DO UPDATE SET value = excluded.value, size = excluded.size, stored_at = excluded.stored_at,
                    expires_at = excluded.expires_at, used_at = excluded.used_at, checksum = excluded.checksum
                """
            )
            for name in order {
                guard let write = pending[name] else { continue }
                connection.bind(statement, 1, name)
                connection.bind(statement, 3, Int64(write.size))
                connection.bind(statement, 4, write.storedAt)
                connection.bind(statement, 5, write.expiresAt)
                connection.bind(statement, 6, write.usedAt)
                connection.bind(statement, 7, Self.checksum(name, write.data, write.storedAt, write.expiresAt))
                let result = write.data.withUnsafeBytes { bytes in
                    let bound = connection.bindBlob(statement, 2, bytes)
                    // A refused binding leaves NULL bound: say why, not "NOT NULL constraint failed".
                    guard bound == SQLITE_OK else { return bound }
                    return connection.step(statement)  // before the bytes go: they are not copied
                }
                guard result == SQLITE_DONE else { throw connection.failure(result) }
            }
            try evictIfOver(connection, sparing: Set(order))
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
            if let write = connection.pending[name] {
                return Entry(
                    data: write.data, storedAt: Date(timeIntervalSince1970: write.storedAt),
                    expiresAt: write.expiresAt.map(Date.init(timeIntervalSince1970:))
                )
            }
            if try connection.beginRead() { scheduleReadEnd(connection) }
            let statement = try connection.statement("SELECT value, stored_at, expires_at, checksum, used_at FROM entries WHERE key = ?1")
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
                connection.endRead()
                try? connection.run(remove)
                return nil
            }
            // Recency to the nearest ten seconds: an entry used that recently is among the last to go
            // anyway, and writing each read's time again cost as much as the read.
            if usedAt &- sqlite3_column_int64(statement, 4) >= Self.recencyResolution {
                connection.uses[name] = usedAt
                if connection.uses.count >= Self.usesKept { try? flushUses(connection) }
            }
            return Entry(data: data, storedAt: Date(timeIntervalSince1970: storedAt), expiresAt: expiresAt.map(Date.init(timeIntervalSince1970:)))
        }
        guard let found else { return nil }
        return includingExpired || !isExpired(found) ? found : nil
    }

    /// The entries and their total size in bytes (keys and values), as every process sharing the
    /// database sees them.
    public var usage: DiskUsage? {
        try? withConnection { connection throws(SQLiteStorageError) -> DiskUsage in
            try commitPending(connection)
            connection.endRead()  // the totals of now, not of the read snapshot
            let statement = try connection.statement("SELECT count, size FROM totals WHERE id = 0")
            defer { sqlite3_reset(statement) }
            let result = sqlite3_step(statement)
            guard result == SQLITE_ROW else { throw connection.failure(result) }
            return DiskUsage(count: Int(clamping: max(0, sqlite3_column_int64(statement, 0))), size: Int(clamping: max(0, sqlite3_column_int64(statement, 1))))
        }
    }

    /// Commits the values given to ``set(_:for:)`` that wait for their commit (they are also
    /// committed by themselves within 10 ms) and the recency of the reads not written yet (it is
    /// also written with each commit, every 1,024 reads, and when the instance goes).
    public func flush() throws(SQLiteStorageError) {
        try withConnection { connection throws(SQLiteStorageError) in try commitPending(connection) }
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
        try connection.withLock { (connection: SQLiteConnection) throws(SQLiteStorageError) -> Result in
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
        connection.endRead()
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
    private func evictIfOver(_ connection: SQLiteConnection, sparing spared: Set<String>) throws(SQLiteStorageError) {
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
        let oldest = try connection.statement("SELECT rowid, size, key FROM entries ORDER BY used_at, rowid")
        while count > countTarget || size > sizeTarget {
            result = sqlite3_step(oldest)
            guard result == SQLITE_ROW else { break }
            if !spared.isEmpty, spared.contains(connection.text(oldest, 2)) { continue }
            victims.append(sqlite3_column_int64(oldest, 0))
            count -= 1
            size -= min(size, max(0, sqlite3_column_int64(oldest, 1)))
        }
        sqlite3_reset(oldest)
        guard result == SQLITE_ROW || result == SQLITE_DONE else { throw connection.failure(result) }
        // One statement for the lot, in the table's order (each page visited once): a statement
        // per row cost a quarter of the sweep.
        let remove = try connection.statement("DELETE FROM entries WHERE rowid IN (SELECT value FROM json_each(?1))")
        victims.sort()
        for chunk in stride(from: 0, to: victims.count, by: 10_000) {
            let rowids = victims[chunk..<min(chunk + 10_000, victims.count)]
            connection.bind(remove, 1, "[" + rowids.map(String.init).joined(separator: ",") + "]")
            try connection.run(remove)
        }
    }

    /// FNV-1a over the key, the value and the dates: what SQLite does not check in a page's content.
    static func checksum(_ key: String, _ data: Data, _ storedAt: Double, _ expiresAt: Double?) -> Int64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        var key = key
        key.withUTF8 { hash = fnv1a(UnsafeRawBufferPointer($0), hash) }
        hash = fnv1a(0, hash)
        data.withUnsafeBytes { hash = fnv1a($0, hash) }
        withUnsafeBytes(of: storedAt.bitPattern.littleEndian) { hash = fnv1a($0, hash) }
        withUnsafeBytes(of: (expiresAt ?? -1).bitPattern.littleEndian) { hash = fnv1a($0, hash) }
        return Int64(bitPattern: hash)
    }

    @inline(__always)
    private static func fnv1a(_ bytes: UnsafeRawBufferPointer, _ hash: UInt64) -> UInt64 {
        var hash = hash
        for index in 0..<bytes.count { hash = fnv1a(bytes[index], hash) }
        return hash
    }

    @inline(__always)
    private static func fnv1a(_ byte: UInt8, _ hash: UInt64) -> UInt64 {
        (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }

    /// Seconds since 1970 as stored: NaN is 0; infinities stay (SQLite keeps them).
    static func secondsSinceEpoch(_ date: Date) -> Double {
        let seconds = date.timeIntervalSince1970
        return seconds.isNaN ? 0 : seconds
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

/// The connection behind a lock. An `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`:
/// ThreadSanitizer sees its ordering, and every operation here is a database call anyway.
// Safe: the connection is reached only through `withLock`, under the lock.
final class GuardedConnection: @unchecked Sendable {
    private let lock = NSLock()
    private let connection: SQLiteConnection

    init(_ connection: SQLiteConnection) {
        self.connection = connection
    }

    func withLock<Result, Failure: Error>(_ body: (SQLiteConnection) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(connection)
    }
}

/// Every live ``SQLiteStorage``, so that the values its `set` left waiting for their batched commit
/// are committed when the process exits normally: `exit()` (or returning from `main`) releases no
/// global, and they were lost (all 300 of a tool that `set` them and ended).
private final class ExitCommits: Sendable {
    static let shared = ExitCommits()

    private let commits = Locked<[ObjectIdentifier: @Sendable () -> Void]>([:])

    private init() {
        // Registered once, when the first storage is made: at exit each commits what waits.
        atexit { ExitCommits.shared.commitAll() }
    }

    func add(_ storage: ObjectIdentifier, _ commit: @escaping @Sendable () -> Void) {
        commits.withLock { $0[storage] = commit }
    }

    func remove(_ storage: ObjectIdentifier) {
        _ = commits.withLock { $0.removeValue(forKey: storage) }
    }

    private func commitAll() {
        // Outside the lock: a commit takes the storage's own lock (never the other way round).
        for commit in commits.withLock({ Array($0.values) }) { commit() }
    }
}
