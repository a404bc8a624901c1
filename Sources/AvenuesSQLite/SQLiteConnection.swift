import CSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif

/// A value waiting for its commit.
struct PendingWrite {
    let data: Data
    let size: Int
    let storedAt: Double
    let expiresAt: Double?
    let usedAt: Int64
}

/// Which file a path named: its device and inode.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }

    /// What is at `path` now (not following a link), or `nil` with `errno` set.
    init?(at path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(info)
    }
}

/// SQLite's "copy the bytes now" destructor, which C spells `SQLITE_TRANSIENT`.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One connection to a storage's database, its prepared statements and the reads whose recency is
/// not written yet. Not thread-safe: ``SQLiteStorage`` uses it under its lock only.
final class SQLiteConnection {
    /// `AVNS`: marks the file as ours, so a database of another program is set aside, not used.
    static let applicationID: Int32 = 0x4156_4E53
    static let schemaVersion: Int32 = 1

    let path: String
    private(set) var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// Keys read since recency was last written, and when (wall-clock nanoseconds).
    var uses: [String: Int64] = [:]
    /// Values given to `set` and not committed yet, by key; the order they came in.
    var pending: [String: PendingWrite] = [:]
    var pendingOrder: [String] = []
    var pendingBytes = 0
    /// Adds `write` to the values waiting for their commit (replacing one for the same key).
    func addPending(_ write: PendingWrite, for name: String) {
        if let replaced = pending.updateValue(write, forKey: name) {
            pendingBytes -= replaced.size
        } else {
            pendingOrder.append(name)
        }
        pendingBytes += write.size
        uses[name] = nil
    }

    /// A commit of the pending values is scheduled.
    var flushScheduled = false
    /// The read transaction kept open across reads, when it began and how many reads it served.
    private var readStarted: ContinuousClock.Instant?
    private var readCount = 0
    /// Its end is scheduled.
    var readEndScheduled = false
    /// The oldest snapshot a read is served from, and the most reads in one transaction.
    static let readAgeMilliseconds = 20
    static var readAge: Duration { .milliseconds(readAgeMilliseconds) }
    static let readsPerTransaction = 1_000

    /// Serves the next read from the open read transaction if it is younger than ``readAge``, else
    /// from a new one: a transaction per read cost as much as the read (WAL's read locks). Returns
    /// whether one began (its end must be scheduled).
    func beginRead() throws(SQLiteStorageError) -> Bool {
        if let readStarted, readCount < Self.readsPerTransaction, ContinuousClock.now - readStarted < Self.readAge {
            readCount += 1
            return false
        }
        endRead()
        try execute("BEGIN")
        readStarted = .now
        readCount = 1
        return true
    }

    /// Ends the read transaction, if one is open: before any change, and when it grows old.
    func endRead() {
        guard readStarted != nil else { return }
        readStarted = nil
        readCount = 0
        if (try? execute("COMMIT")) == nil { try? execute("ROLLBACK") }
    }

    /// Whether a read transaction is open.
    var isReading: Bool { readStarted != nil }

    /// Whether the read transaction is older than ``readAge``.
    var readIsOld: Bool { readStarted.map { ContinuousClock.now - $0 >= Self.readAge } ?? false }

    init(path: String) {
        self.path = path
    }

    deinit {
        close()
    }

    var isOpen: Bool { handle != nil }

