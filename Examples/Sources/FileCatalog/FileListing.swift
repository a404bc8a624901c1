import Foundation
import TerminalUI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif

/// A row of a folder's listing: a regular file, or a folder (listed before what it holds, as `find`
/// lists them), or a folder that could not be read (with why).
public struct FileEntry: Sendable, Hashable {
    /// The path relative to the folder browsed, as shown: bytes that are not UTF-8 appear as
    /// replacement characters. A folder's path ends with `/`.
    public let path: String
    /// ``path``'s bytes as the file system has them (output that must give the name back uses them).
    public let pathBytes: [UInt8]
    /// What to load for a file: the file as it is now (path, size, modification time).
    public let ref: FileRef
    /// Whether the row is a folder.
    public let isFolder: Bool
    /// Why a folder could not be read, if it could not.
    public let problem: String?

    /// The size in bytes (0 for a folder).
    public var size: Int64 { ref.size }

    /// A row; `pathBytes` are `path`'s UTF-8 unless given.
    public init(path: String, pathBytes: [UInt8]? = nil, ref: FileRef, isFolder: Bool = false, problem: String? = nil) {
        self.path = path
        self.pathBytes = pathBytes ?? Array(path.utf8)
        self.ref = ref
        self.isFolder = isFolder
        self.problem = problem
    }
}

/// A file as it is at one moment. Used as the key of its summary, so an edited file (new size or
/// modification time) is summarized again, and an unchanged one is found in the disk cache.
public struct FileRef: Sendable, Hashable, Codable {
    /// The absolute path's bytes, exactly as the file system has them (a name need not be UTF-8).
    public let bytes: [UInt8]
    /// The size in bytes.
    public let size: Int64
    /// The modification time in nanoseconds since 1970.
    public let modified: Int64

    /// A reference to the file at `bytes`.
    public init(bytes: [UInt8], size: Int64, modified: Int64) {
        self.bytes = bytes
        self.size = size
        self.modified = modified
    }

    /// A reference to the file at `path`.
    public init(path: String, size: Int64, modified: Int64) {
        self.init(bytes: Array(path.utf8), size: size, modified: modified)
    }

    /// The absolute path, as shown (replacement characters for bytes that are not UTF-8).
    public var path: String { String(decoding: bytes, as: UTF8.self) }

    /// The path's bytes hashed at once: the hash an array makes feeds them one at a time, and a
    /// row's key is hashed at every look-up of every store it is in (5 % of `browse`'s CPU on
    /// 200,000 files).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        hasher.combine(size)
        hasher.combine(modified)
    }

    /// A stable string form for the disk cache: numbers first, then the path's bytes (in hex when
    /// they are not UTF-8, so two names never share a key).
    public var cacheKey: String {
        let valid = String(validating: bytes, as: UTF8.self)
        return "\(size):\(modified):" + (valid ?? "hex:" + bytes.map { String($0, radix: 16) }.joined(separator: "."))
    }

    /// Calls `body` with the path as a NUL-terminated C string (a path with a NUL byte cannot exist:
    /// it gets one that does not).
    public func withPath<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try FileListing.withCPath(bytes, body)
    }
}

