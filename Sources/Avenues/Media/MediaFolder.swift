import Foundation

/// The folder of downloaded files: their names, and the moves of finished downloads into place,
/// through the ``CacheFolder`` that ``DiskStorage`` also uses (so limits hold across processes and a
/// deleted folder is created again).
///
/// A file is named by a 128-bit stable hash of its URL (two independent 64-bit hashes: a plain
/// file cannot record its key, so the name must not collide) plus the URL's path extension.
final class MediaFolder: Sendable {
    let directory: URL
    let sizeLimit: Int?
    private let folder: CacheFolder
    /// Counts ``removeAll()`` calls; commits and checks are ordered with them, so a file is never
    /// handed out after a clear that started before it was handed out.
    private let clears = Locked<UInt64>(0)

    init(directory: URL, sizeLimit: Int?) {
        precondition(sizeLimit.map { $0 >= 0 } ?? true, "AsyncMedia sizeLimit must be 0 or more")
        self.directory = directory.standardizedFileURL
        self.sizeLimit = sizeLimit
        folder = CacheFolder(path: self.directory.path, sizeLimit: sizeLimit, countLimit: nil, isEntry: Self.isMediaName)
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
        guard let hash = parts.first, hash.utf8.count == 32, hash.utf8.allSatisfy(CacheFolder.isLowerHex) else {
            return false
        }
        return parts.count == 1 || (1...10).contains(parts[1].count)
    }

    func filePath(for url: URL) -> String {
        folder.filePath(Self.fileName(for: url))
    }

    // MARK: Files

    /// The cached file for `url`, if any (it becomes the most recently used).
    func cachedFile(for url: URL) -> URL? {
        let name = Self.fileName(for: url)
        guard let info = try? FileSystem.linkStatus(folder.filePath(name)), info.isRegularFile else { return nil }
        folder.touch(name)
        return URL(fileURLWithPath: folder.filePath(name))
    }

    /// Creates the folder (0700) if needed and a new hidden temporary file (0600) for `url`; returns
    /// its path and a descriptor open for writing.
    func makeTemporaryFile(for url: URL) throws(DiskStorageError) -> (path: String, descriptor: Int32) {
        try folder.makeTemporaryFile(for: Self.fileName(for: url))
    }

    /// The number of clears so far.
    var generation: UInt64 { clears.withLock { $0 } }

    /// Moves a complete download into place (one `rename(2)`) and sweeps down to 80 % of the size
    /// limit if it is exceeded; a file larger than the whole limit still goes to its caller, and the
    /// next sweep takes it. A download begun before a clear is not committed (`CancellationError`).
    func commit(_ temporary: String, for url: URL, size: Int64, since generation: UInt64) throws -> URL {
        let name = Self.fileName(for: url)
        try clears.withLock { (clears: inout UInt64) throws in
            guard clears == generation else { throw CancellationError() }
            do throws(DiskStorageError) {
                try folder.commit(temporary, as: name, size: Int(clamping: size))
            } catch {
                throw AsyncMediaError.cannotStore(url, reason: error)
            }
        }
        return URL(fileURLWithPath: folder.filePath(name))
    }

    /// Whether `file` still exists and no clear started since `generation`.
    func stillHolds(_ file: URL, since generation: UInt64) -> Bool {
        clears.withLock { clears in
            clears == generation && ((try? FileSystem.linkStatus(file.path))?.isRegularFile ?? false)
        }
    }

    /// Deletes every downloaded file and abandoned temporary file (nothing else in the folder).
    func removeAll() {
        clears.withLock { clears in
            clears &+= 1
            folder.removeAll()
        }
    }

    /// Files and their total size, as every process sharing the folder keeps them.
    var usage: (count: Int, size: Int) {
        let totals = folder.totals
        return (totals.count, totals.size)
    }
}
