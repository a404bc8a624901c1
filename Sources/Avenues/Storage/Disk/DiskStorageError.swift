/// Why a ``DiskStorage`` operation failed, and what to do about it.
public struct DiskStorageError: Error, Hashable, CustomStringConvertible {
    /// The kinds of failure, each with its remedy in ``description``: switch over it to react in
    /// code (say, free space on `.diskFull`), and show ``description`` to people.
    public enum Reason: Sendable, Hashable {
        /// The storage's folder does not exist and cannot be created (a file is in the way, or a
        /// parent folder is missing or not writable).
        case folderUnavailable
        /// The disk or the user's quota is full.
        case diskFull
        /// The folder or an entry is not readable or writable by this user, or is on a read-only
        /// file system.
        case permissionDenied
        /// The name given for a cache folder cannot be used (empty, absolute, or containing `..`).
        case invalidName
        /// No cache folder could be found: neither `XDG_CACHE_HOME` nor `HOME` is set.
        case noCacheFolder
        /// The folder exists but is not safe to use: it is a symbolic link, or belongs to another user.
        case unsafeFolder
        /// The value is larger than the storage's whole `sizeLimit` (or the `countLimit` is 0), so it
        /// was not stored; an older entry for the key was removed.
        case exceedsLimit
        /// An entry is too large to read into memory.
        case entryTooLarge
        /// A value could not be encoded to be stored (a multiplexer's copy, a `codable(_:)` storage's
        /// value): its `Encodable` conformance threw. Nothing was written for it.
        case notEncodable
        /// Any other input/output error.
        case io
    }

    /// Which kind of failure this is; ``path`` says where, ``description`` what to do.
    public let reason: Reason
    /// The file or folder concerned.
    public let path: String
    /// The system call that failed, if one did (`"rename"`, `"open"`…).
    public let call: String?
    /// The `errno` value, if a system call failed.
    public let code: Int32?
    /// What was found, when no system call failed (`"it is a symbolic link"`, a size).
    public let detail: String?

    init(_ reason: Reason, path: String, call: String? = nil, code: Int32? = nil, detail: String? = nil) {
        self.reason = reason
        self.path = path
        self.call = call
        self.code = code
        self.detail = detail
    }

    init(_ failure: FileSystem.Failure, folderMissing: Bool = false) {
        let reason: Reason =
            if failure.isDiskFull { .diskFull } else if failure.isPermissionDenied { .permissionDenied } else if folderMissing { .folderUnavailable } else { .io }
        self.init(reason, path: failure.path, call: failure.call, code: failure.code)
    }

    /// `error` as a storage error: a system call's failure keeps its `errno`; anything else is `.io`.
    init(converting error: any Error, path: String) {
        switch error {
        case let error as DiskStorageError: self = error
        case let failure as FileSystem.Failure: self.init(failure)
        default: self.init(.io, path: path, detail: "\(error)")
        }
    }

    /// What happened and what to do.
    public var description: String {
        let cause = code.map { " (\(call ?? "system call"): \(FileSystem.message(for: $0)))" } ?? ""
        switch reason {
        case .folderUnavailable:
            return "The cache folder \(path) cannot be created\(cause). Choose a folder you can write to, e.g. DiskStorage(directory:)."
        case .diskFull:
            return "No space left for the cache entry \(path)\(cause). Free some space or lower the storage's sizeLimit; the entry was not stored."
        case .permissionDenied:
            return "Permission denied for \(path)\(cause). Make the folder writable by this user or choose another with DiskStorage(directory:)."
        case .invalidName:
            return "The cache name \"\(path)\" cannot be used: give a relative name without \"..\", such as \"my-tool/thumbnails\"."
        case .noCacheFolder:
            return "No cache folder: set XDG_CACHE_HOME or HOME, or pass a folder with DiskStorage(directory:)."
        case .unsafeFolder:
            return "The cache folder \(path) is not used because \(detail ?? "it is not safe"). Pass a folder of your own, e.g. DiskStorage(directory:)."
        case .exceedsLimit:
            return "The entry for \(path) was not stored: \(detail ?? "it exceeds the storage's limits"). Raise the storage's sizeLimit or countLimit, or store smaller values."
        case .entryTooLarge:
            return "The cache entry \(path) is too large to read into memory (\(detail ?? "allocation failed")); it was left in place."
        case .notEncodable:
            return "The value for \(path) could not be encoded (\(detail ?? "its encoder threw")), so it was not stored; make its Encodable conformance encode every value it can hold."
        case .io where code == FileSystem.tooManyOpenFiles || code == FileSystem.tooManyOpenFilesInSystem:
            // Not an input/output error: the descriptor table is full. Said so, with what to do.
            let whose = code == FileSystem.tooManyOpenFiles ? "this process has as many open as its limit allows (ulimit -n)" : "the system has as many open as it allows"
            return "Too many open files to open \(path)\(cause): \(whose); the entry was not stored. Open fewer at once (a lower maxConcurrentDownloads) or raise the limit."
        case .io where code == FileSystem.isAFolder && call == "rename":
            // Not an input/output error: a folder with files in it is at the entry's name.
            return "A folder is where the cache entry \(path) goes\(cause); the entry was not stored. Remove that folder (no program of ours makes one there)."
        case .io:
            return "Input/output error on \(path)\(cause); the entry was not stored."
        }
    }
}