    func close() {
        endRead()
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    // MARK: Opening

    /// Opens the database, creating it (0600; a missing folder 0700) or its schema as needed. A file
    /// that is not a database of ours — corrupt, truncated, another program's, from a newer
    /// version — is set aside (renamed with `.corrupt`) and a new one created in its place.
    ///
    /// An open database whose file was deleted or replaced since (a cache folder cleared while the
    /// program runs) is closed and opened again at its path: every later write would otherwise go to
    /// a file no other process, and no later run, can read. That is looked for at most every
    /// ``readAge`` (an `lstat`), and always when `verifyingFile` (before a commit).
    func open(busyTimeout: Int32, settingAside: Bool = false, verifyingFile: Bool = false) throws(SQLiteStorageError) {
        if settingAside {
            close()
            setAside()
        }
        if handle != nil {
            guard fileWasReplaced(checkingNow: verifyingFile) else { return }
            close()
            removeOwnCompanions()
        }
        do {
            try openOnce(busyTimeout: busyTimeout)
        } catch let error where error.isDamage {
            close()
            setAside()
            try openOnce(busyTimeout: busyTimeout)
        }
    }

    /// The device and inode of the file opened, and when the path was last compared with them.
    private var openedFile: FileIdentity?
    private var fileChecked = ContinuousClock.now
    /// The WAL and shared-memory files of the database opened, by suffix.
    private var companions: [String: FileIdentity] = [:]

    /// Deletes the WAL and shared-memory files at the path that belong to the database just closed
    /// because its file is gone or replaced. SQLite leaves them when its file moved (they might be
    /// another database's), and the next database made at the path would read them as its own: the
    /// deleted entries back, the new file's own hidden.
    private func removeOwnCompanions() {
        for (suffix, identity) in companions where FileIdentity(at: path + suffix) == identity { _ = unlink(path + suffix) }
        companions = [:]
    }

    /// Whether the file at ``path`` is gone or another than the one open.
    private func fileWasReplaced(checkingNow: Bool) -> Bool {
        guard let openedFile else { return false }
        let now = ContinuousClock.now
        guard checkingNow || now - fileChecked >= Self.readAge else { return false }
        fileChecked = now
        guard let current = FileIdentity(at: path) else { return errno == ENOENT || errno == ENOTDIR }
        return current != openedFile
    }

    private func openOnce(busyTimeout: Int32) throws(SQLiteStorageError) {
        // SQLite's file system layer opens paths of at most `mxPathname` bytes (512 on Unix), its
        // WAL's (`-wal`) included; longer, it said only "unable to open database file".
        let longest = Int(sqlite3_vfs_find(nil)?.pointee.mxPathname ?? 512)
        guard path.utf8.count + 4 < longest else {
            throw SQLiteStorageError(
                .io, path: path,
                detail: "its path is \(path.utf8.count) bytes, and SQLite opens paths of fewer than \(longest - 4): choose a shorter one"
            )
        }
        try Self.prepareFolder(of: path)
        openedFile = try Self.prepareFile(path)
        fileChecked = .now
        var database: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | Self.noFollow
        let result = sqlite3_open_v2(path, &database, flags, nil)
        handle = database
        guard result == SQLITE_OK else {
            let error = failure(result)
            close()
            throw error
        }
        sqlite3_extended_result_codes(database, 1)
        sqlite3_busy_timeout(database, busyTimeout)
        // WAL: readers never wait for the writer; NORMAL: a crash loses at most the last
        // transactions, never the database's consistency.
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=NORMAL")
        // The WAL is reused after each checkpoint; without a limit it stays at its largest size.
        try execute("PRAGMA journal_size_limit=1048576")
        try checkSchema()
        // Both exist once a transaction ran (the schema check's).
        companions = [:]
        for suffix in ["-wal", "-shm"] { companions[suffix] = FileIdentity(at: path + suffix) }
    }

    /// Our schema, or a fresh one in an empty database; `.io` with SQLITE_NOTADB for anything else.
    private func checkSchema() throws(SQLiteStorageError) {
        if try integer("PRAGMA application_id") == Int64(Self.applicationID) {
            guard try integer("PRAGMA user_version") == Int64(Self.schemaVersion) else {
                throw SQLiteStorageError(.io, path: path, code: SQLITE_NOTADB, detail: "a database of another version")
            }
            return
        }
        try execute("BEGIN IMMEDIATE")
        do throws(SQLiteStorageError) {
            // Checked again inside the write lock: another process may have just created it.
            if try integer("PRAGMA application_id") == Int64(Self.applicationID) {
                try execute("COMMIT")
                return
            }
            guard try integer("SELECT count(*) FROM sqlite_master") == 0 else {
                throw SQLiteStorageError(.io, path: path, code: SQLITE_NOTADB, detail: "a database of another program")
            }
            for statement in Self.schema { try execute(statement) }
            try execute("PRAGMA application_id=\(Self.applicationID)")
            try execute("PRAGMA user_version=\(Self.schemaVersion)")
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Entries, and their count and size kept by triggers in the same transaction as each change
    /// (a `count(*)` per write would be linear in the entries).
    static let schema = [
        """
        CREATE TABLE entries(key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, size INTEGER NOT NULL,
            stored_at REAL NOT NULL, expires_at REAL, used_at INTEGER NOT NULL, checksum INTEGER NOT NULL)
        """,
        "CREATE INDEX entries_by_use ON entries(used_at)",
        "CREATE TABLE totals(id INTEGER PRIMARY KEY CHECK (id = 0), count INTEGER NOT NULL, size INTEGER NOT NULL)",
        "INSERT INTO totals VALUES (0, 0, 0)",
        "CREATE TRIGGER entries_added AFTER INSERT ON entries BEGIN UPDATE totals SET count = count + 1, size = size + NEW.size WHERE id = 0; END",
        "CREATE TRIGGER entries_removed AFTER DELETE ON entries BEGIN UPDATE totals SET count = count - 1, size = size - OLD.size WHERE id = 0; END",
        "CREATE TRIGGER entries_resized AFTER UPDATE OF size ON entries BEGIN UPDATE totals SET size = size - OLD.size + NEW.size WHERE id = 0; END",
    ]

    /// Renames the file (and its WAL and shared-memory files) out of the way: `…corrupt`.
    private func setAside() {
        for suffix in ["", "-wal", "-shm"] {
            _ = rename(path + suffix, path + ".corrupt" + suffix)
        }
    }

    #if canImport(Darwin)
    private static let noFollow = SQLITE_OPEN_NOFOLLOW
    #else
    private static let noFollow: Int32 = 0x0100_0000  // SQLITE_OPEN_NOFOLLOW (3.31+)
    #endif

    /// Creates the folder (0700) if it is missing; refuses one that is a symbolic link, another
    /// user's, or sticky (`/tmp`: shared by the system by design); tightens to 0700 one that others
    /// can write in. One that others can only read is left as it is: the database is any file the
    /// caller names, its folder often a home or a project folder (the folder of `~/cache.sqlite` is
    /// the home folder, which this tightened), and the database, its WAL and its shared memory are
    /// 0600 whatever the folder's mode.
    static func prepareFolder(of path: String) throws(SQLiteStorageError) {
        let folder = (path as NSString).deletingLastPathComponent
        var info = stat()
        if lstat(folder, &info) != 0 {
            guard errno == ENOENT else { throw systemFailure(.folderUnavailable, folder, "lstat") }
            do {
                try FileManager.default.createDirectory(
                    atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
                )
            } catch {
                throw SQLiteStorageError(.folderUnavailable, path: folder, detail: "\(error)")
            }
            guard lstat(folder, &info) == 0 else { throw systemFailure(.folderUnavailable, folder, "lstat") }
        }
        guard info.st_mode & S_IFMT != S_IFLNK else { throw SQLiteStorageError(.unsafeFile, path: folder, detail: "its folder is a symbolic link") }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw SQLiteStorageError(.folderUnavailable, path: folder, detail: "it is not a folder") }
        guard info.st_uid == geteuid() else { throw SQLiteStorageError(.unsafeFile, path: folder, detail: "its folder belongs to another user") }
        guard info.st_mode & 0o1000 == 0 else {
            throw SQLiteStorageError(
                .unsafeFile, path: folder,
                detail: "its folder is shared by every user (a sticky folder, such as /tmp; a folder of your own inside it can be used)"
            )
        }
        if info.st_mode & 0o022 != 0, chmod(folder, 0o700) != 0 { throw systemFailure(.permissionDenied, folder, "chmod") }
    }

    /// Creates the file (0600) if it is missing; refuses a symbolic link, anything but a regular
    /// file, or another user's file. Returns the file's identity.
    static func prepareFile(_ path: String) throws(SQLiteStorageError) -> FileIdentity {
        let descriptor = systemOpen(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == ELOOP { throw SQLiteStorageError(.unsafeFile, path: path, detail: "it is a symbolic link") }
            throw systemFailure(errno == EACCES ? .permissionDenied : .io, path, "open")
        }
        defer { _ = systemClose(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw systemFailure(.io, path, "fstat") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw SQLiteStorageError(.unsafeFile, path: path, detail: "it is not a regular file") }
        guard info.st_uid == geteuid() else { throw SQLiteStorageError(.unsafeFile, path: path, detail: "it belongs to another user") }
        if info.st_mode & 0o077 != 0 { _ = fchmod(descriptor, 0o600) }
        return FileIdentity(info)
    }

    /// The failure of the system call `call` on `path` (`code`: its errno); a read-only file system
    /// is permission denied, as in `DiskStorage`, which says what to do.
    static func systemFailure(_ reason: SQLiteStorageError.Reason, _ path: String, _ call: String, code: Int32 = errno) -> SQLiteStorageError {
        let reason: SQLiteStorageError.Reason = code == ENOSPC || code == EDQUOT ? .diskFull
            : code == EACCES || code == EPERM || code == EROFS ? .permissionDenied : reason
        return SQLiteStorageError(reason, path: path, code: code, detail: "\(call): \(String(cString: strerror(code)))")
    }

    // MARK: Statements

    /// SQLite's failure `result` as a storage error, with its message.
    func failure(_ result: Int32) -> SQLiteStorageError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(result))
        let reason: SQLiteStorageError.Reason
        switch result & 0xFF {
        case SQLITE_FULL: reason = .diskFull
        case SQLITE_TOOBIG: reason = .exceedsLimit
        case SQLITE_BUSY, SQLITE_LOCKED: reason = .busy
        case SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH: reason = .permissionDenied
        case SQLITE_CANTOPEN: reason = errno == EACCES || errno == EROFS ? .permissionDenied : .io
        default: reason = .io
        }
        return SQLiteStorageError(reason, path: path, code: result, detail: message)
    }

    /// A prepared statement for `sql`, reset and cleared, kept for the next use.
    func statement(_ sql: String) throws(SQLiteStorageError) -> OpaquePointer {
        if let statement = statements[sql] {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            return statement
        }
        guard let handle else { throw SQLiteStorageError(.io, path: path, detail: "the database is not open") }
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard result == SQLITE_OK, let statement else { throw failure(result) }
        statements[sql] = statement
        return statement
    }

    func execute(_ sql: String) throws(SQLiteStorageError) {
        let statement = try statement(sql)
        defer { sqlite3_reset(statement) }
        var result = sqlite3_step(statement)
        while result == SQLITE_ROW { result = sqlite3_step(statement) }
        guard result == SQLITE_DONE else { throw failure(result) }
    }

    func integer(_ sql: String) throws(SQLiteStorageError) -> Int64 {
        let statement = try statement(sql)
        defer { sqlite3_reset(statement) }
        let result = sqlite3_step(statement)
        guard result == SQLITE_ROW else { throw failure(result) }
        return sqlite3_column_int64(statement, 0)
    }

    /// Steps `statement` to its end (a change).
    func run(_ statement: OpaquePointer) throws(SQLiteStorageError) {
        let result = step(statement)
        guard result == SQLITE_DONE || result == SQLITE_ROW else { throw failure(result) }
    }

    /// Steps `statement` once and resets it; SQLite's result code (its message stays readable).
    func step(_ statement: OpaquePointer) -> Int32 {
        let result = sqlite3_step(statement)
        sqlite3_reset(statement)
        return result
    }

    /// Binds `text` by its length, so a key with a NUL inside is bound whole.
    func bind(_ statement: OpaquePointer, _ index: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                sqlite3_bind_text(statement, index, "", 0, transient)  // empty text, not NULL
                return
            }
            base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { start in
                _ = sqlite3_bind_text64(statement, index, start, sqlite3_uint64(bytes.count), transient, UInt8(SQLITE_UTF8))
            }
        }
    }

    /// Column `column` of the current row as text, whole (with any NUL inside).
    func text(_ statement: OpaquePointer, _ column: Int32) -> String {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard let start = sqlite3_column_text(statement, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    }

    func bind(_ statement: OpaquePointer, _ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(statement, index, value)
    }

    func bind(_ statement: OpaquePointer, _ index: Int32, _ value: Double?) {
        if let value { sqlite3_bind_double(statement, index, value) } else { sqlite3_bind_null(statement, index) }
    }

    /// Binds `bytes` without copying them: the statement must be run before they go. Returns
    /// SQLite's result: `SQLITE_TOOBIG` for more bytes than its length limit.
    func bindBlob(_ statement: OpaquePointer, _ index: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        sqlite3_bind_blob64(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64(bytes.count), nil)
    }

    /// The longest row SQLite stores (its length limit, `SQLITE_MAX_LENGTH` as the library was
    /// built: 1,000,000,000 bytes by default), read once from the library itself.
    static let largestRow: Int = {
        var database: OpaquePointer?
        defer { if let database { sqlite3_close_v2(database) } }
        guard sqlite3_open_v2(":memory:", &database, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let database else {
            return 1_000_000_000
        }
        return Int(sqlite3_limit(database, SQLITE_LIMIT_LENGTH, -1))
    }()

    /// What a row of ours holds beside its key and value: the record's header and its five numbers
    /// (at most 9 bytes each), rounded up.
    static let rowOverhead = 64
}

extension SQLiteStorageError {
    /// A file that is not a usable database of ours: set it aside and start again.
    var isDamage: Bool {
        guard let code else { return false }
        return reason == .io && [SQLITE_NOTADB, SQLITE_CORRUPT].contains(code & 0xFF)
    }
}

// `open` and `close` are also methods here; the C functions by other names.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    #if canImport(Darwin)
    Darwin.open(path, flags, mode)
    #elseif canImport(Glibc)
    Glibc.open(path, flags, mode)
    #else
    Musl.open(path, flags, mode)
    #endif
}

private func systemClose(_ descriptor: Int32) -> Int32 {
    #if canImport(Darwin)
    Darwin.close(descriptor)
    #elseif canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Musl.close(descriptor)
    #endif
}