/// Lists the files and folders under a folder.
public enum FileListing {
    /// Every regular file and folder under `root`, recursively, in the order of their paths' bytes
    /// (a folder as `path/`, so it comes just before what it holds). Hidden files and folders (names
    /// starting with ".") are skipped unless `includeHidden`; symlinks are not followed; a folder
    /// that cannot be read is a row with why.
    public static func list(_ root: String, includeHidden: Bool = false) throws -> [FileEntry] {
        let rootPath = Array(URL(fileURLWithPath: root, isDirectory: true).standardizedFileURL.path.utf8)
        var info = stat()
        guard withCPath(rootPath, { stat($0, &info) }) == 0 else { throw ListingError(path: root, code: errno) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw ListingError(path: root, code: ENOTDIR) }
        guard let top = withCPath(rootPath, { opendir($0) }) else { throw ListingError(path: root, code: errno) }
        closedir(top)
        // readdir and lstat directly: FileManager's enumerator with resource values is about 40x
        // slower on Linux (1 s for 10,000 files), and the list must be ready before the first screen.
        var rows: [(key: [UInt8], entry: FileEntry)] = []
        var folders: [[UInt8]] = [[]]
        while let relativeFolder = folders.popLast() {
            let folderPath = relativeFolder.isEmpty ? rootPath : rootPath + [0x2F] + relativeFolder
            guard let directory = withCPath(folderPath, { opendir($0) }) else {
                // Listed as a row already (below): it says why it shows nothing.
                let reason = "cannot be read (\(String(cString: strerror(errno))))"
                if let index = rows.firstIndex(where: { $0.key == relativeFolder + [0x2F] }) {
                    let old = rows[index].entry
                    rows[index].entry = FileEntry(path: old.path, pathBytes: old.pathBytes, ref: old.ref, isFolder: true, problem: reason)
                }
                continue
            }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                // Read in place: an entry may be shorter than `dirent` (copying d_name reads past the
                // kernel's buffer).
                let name = withUnsafeMutablePointer(to: &entry.pointee.d_name) { field in
                    let start = UnsafeRawPointer(field)
                    return Array(UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: strlen(start.assumingMemoryBound(to: CChar.self))))
                }
                if name == [0x2E] || name == [0x2E, 0x2E] || (!includeHidden && name.first == 0x2E) { continue }
                let relative = relativeFolder.isEmpty ? name : relativeFolder + [0x2F] + name
                let absolute = rootPath == [0x2F] ? [0x2F] + relative : rootPath + [0x2F] + relative
                var status = stat()
                // Relative to the open folder: no path length limit, one lookup.
                guard withCPath(name, { fstatat(dirfd(directory), $0, &status, AT_SYMLINK_NOFOLLOW) }) == 0 else {
                    // Listed, but it cannot be looked at: a row that says why, not a silent gap.
                    let reason = "cannot be read (\(String(cString: strerror(errno))))"
                    let isFolder = entry.pointee.d_type == UInt8(DT_DIR)
                    let key = isFolder ? relative + [0x2F] : relative
                    rows.append((key, FileEntry(path: String(decoding: key, as: UTF8.self), pathBytes: key, ref: FileRef(bytes: absolute, size: 0, modified: 0), isFolder: isFolder, problem: reason)))
                    continue
                }
                let modified = modificationTime(status)
                switch status.st_mode & S_IFMT {
                case S_IFDIR:
                    folders.append(relative)
                    let key = relative + [0x2F]
                    rows.append((key, FileEntry(path: String(decoding: key, as: UTF8.self), pathBytes: key, ref: FileRef(bytes: absolute, size: 0, modified: modified), isFolder: true)))
                case S_IFREG:
                    rows.append((relative, FileEntry(path: String(decoding: relative, as: UTF8.self), pathBytes: relative, ref: FileRef(bytes: absolute, size: Int64(status.st_size), modified: modified))))
                default:
                    continue  // symlinks, sockets, devices
                }
            }
        }
        rows.sort { $0.key.lexicographicallyPrecedes($1.key) }
        return rows.map(\.entry)
    }

    /// Runs `body` with `bytes` as a NUL-terminated C string; a NUL inside the bytes ends it there.
    static func withCPath<Result>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        let terminated = ((bytes.firstIndex(of: 0).map { Array(bytes[..<$0]) } ?? bytes) + [0]).map { CChar(bitPattern: $0) }
        return try terminated.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { preconditionFailure("a non-empty array has storage") }
            return try body(base)
        }
    }

    private static func modificationTime(_ status: stat) -> Int64 {
        #if canImport(Darwin)
        Int64(status.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(status.st_mtimespec.tv_nsec)
        #else
        Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        #endif
    }

    /// The folder cannot be listed.
    public struct ListingError: Error, CustomStringConvertible {
        /// The folder asked for.
        public let path: String
        /// errno of the failed call, when there was one.
        public var code: Int32?

        init(path: String, code: Int32? = nil) {
            self.path = path
            self.code = code
        }

        /// What went wrong and what to do.
        public var description: String {
            let why = code.map { " (\(String(cString: strerror($0))))" } ?? ""
            return "\(TerminalSafe.clean(path)) is not a folder that can be read\(why); give the path of a folder"
        }
    }
}
