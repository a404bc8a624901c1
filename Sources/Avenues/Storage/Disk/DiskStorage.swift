import Foundation

/// A thread-safe storage of `Data` in files, one per key, that survives restarts and crashes.
///
/// - **Names:** an entry's file is named by a stable hash of the key's string form, so any key —
///   with `/`, `..`, NUL, emoji or 10 KB of text — stays inside the folder. The entry records its
///   key, so a hash collision reads as a miss, never as another key's value.
/// - **Crash safety:** a write goes to a hidden temporary file in the same folder, then `rename(2)`
///   puts it in place, so a reader sees the old entry or the new one, never half of one. Every entry
///   carries its lengths and a checksum: a truncated, torn, corrupt or foreign file reads as a miss
///   and is deleted. (No `fsync`: after a power cut an entry may be missing, never wrong.)
/// - **Limits:** with a `sizeLimit` and/or `countLimit`, a write that goes over deletes the least
///   recently used entries down to 80 % of the limits. Recency is kept in memory (reads do not touch
///   the files), rebuilt from modification times when the folder is opened again.
/// - **Expiry:** with a `timeToLive`, entries older than that read as misses and are deleted.
/// - **Safety:** the folder is created with mode 0700 and entries with 0600; a symlink planted in the
///   folder is never followed. Only files this storage names are ever deleted.
///
/// The ``Storage`` methods never throw: a failed write is a later miss. Use ``write(_:for:storedAt:expiresAt:)``
/// and ``entry(for:)`` to see why something failed (``DiskStorageError``).
///
/// ```swift
/// let disk = try DiskStorage<String>(name: "my-tool/previews", sizeLimit: 256 << 20)
/// disk.set(Data("hello".utf8), for: "greeting")
/// ```
public final class DiskStorage<Key: Sendable>: Storage {
    /// Entries are bytes.
    public typealias Value = Data

    /// An entry as stored: its bytes and when it was written.
    public struct Entry: Sendable, Hashable {
        /// The stored bytes.
        public let data: Data
        /// When the entry was written (wall-clock time, so it means the same after a restart).
        public let storedAt: Date
        /// When the entry stops being served, if it expires.
        public let expiresAt: Date?
    }

    /// The folder holding the entries.
    public let directory: URL
    /// The largest total size of the entry files in bytes, or `nil` for no limit (the default).
    public let sizeLimit: Int?
    /// The most entries kept, or `nil` for no limit (the default).
    public let countLimit: Int?
    /// How long an entry is served after it is written, or `nil` to keep entries until evicted
    /// (the default).
    public let timeToLive: Duration?

    private let folder: String
    private let keyString: @Sendable (Key) -> String
    private let now: @Sendable () -> Date
    private let index = Locked(DiskIndex())

    /// Creates a storage in `directory` (created on first write if needed).
    ///
    /// - Parameters:
    ///   - directory: the folder for the entries; use one folder per storage.
    ///   - sizeLimit: the largest total size in bytes; `nil` (the default) for no limit.
    ///   - countLimit: the most entries; `nil` (the default) for no limit.
    ///   - timeToLive: how long entries are served; `nil` (the default) for as long as they are kept.
    ///   - now: the wall clock, replaceable in tests; `Date()` by default.
    ///   - keyString: the key's stable string form: the same key must give the same string on every
    ///     run, and different keys different strings.
    public init(
        directory: URL,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        keyString: @escaping @Sendable (Key) -> String
    ) {
        precondition(sizeLimit.map { $0 >= 0 } ?? true, "DiskStorage sizeLimit must be 0 or more")
        precondition(countLimit.map { $0 >= 0 } ?? true, "DiskStorage countLimit must be 0 or more")
        self.directory = directory.standardizedFileURL
        self.folder = self.directory.path
        self.sizeLimit = sizeLimit
        self.countLimit = countLimit
        self.timeToLive = timeToLive
        self.now = now
        self.keyString = keyString
    }

    /// Creates a storage in the folder `name` inside the platform's cache folder: `$XDG_CACHE_HOME`
    /// or `~/.cache` on Linux, `~/Library/Caches` on Apple platforms.
    ///
    /// - Throws: ``DiskStorageError`` with reason `.invalidName` for an empty or absolute name or one
    ///   containing `..`, or `.noCacheFolder` when no cache folder can be found.
    public convenience init(
        name: String,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        keyString: @escaping @Sendable (Key) -> String
    ) throws(DiskStorageError) {
        let components = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !name.isEmpty, !name.hasPrefix("/"), !name.contains("\0"),
              components.allSatisfy({ !$0.isEmpty && $0 != ".." && $0 != "." })
        else { throw DiskStorageError(.invalidName, path: name) }
        self.init(
            directory: try Self.cacheFolder().appendingPathComponent(name, isDirectory: true),
            sizeLimit: sizeLimit, countLimit: countLimit, timeToLive: timeToLive, now: now, keyString: keyString
        )
    }

