import Synchronization
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
#error("Unsupported platform")
#endif

/// `write(2)`, named apart from ``FileSystem/write(_:_:at:path:)``, which hides it inside the type.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}

/// The few POSIX file calls the disk storage needs, with `errno` kept, because the storage must tell
/// "disk full" from "permission denied" and must never follow a symlink.
enum FileSystem {
    /// A failed call: which one, on what path, and `errno`.
    struct Failure: Error {
        let call: String
        let path: String
        let code: Int32

        /// The system or the file system cannot do it (files with no name, on an old kernel or a
        /// file system without them).
        var isUnsupported: Bool { code == ENOTSUP || code == EOPNOTSUPP || code == EINVAL || code == EISDIR }
        /// The name is taken.
        var isExistingName: Bool { code == EEXIST }
        /// No such file or folder.
        var isMissing: Bool { code == ENOENT }
        /// The disk (or the user's quota) is full.
        var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
        /// The user may not do this here (or the file system is read-only).
        var isPermissionDenied: Bool { code == EACCES || code == EPERM || code == EROFS }
        /// The file (or a folder on its path) does not exist.
        var isNoSuchFile: Bool { code == ENOENT }
        /// What is at the name is a symbolic link (refused by `O_NOFOLLOW`) or a folder.
        var isLinkOrFolder: Bool { code == ELOOP || isFolder }
        /// A folder is where a file was to go.
        var isFolder: Bool { code == EISDIR }
    }

    /// `errno` for "no such file or directory".
    static let noSuchFile = ENOENT
    /// `errno` for "not a directory".
    static let notADirectory = ENOTDIR
    /// `errno` for "too many open files" (this process's limit).
    static let tooManyOpenFiles = EMFILE
    /// `errno` for "too many open files in system".
    static let tooManyOpenFilesInSystem = ENFILE
    /// `EISDIR`: a folder where a file was expected.
    static let isAFolder = EISDIR

