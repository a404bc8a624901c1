import Foundation

/// The folder of downloaded files: names, the least-recently-used index shared with
/// ``DiskStorage`` (``DiskIndex``), and the atomic move of a finished download into place.
///
/// A file is named by a 128-bit stable hash of its URL (two independent 64-bit hashes: a plain
/// file cannot record its key, so the name must not collide) plus the URL's path extension.
final class MediaFolder: Sendable {
    let directory: URL
    let sizeLimit: Int?
    private let path: String
    private let index = Locked(DiskIndex(isEntry: MediaFolder.isMediaName))

    init(directory: URL, sizeLimit: Int?) {
        precondition(sizeLimit.map { $0 >= 0 } ?? true, "AsyncMedia sizeLimit must be 0 or more")
        self.directory = directory.standardizedFileURL
        self.path = self.directory.path
        self.sizeLimit = sizeLimit
    }

    // MARK: Names

    static func fileName(for url: URL) -> String {
        let bytes = Array(url.absoluteString.utf8)
        let hash = StableHash.hex(StableHash.fnv1a64(bytes)) + StableHash.hex(StableHash.fnv1a64(bytes, basis: 0x84222325_CBF29CE4))
        let ext = url.pathExtension
        let usable = (1...10).contains(ext.count) && ext.unicodeScalars.allSatisfy { $0.isASCII && $0.properties.isAlphabetic || ("0"..."9").contains($0) }
        return usable ? hash + "." + ext : hash
    }

    static func isMediaName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let hash = parts.first, hash.count == 32, hash.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            return false
        }
        return parts.count == 1 || (1...10).contains(parts[1].count)
    }

    func filePath(for url: URL) -> String {
        path + "/" + Self.fileName(for: url)
    }

    // MARK: Files

    /// The cached file for `url`, if any (it becomes the most recently used).
    func cachedFile(for url: URL) -> URL? {
        let name = Self.fileName(for: url)
        guard let info = try? FileSystem.linkStatus(path + "/" + name), info.isRegularFile else { return nil }
        index.withLock { index in
            if !index.isLoaded { index.load(from: path) }
            index.touch(name, size: info.size)
        }
        return URL(fileURLWithPath: path + "/" + name)
    }

    /// Creates the folder (0700) if needed and a new hidden temporary file (0600) for `url`.
    func makeTemporaryFile(for url: URL) throws(DiskStorageError) -> (path: String, file: FileHandle) {
        try index.withLock { (index: inout DiskIndex) throws(DiskStorageError) in
            if !index.folderExists {
                do throws(FileSystem.Failure) {
                    try FileSystem.createDirectory(path, mode: 0o700)
                } catch {
                    throw DiskStorageError(error, folderMissing: true)
                }
                index.folderExists = true
            }
            if !index.isLoaded { index.load(from: path) }
        }
        let temporary = path + "/" + DiskIndex.temporaryName(for: Self.fileName(for: url))
        do throws(FileSystem.Failure) {
            let descriptor = try FileSystem.createExclusive(temporary, mode: 0o600)
            return (temporary, FileHandle(fileDescriptor: descriptor, closeOnDealloc: true))
        } catch {
            throw DiskStorageError(error, folderMissing: error.code == ENOENT)
        }
    }

    /// Moves a complete download into place (one `rename(2)`) and sweeps down to 80 % of the size
    /// limit if it is exceeded. Returns the file's URL.
    func commit(_ temporary: String, for url: URL, size: Int64) throws(DiskStorageError) -> URL {
        let name = Self.fileName(for: url)
        try index.withLock { (index: inout DiskIndex) throws(DiskStorageError) in
            do throws(FileSystem.Failure) {
                try FileSystem.rename(temporary, to: path + "/" + name)
            } catch {
                throw DiskStorageError(error)
            }
            index.record(name, size: Int(size))
            let victims = index.evict(sizeLimit: sizeLimit, countLimit: nil)
            for victim in victims where victim != name { try? FileSystem.remove(path + "/" + victim) }
            // A file larger than the whole limit still goes to its caller; the next sweep takes it.
            if victims.contains(name) { index.record(name, size: Int(size)) }
        }
        return URL(fileURLWithPath: path + "/" + name)
    }

    /// Deletes every downloaded and temporary file (nothing else in the folder).
    func removeAll() {
        index.withLock { index in
            for name in (try? FileSystem.contents(of: path)) ?? [] where Self.isMediaName(name) || DiskIndex.isTemporaryName(name) {
                try? FileSystem.remove(path + "/" + name)
            }
            index.forgetAll()
        }
    }

    /// Files and their total size, as indexed.
    var usage: (count: Int, size: Int) {
        index.withLock { index in
            if !index.isLoaded { index.load(from: path) }
            return (index.count, index.totalSize)
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