    /// The platform's folder for caches: `$XDG_CACHE_HOME` (if absolute) or `~/.cache` on Linux,
    /// `~/Library/Caches` on Apple platforms.
    public static func cacheFolder() throws(DiskStorageError) -> URL {
        #if canImport(Darwin)
        guard let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first else {
            throw DiskStorageError(.noCacheFolder, path: "")
        }
        return caches
        #else
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true)
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else {
            throw DiskStorageError(.noCacheFolder, path: "")
        }
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".cache", isDirectory: true)
        #endif
    }

    // MARK: Storage

    /// The bytes stored for `key`, or `nil` if absent, expired, unreadable or corrupt.
    public func value(for key: Key) -> Data? {
        (try? entry(for: key))?.data
    }

    /// Stores `value` for `key`; a failure (disk full, no permission) leaves a miss. Use
    /// ``write(_:for:storedAt:expiresAt:)`` to learn why a write failed.
    public func set(_ value: Data, for key: Key) {
        try? write(value, for: key)
    }

    /// Deletes the entry for `key`.
    public func removeValue(for key: Key) {
        let name = DiskIndex.entryName(for: Array(keyString(key).utf8))
        index.withLock { index in
            try? FileSystem.remove(path(name))
            index.forget(name)
        }
    }

    /// Deletes every entry (only files this storage names; anything else in the folder is left).
    public func removeAll() {
        index.withLock { index in
            for name in (try? FileSystem.contents(of: folder)) ?? [] where DiskIndex.isEntryName(name) || DiskIndex.isTemporaryName(name) {
                try? FileSystem.remove(path(name))
            }
            index.forgetAll()
        }
    }

    // MARK: Throwing access

    /// Writes `data` for `key`: a temporary file, then `rename(2)` over the entry.
    ///
    /// - Parameters:
    ///   - storedAt: when the data was produced, if earlier than now (a copy of a value fetched a
    ///     while ago); now by default.
    ///   - expiresAt: when the entry stops being served; by default `timeToLive` after `storedAt`,
    ///     or never.
    /// - Throws: ``DiskStorageError``: `.folderUnavailable`, `.diskFull`, `.permissionDenied`, `.io`.
    ///   Nothing is left behind on failure, and an older entry for the key stays as it was.
    public func write(_ data: Data, for key: Key, storedAt: Date? = nil, expiresAt: Date? = nil) throws(DiskStorageError) {
        let keyBytes = Array(keyString(key).utf8)
        let name = DiskIndex.entryName(for: keyBytes)
        let storedAt = storedAt ?? now()
        let expiry = expiresAt ?? timeToLive.map { storedAt.addingTimeInterval($0.seconds) }
        try index.withLock { (index: inout DiskIndex) throws(DiskStorageError) in try prepare(&index, creatingFolder: true) }

        let temporary = path(DiskIndex.temporaryName(for: name))
        let size = try data.withUnsafeBytes { (payload: UnsafeRawBufferPointer) in
            Result { () throws(DiskStorageError) -> Int in
                let prefix = DiskEntryFormat.prefix(
                    key: keyBytes, payload: payload,
                    storedAt: DiskEntryFormat.milliseconds(storedAt),
                    expiresAt: expiry.map(DiskEntryFormat.milliseconds) ?? DiskEntryFormat.never
                )
                try writeNewFile(temporary, parts: prefix, payload)
                return prefix.count + payload.count
            }
        }.get()

        let victims = try index.withLock { (index: inout DiskIndex) throws(DiskStorageError) -> [String] in
            do throws(FileSystem.Failure) {
                // Under the lock, so a sweep or a corrupt-entry cleanup never deletes a fresh entry.
                try FileSystem.rename(temporary, to: path(name))
            } catch {
                try? FileSystem.remove(temporary)
                throw DiskStorageError(error)
            }
            index.record(name, size: size)
            let victims = index.evict(sizeLimit: sizeLimit, countLimit: countLimit)
            for victim in victims { try? FileSystem.remove(path(victim)) }
            return victims
        }
        _ = victims
    }

    /// The entry for `key` with its dates, or `nil` if there is none or it expired. A corrupt,
    /// truncated or foreign file is deleted and reads as `nil`; an entry of another key whose name
    /// collides reads as `nil` and is left alone.
    ///
    /// - Throws: ``DiskStorageError`` with `.permissionDenied` or `.io` when the file exists but
    ///   cannot be read.
    public func entry(for key: Key) throws(DiskStorageError) -> Entry? {
        let keyBytes = Array(keyString(key).utf8)
        let name = DiskIndex.entryName(for: keyBytes)
        let file = path(name)
        index.withLock { index in try? prepare(&index, creatingFolder: false) }

        let descriptor: Int32
        do throws(FileSystem.Failure) {
            descriptor = try FileSystem.openForReading(file)
        } catch {
            switch error.code {
            case ENOENT:
                index.withLock { $0.forget(name) }
                return nil
            case ELOOP, EISDIR, ENXIO:
                removeIfStillThere(name, device: nil, inode: nil)  // a planted link or something not ours
                return nil
            default:
                throw DiskStorageError(error)
            }
        }
        defer { FileSystem.close(descriptor) }

        do throws(FileSystem.Failure) {
            let info = try FileSystem.status(of: descriptor, path: file)
            let reading = info.isRegularFile ? try read(descriptor, size: info.size, key: keyBytes, file: file) : .unsound
            switch reading {
            case .entry(let entry):
                if let expiresAt = entry.expiresAt, expiresAt <= now() {
                    removeIfStillThere(name, device: info.device, inode: info.inode)
                    return nil
                }
                index.withLock { $0.touch(name, size: info.size) }
                return entry
            case .otherKey:
                return nil  // a hash collision: that entry belongs to its own key
            case .unsound:
                removeIfStillThere(name, device: info.device, inode: info.inode)
                return nil
            }
        } catch {
            throw DiskStorageError(error)
        }
    }

    /// The number of entries and their total size, as this storage knows them.
    public var usage: (count: Int, size: Int) {
        index.withLock { index in
            try? prepare(&index, creatingFolder: false)
            return (index.count, index.totalSize)
        }
    }

    /// Entry file names from most to least recently used (for tests and diagnostics).
    var namesByRecency: [String] {
        index.withLock { $0.namesByRecency }
    }

    /// The file name used for `key` (for tests and diagnostics).
    func fileName(for key: Key) -> String {
        DiskIndex.entryName(for: Array(keyString(key).utf8))
    }

    // MARK: Internals

    private func path(_ name: String) -> String {
        folder + "/" + name
    }

    /// Creates the folder (for writes) and loads the index from it once.
    private func prepare(_ index: inout DiskIndex, creatingFolder: Bool) throws(DiskStorageError) {
        if creatingFolder, !index.folderExists {
            do throws(FileSystem.Failure) {
                try FileSystem.createDirectory(folder, mode: 0o700)
            } catch {
                throw DiskStorageError(error, folderMissing: true)
            }
            index.folderExists = true
        }
        if !index.isLoaded {
            index.load(from: folder)
            let victims = index.evict(sizeLimit: sizeLimit, countLimit: countLimit)
            for victim in victims { try? FileSystem.remove(path(victim)) }
        }
    }

    /// Creates `file` (which must not exist) holding `prefix` then `payload`; on failure removes it.
    private func writeNewFile(_ file: String, parts prefix: [UInt8], _ payload: UnsafeRawBufferPointer) throws(DiskStorageError) {
        let descriptor: Int32
        do throws(FileSystem.Failure) {
            do throws(FileSystem.Failure) {
                descriptor = try FileSystem.createExclusive(file, mode: 0o600)
            } catch where error.code == ENOENT {
                // Someone deleted the folder since it was created: make it again, once.
                try FileSystem.createDirectory(folder, mode: 0o700)
                descriptor = try FileSystem.createExclusive(file, mode: 0o600)
            }
        } catch {
            throw DiskStorageError(error, folderMissing: error.call == "mkdir" || error.code == ENOENT)
        }
        defer { FileSystem.close(descriptor) }
        let written = prefix.withUnsafeBytes { prefix in
            Result { () throws(FileSystem.Failure) in try FileSystem.writeAll(descriptor, [prefix, payload], path: file) }
        }
        if case .failure(let error) = written {
            try? FileSystem.remove(file)
            throw DiskStorageError(error)
        }
    }

    private enum Reading {
        case entry(Entry)
        /// A sound entry of another key whose file name collides with this key's.
        case otherKey
        /// Truncated, torn, corrupt or not ours.
        case unsound
    }

    /// Reads and checks the entry for `key` with one `readv` straight into the payload's buffer.
    private func read(_ descriptor: Int32, size: Int, key: [UInt8], file: String) throws(FileSystem.Failure) -> Reading {
        let prefixSize = DiskEntryFormat.headerSize + key.count
        guard size >= prefixSize else { return try classify(descriptor, size: size, file: file) }
        var prefix = [UInt8](repeating: 0, count: prefixSize)
        var payload = Data(count: size - prefixSize)
        let complete = try prefix.withUnsafeMutableBytes { prefix in
            payload.withUnsafeMutableBytes { payload in
                Result { () throws(FileSystem.Failure) in try FileSystem.readAll(descriptor, into: [prefix, payload], path: file) }
            }
        }.get()
        let header = prefix.withUnsafeBytes { DiskEntryFormat.header($0) }
        guard complete, let header, header.keyLength == key.count, header.payloadLength == payload.count,
              prefix[DiskEntryFormat.headerSize...].elementsEqual(key)
        else { return try classify(descriptor, size: size, file: file) }
        let checksum = prefix.withUnsafeBytes { prefixBytes in
            payload.withUnsafeBytes { payloadBytes in
                StableHash.checksum([UnsafeRawBufferPointer(rebasing: prefixBytes[DiskEntryFormat.headerSize...]), payloadBytes])
            }
        }
        guard checksum == header.checksum else { return .unsound }
        return .entry(Entry(
            data: payload,
            storedAt: DiskEntryFormat.date(header.storedAt),
            expiresAt: header.expiresAt == DiskEntryFormat.never ? nil : DiskEntryFormat.date(header.expiresAt)
        ))
    }

    /// Reads the whole file again to tell a colliding key's sound entry from a bad file. Rare: only
    /// when the entry is not the expected key's.
    private func classify(_ descriptor: Int32, size: Int, file: String) throws(FileSystem.Failure) -> Reading {
        guard size >= DiskEntryFormat.headerSize, lseek(descriptor, 0, SEEK_SET) == 0 else { return .unsound }
        var bytes = [UInt8](repeating: 0, count: size)
        let complete = try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(FileSystem.Failure) in try FileSystem.readAll(descriptor, into: [buffer], path: file) }
        }.get()
        return bytes.withUnsafeBytes { all -> Reading in
            guard complete, let header = DiskEntryFormat.header(all),
                  DiskEntryFormat.headerSize + header.keyLength + header.payloadLength == size
            else { return .unsound }
            let keyEnd = DiskEntryFormat.headerSize + header.keyLength
            let checksum = StableHash.checksum([
                UnsafeRawBufferPointer(rebasing: all[DiskEntryFormat.headerSize..<keyEnd]),
                UnsafeRawBufferPointer(rebasing: all[keyEnd...]),
            ])
            return checksum == header.checksum ? .otherKey : .unsound
        }
    }

    /// Deletes entry `name` unless it was replaced since it was found bad (a concurrent write).
    private func removeIfStillThere(_ name: String, device: UInt64?, inode: UInt64?) {
        index.withLock { index in
            let file = path(name)
            if let device, let inode {
                guard let now = try? FileSystem.linkStatus(file), now.device == device, now.inode == inode else { return }
            } else {
                guard let now = try? FileSystem.linkStatus(file), !now.isRegularFile else { return }
            }
            try? FileSystem.remove(file)
            index.forget(name)
        }
    }
}

extension DiskStorage where Key: LosslessStringConvertible {
    /// Creates a storage in `directory` for keys whose `description` is their stable string form
    /// (`String`, `Int`…). See ``init(directory:sizeLimit:countLimit:timeToLive:now:keyString:)``.
    public convenience init(
        directory: URL,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(directory: directory, sizeLimit: sizeLimit, countLimit: countLimit, timeToLive: timeToLive, now: now) { $0.description }
    }

    /// Creates a storage in the cache folder `name`, for keys whose `description` is their stable
    /// string form. See ``init(name:sizeLimit:countLimit:timeToLive:now:keyString:)``.
    public convenience init(
        name: String,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(DiskStorageError) {
        try self.init(name: name, sizeLimit: sizeLimit, countLimit: countLimit, timeToLive: timeToLive, now: now) { $0.description }
    }
}

extension DiskStorage where Key == URL {
    /// Creates a storage in `directory` keyed by URLs (their absolute string).
    public convenience init(
        directory: URL,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(directory: directory, sizeLimit: sizeLimit, countLimit: countLimit, timeToLive: timeToLive, now: now) { $0.absoluteString }
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