    /// The wall clock in nanoseconds since 1970, as file modification times are kept.
    static func wallClockNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Saturating.add(Saturating.multiply(Int64(now.tv_sec), 1_000_000_000), Int64(now.tv_nsec))
    }

    /// This process's id.
    static var processID: Int32 { Int32(getpid()) }

    /// `true` when no process has id `pid` any more (a writer that died).
    static func processIsGone(_ pid: Int32) -> Bool {
        kill(pid_t(pid), 0) != 0 && errno == ESRCH
    }

    struct FileInfo {
        let size: Int
        let modified: Int64  // nanoseconds since 1970
        let isRegularFile: Bool
        let isDirectory: Bool
        let isSymbolicLink: Bool
        let device: UInt64
        let inode: UInt64
        let owner: UInt32
        /// The permission bits (`0o777` and the sticky/set-id bits).
        let permissions: UInt32
        /// Hard links to the file; 0 once it was deleted (seen through a descriptor).
        let links: UInt64
        /// The file's type bits (`st_mode & S_IFMT`).
        let type: mode_t

        /// What it is, for a message: "a folder", "a named pipe"… ("a file" for a regular one).
        var kind: String {
            switch type {
            case S_IFDIR: "a folder"
            case S_IFIFO: "a named pipe"
            case S_IFSOCK: "a socket"
            case S_IFCHR: "a character device"
            case S_IFBLK: "a block device"
            case S_IFLNK: "a symbolic link"
            default: "a file"
            }
        }

        /// Which file this is (two paths or descriptors with one identity are one file).
        var identity: Identity { Identity(device: device, inode: inode) }
    }

    /// A file's device and inode.
    struct Identity: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    private static func fail(_ call: String, _ path: String) -> Failure {
        Failure(call: call, path: path, code: errno)
    }

    /// Creates `path` and its missing parents with `mode`; succeeds if it is already a directory.
    static func createDirectory(_ path: String, mode: mode_t) throws(Failure) {
        if let info = try? status(path), info.isDirectory { return }
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode) != 0, errno != EEXIST { throw fail("mkdir", prefix) }
        }
        let info = try status(path)
        guard info.isDirectory else { throw Failure(call: "mkdir", path: path, code: ENOTDIR) }
    }

    /// `stat` (following symlinks, for the folder itself).
    static func status(_ path: String) throws(Failure) -> FileInfo {
        var info = stat()
        guard stat(path, &info) == 0 else { throw fail("stat", path) }
        return FileInfo(info)
    }

    /// `lstat` (never following a symlink).
    static func linkStatus(_ path: String) throws(Failure) -> FileInfo {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw fail("lstat", path) }
        return FileInfo(info)
    }

    /// The name in a directory entry, read in place: the kernel packs entries, so one may be
    /// shorter than `dirent`, and copying its whole `d_name` field reads past the end of the buffer
    /// (seen as a crash under load, and by AddressSanitizer).
    static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> [UInt8] {
        withUnsafeMutablePointer(to: &entry.pointee.d_name) { field in
            let bytes = UnsafeRawPointer(field).assumingMemoryBound(to: UInt8.self)
            return Array(UnsafeBufferPointer(start: bytes, count: strlen(UnsafeRawPointer(field).assumingMemoryBound(to: CChar.self))))
        }
    }

    /// The names in a directory, without `.` and `..`.
    static func contents(of path: String) throws(Failure) -> [String] {
        guard let directory = opendir(path) else { throw fail("opendir", path) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = String(decoding: entryName(entry), as: UTF8.self)
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Creates a new file that must not exist yet; never follows a symlink planted at `path`.
    static func createExclusive(_ path: String, mode: mode_t, readable: Bool = false) throws(Failure) -> Int32 {
        let descriptor = open(path, (readable ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw fail("open", path) }
        return descriptor
    }

    /// Opens an existing file for reading; a symlink is an error (`ELOOP`), not followed.
    ///
    /// Non-blocking, so a FIFO or a device planted at `path` cannot hang the caller: the open returns
    /// at once and the caller's `fstat` shows it is not a regular file. (`O_NONBLOCK` does not change
    /// how regular files are read.)
    static func openForReading(_ path: String, followingLinks: Bool = false) throws(Failure) -> Int32 {
        let descriptor = open(path, O_RDONLY | (followingLinks ? 0 : O_NOFOLLOW) | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw fail("open", path) }
        return descriptor
    }

    /// Opens (creating if needed, never following a symlink) a file for reading and writing.
    static func openOrCreate(_ path: String, mode: mode_t) throws(Failure) -> Int32 {
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw fail("open", path) }
        return descriptor
    }

    /// Takes (`exclusive`) or drops an advisory lock shared with other processes; waits for it,
    /// retrying when a signal interrupts the wait.
    static func lock(_ descriptor: Int32, exclusive: Bool, path: String) throws(Failure) {
        while flock(descriptor, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            if errno != EINTR { throw fail("flock", path) }
        }
    }

    /// Takes an exclusive advisory lock if nobody holds one: `false` when another descriptor (this
    /// process's or another's) holds it.
    static func tryLock(_ descriptor: Int32, path: String) throws(Failure) -> Bool {
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EWOULDBLOCK { return false }
            if errno != EINTR { throw fail("flock", path) }
        }
        return true
    }

    /// Moves the descriptor's position to `offset` from the start.
    static func seek(_ descriptor: Int32, to offset: Int64, path: String) throws(Failure) {
        guard lseek(descriptor, off_t(offset), SEEK_SET) >= 0 else { throw fail("lseek", path) }
    }

    /// Empties the file and moves the position to its start.
    static func truncate(_ descriptor: Int32, path: String) throws(Failure) {
        guard ftruncate(descriptor, 0) == 0 else { throw fail("ftruncate", path) }
        try seek(descriptor, to: 0, path: path)
    }

    static func unlock(_ descriptor: Int32) {
        _ = flock(descriptor, LOCK_UN)
    }

    /// Reads up to `buffer.count` bytes at `offset`; returns how many were read.
    static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int, path: String) throws(Failure) -> Int {
        while true {
            let count = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 { return count }
            if errno != EINTR { throw fail("pread", path) }
        }
    }

    /// Writes all of `bytes` at `offset`.
    static func write(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, path: String) throws(Failure) {
        var done = 0
        while done < bytes.count {
            let count = pwrite(descriptor, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset + done))
            if count < 0 {
                if errno == EINTR { continue }
                throw fail("pwrite", path)
            }
            done += count
        }
    }

    /// Sets the permission bits of an open file or folder.
    static func setPermissions(_ descriptor: Int32, _ mode: mode_t, path: String) throws(Failure) {
        guard fchmod(descriptor, mode) == 0 else { throw fail("chmod", path) }
    }

    /// Opens a folder itself (not following a symlink at `path`), for `fstat` and `fchmod`.
    static func openFolder(_ path: String) throws(Failure) -> Int32 {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw fail("open", path) }
        return descriptor
    }

    /// The effective user of this process.
    static var currentUser: UInt32 { UInt32(geteuid()) }

    static func status(of descriptor: Int32, path: String) throws(Failure) -> FileInfo {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw fail("fstat", path) }
        return FileInfo(info)
    }

    /// Writes every byte of `bytes`, retrying short writes.
    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(Failure) {
        try writeAll(descriptor, bytes, path: path, through: systemWrite)
    }

    /// ``writeAll(_:_:path:)`` through `write`, a stand-in for `write(2)` (tests give one that
    /// writes short, is interrupted or writes nothing). Inlined: a download's every body chunk
    /// comes through here, and `write(2)` is then called directly.
    @inline(__always)
    static func writeAll(
        _ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String, through write: (Int32, UnsafeRawPointer?, Int) -> Int
    ) throws(Failure) {
        // One buffer (every body chunk of a download): `write(2)`, without the three arrays the
        // vectored form builds.
        var rest = bytes
        while !rest.isEmpty {
            let written = write(descriptor, rest.baseAddress, rest.count)
            if written < 0 {
                if errno == EINTR { continue }
                throw fail("write", path)
            }
            // Nothing written and no error (a device can say so): an error, not a loop for ever.
            if written == 0 { throw Failure(call: "write", path: path, code: EIO) }
            rest = UnsafeRawBufferPointer(rebasing: rest[written...])
        }
    }

    /// Writes every byte of `buffers` in order, retrying short writes.
    static func writeAll(_ descriptor: Int32, _ buffers: [UnsafeRawBufferPointer], path: String) throws(Failure) {
        var pending = buffers.filter { $0.count > 0 }
        while !pending.isEmpty {
            var vectors = pending.map { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
            let written = writev(descriptor, &vectors, Int32(vectors.count))
            if written < 0 {
                if errno == EINTR { continue }
                throw fail("writev", path)
            }
            if written == 0 { throw Failure(call: "writev", path: path, code: EIO) }  // as in the one-buffer form
            pending = drop(written, from: pending)
        }
    }

    /// Fills every byte of `buffers` in order; returns false if the file ended first.
    static func readAll(_ descriptor: Int32, into buffers: [UnsafeMutableRawBufferPointer], path: String) throws(Failure) -> Bool {
        var pending = buffers.filter { $0.count > 0 }
        while !pending.isEmpty {
            var vectors = pending.map { iovec(iov_base: $0.baseAddress, iov_len: $0.count) }
            let count = readv(descriptor, &vectors, Int32(vectors.count))
            if count < 0 {
                if errno == EINTR { continue }
                throw fail("readv", path)
            }
            if count == 0 { return false }
            pending = drop(count, from: pending.map { UnsafeRawBufferPointer($0) }).map { UnsafeMutableRawBufferPointer(mutating: $0) }
        }
        return true
    }

    private static func drop(_ count: Int, from buffers: [UnsafeRawBufferPointer]) -> [UnsafeRawBufferPointer] {
        var remaining = count
        var result: [UnsafeRawBufferPointer] = []
        for buffer in buffers {
            if remaining >= buffer.count {
                remaining -= buffer.count
            } else {
                result.append(UnsafeRawBufferPointer(rebasing: buffer[remaining...]))
                remaining = 0
            }
        }
        return result
    }

    static func close(_ descriptor: Int32) {
        _ = closeDescriptor(descriptor)
    }

    /// Atomically replaces `destination` (a symlink there is replaced, not followed).
    static func rename(_ source: String, to destination: String) throws(Failure) {
        guard renameFile(source, destination) == 0 else { throw fail("rename", destination) }
    }

    /// Opens a new file with no name in `directory` (`O_TMPFILE`), for reading and writing: it
    /// vanishes when closed unless ``link(_:to:)`` gives it one. Making it takes no lock of the
    /// directory. Fails with ``Failure/isUnsupported`` where the system or the file system cannot.
    static func createUnnamed(in directory: String, mode: mode_t) throws(Failure) -> Int32 {
        #if os(Linux)
        let descriptor = open(directory, __O_TMPFILE | O_DIRECTORY | O_RDWR | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw fail("open", directory) }
        return descriptor
        #else
        throw Failure(call: "open", path: directory, code: ENOTSUP)
        #endif
    }

    /// Gives the file open as `descriptor` — one made by ``createUnnamed(in:mode:)`` — the name
    /// `path` (`linkat` with `AT_EMPTY_PATH`); an existing `path` is an error (`EEXIST`), never
    /// replaced.
    static func link(_ descriptor: Int32, to path: String) throws(Failure) {
        #if os(Linux)
        let emptyPath: Int32 = 0x1000  // AT_EMPTY_PATH, the same on every Linux architecture
        guard linkat(descriptor, "", AT_FDCWD, path, emptyPath) == 0 else { throw fail("linkat", path) }
        #else
        throw Failure(call: "linkat", path: path, code: ENOTSUP)
        #endif
    }

    /// Removes the folder at `path` if it is empty; whether it did.
    static func removeEmptyFolder(_ path: String) -> Bool {
        rmdir(path) == 0
    }

    /// Removes a file or symlink; a missing file is not an error.
    static func remove(_ path: String) throws(Failure) {
        guard unlink(path) == 0 || errno == ENOENT else { throw fail("unlink", path) }
    }

    /// The message for an `errno` value.
    static func message(for code: Int32) -> String {
        String(cString: strerror(code))
    }
}

