/// Why a ``SQLiteStorage`` operation failed, and what to do about it.
public struct SQLiteStorageError: Error, Hashable, CustomStringConvertible {
    /// The kinds of failure, each with its remedy in ``description``.
    public enum Reason: Sendable, Hashable {
        /// The database's folder does not exist and cannot be created.
        case folderUnavailable
        /// The folder or the database file is not safe to use: a symbolic link, not a regular file,
        /// or another user's.
        case unsafeFile
        /// The folder or the database is not readable or writable by this user.
        case permissionDenied
        /// The disk or the user's quota is full.
        case diskFull
        /// The name given for a database in the cache folder cannot be used.
        case invalidName
        /// No cache folder could be found: neither `XDG_CACHE_HOME` nor `HOME` is set.
        case noCacheFolder
        /// The value is larger than the storage's whole `sizeLimit` or than a row SQLite stores (or
        /// the `countLimit` is 0), so it was not stored; an older entry for the key was removed.
        case exceedsLimit
        /// Another process held the database for longer than the busy timeout.
        case busy
        /// Any other SQLite or input/output error.
        case io
    }

    /// Which kind of failure this is.
    public let reason: Reason
    /// The database file or folder concerned, or the key's string for `.exceedsLimit`.
    public let path: String
    /// SQLite's extended result code, or `errno` for a failed system call.
    public let code: Int32?
    /// What SQLite or the system said, or what was found.
    public let detail: String?

    init(_ reason: Reason, path: String, code: Int32? = nil, detail: String? = nil) {
        self.reason = reason
        self.path = path
        self.code = code
        self.detail = detail
    }

    /// What happened and what to do.
    public var description: String {
        let cause = detail.map { " (\($0))" } ?? ""
        switch reason {
        case .folderUnavailable:
            return "The folder of the database \(path) cannot be created\(cause). Choose a folder you can write to, e.g. SQLiteStorage(file:)."
        case .unsafeFile:
            return "The database \(path) is not used because \(detail ?? "it is not safe"). Remove it or pass another file, e.g. SQLiteStorage(file:)."
        case .permissionDenied:
            return "Permission denied for the database \(path)\(cause). Make it writable by this user or choose another with SQLiteStorage(file:)."
        case .diskFull:
            return "No space left for the database \(path)\(cause). Free some space or lower the storage's sizeLimit; the entry was not stored."
        case .invalidName:
            return "The database name \"\(path)\" cannot be used: give a relative name without \"..\", such as \"my-tool/rows.sqlite\"."
        case .noCacheFolder:
            return "No cache folder: set XDG_CACHE_HOME or HOME, or pass a file with SQLiteStorage(file:)."
        case .exceedsLimit:
            return "The entry for \(path) was not stored: \(detail ?? "it exceeds the storage's limits"). Raise the storage's sizeLimit or countLimit, or store smaller values."
        case .busy:
            return "The database \(path) was busy in another process for longer than the busy timeout\(cause); the operation was not done. Try again."
        case .io:
            return "SQLite failed on \(path)\(cause); the entry was not stored."
        }
    }
}