// Module-level names so the static methods above can shadow them.
private func closeDescriptor(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}

private func renameFile(_ source: String, _ destination: String) -> Int32 {
    rename(source, destination)
}

extension FileSystem.FileInfo {
    init(_ info: stat) {
        #if canImport(Darwin)
        let seconds = Int64(info.st_mtimespec.tv_sec), nanoseconds = Int64(info.st_mtimespec.tv_nsec)
        #else
        let seconds = Int64(info.st_mtim.tv_sec), nanoseconds = Int64(info.st_mtim.tv_nsec)
        #endif
        let type = info.st_mode & S_IFMT
        // Read from the kernel, so never trusted to fit: sizes and times saturate instead of trapping,
        // and `dev_t` (signed on Darwin) keeps its bit pattern.
        self.init(
            size: Int(clamping: info.st_size),
            modified: Saturating.add(Saturating.multiply(seconds, 1_000_000_000), nanoseconds),
            isRegularFile: type == S_IFREG,
            isDirectory: type == S_IFDIR,
            isSymbolicLink: type == S_IFLNK,
            device: UInt64(truncatingIfNeeded: info.st_dev),
            inode: UInt64(truncatingIfNeeded: info.st_ino),
            owner: UInt32(truncatingIfNeeded: info.st_uid),
            permissions: UInt32(truncatingIfNeeded: info.st_mode) & 0o7777,
            links: UInt64(truncatingIfNeeded: info.st_nlink),
            type: type
        )
    }
}

/// A descriptor with several owners, closed when the last lets it go: how a download run and the
/// transfer writing its file share the file without a `dup(2)` (and its `close(2)`) per request.
final class SharedDescriptor: Sendable {
    let descriptor: Int32
    private let owners = Atomic<Int>(1)

    /// Takes `descriptor` with one owner: the caller.
    init(_ descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// One more owner; each calls ``release()`` once.
    func retain() -> SharedDescriptor {
        owners.add(1, ordering: .relaxed)
        return self
    }

    /// The caller is done with it: the last owner closes it.
    func release() {
        if owners.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { FileSystem.close(descriptor) }
    }
}
