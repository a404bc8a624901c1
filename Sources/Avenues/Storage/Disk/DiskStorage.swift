import Foundation

/// A thread-safe storage of `Data` in files, one per key, that survives restarts and crashes and can
/// be shared by several processes.
///
/// - **Names:** an entry's file is named by a stable hash of the key's string form, so any key —
///   with `/`, `..`, NUL, emoji or 10 KB of text — stays inside the folder. The entry records its
///   key, so a hash collision reads as a miss, never as another key's value. Key strings are compared
///   as Swift compares strings: `"café"` written with a composed `é` and with `e` + a combining accent
///   are one key (they are stored in NFC). For file paths on Linux, where those are two different
///   files, give a `keyString` that keeps them apart (for example, percent-escape non-ASCII bytes).
/// - **Crash safety:** a write goes to a hidden temporary file in the same folder, then `rename(2)`
///   puts it in place, so a reader sees the old entry or the new one, never half of one. Every entry
///   carries its lengths, dates and a checksum over all of them: a truncated, torn, edited, corrupt
///   or foreign file reads as a miss and is deleted. The header is checked against the file's size
///   before the payload is read, and a FIFO, device or link at an entry's name is never opened for
///   reading. (No `fsync`: after a power cut an entry may be missing, never wrong.)
/// - **Limits, across processes:** with a `sizeLimit` and/or `countLimit`, a write that goes over
///   deletes the least recently used entries down to 80 % of the limits, never the entry just
///   written. Processes sharing the folder (two runs of one tool) keep the folder's totals in a lock
///   file, so after any write returns the entries fit the limits whichever process wrote them; only
///   temporary files of writes still in progress (one value per concurrent writer) can be on disk
///   beyond them. A value larger than the whole `sizeLimit` is not stored (`.exceedsLimit`).
///   Recency is each process's own reads and writes, else the files' modification times.
/// - **Expiry:** with a `timeToLive`, entries older than that read as misses with ``value(for:)`` but
///   stay on disk as stale copies — ``lookup(_:)`` returns them marked stale, so an ``Avenue`` shows
///   them while it loads a fresh value — until they are replaced or swept by the limits.
///   Entries this process wrote also expire by a monotonic clock, so moving the wall clock back does
///   not extend them; an entry stored "in the future" (the wall clock moved back since) is expired.
///   A `timeToLive` too long to represent (`.seconds(Int64.max)`) means "never".
/// - **Safety:** the folder is created with mode 0700, and an existing one is tightened to 0700; a
///   folder that is a symbolic link, belongs to another user, or is shared by every user (sticky,
///   such as `/tmp`: a folder inside it can be used) is refused (`.unsafeFolder`) and left as it is.
///   Entries are created 0600, and a symlink planted in the folder is never followed. Only entry
///   files and this library's own abandoned temporary files are ever deleted.
///
/// The ``Storage`` methods never throw: a failed write is a later miss. Use ``write(_:for:storedAt:expiresAt:)``
/// and ``entry(for:includingExpired:)`` to see why something failed (``DiskStorageError``).
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

    private let folder: CacheFolder
    private let keyString: @Sendable (Key) -> String
    private let now: @Sendable () -> Date
    /// Nanoseconds on a monotonic clock, for the expiry of entries this process wrote.
    private let elapsed: @Sendable () -> Int64
    /// Called between a written temporary file and its move into place (tests race it).
    private let willCommit: (@Sendable () -> Void)?
    /// Entries this process wrote that expire: their inode and the monotonic time of the write.
    private let stamps = Locked([String: (inode: UInt64, written: Int64)]())
    private static var stampLimit: Int { 65_536 }

    /// Creates a storage in `directory` (created on first write if needed).
    ///
    /// - Parameters:
    ///   - directory: the folder for the entries; use one folder per storage. Several processes may
    ///     share it.
    ///   - sizeLimit: the largest total size in bytes (entry files, headers included); `nil` (the
    ///     default) for no limit. Must not be negative; 0 stores nothing.
    ///   - countLimit: the most entries; `nil` (the default) for no limit. Must not be negative; 0
    ///     stores nothing.
    ///   - timeToLive: how long entries are served; `nil` (the default) for as long as they are kept.
    ///     Must not be negative.
    ///   - now: the wall clock, replaceable in tests; `Date()` by default.
    ///   - keyString: the key's stable string form: the same key must give the same string on every
    ///     run, and different keys strings that Swift does not consider equal.
    public convenience init(
        directory: URL,
        sizeLimit: Int? = nil,
        countLimit: Int? = nil,
        timeToLive: Duration? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        keyString: @escaping @Sendable (Key) -> String
    ) {
        let start = ContinuousClock.now
        self.init(
            directory: directory, sizeLimit: sizeLimit, countLimit: countLimit, timeToLive: timeToLive, now: now,
            elapsed: { Saturating.nanoseconds(ContinuousClock.now - start) }, keyString: keyString
        )
    }

    init(
        directory: URL,
        sizeLimit: Int?,
        countLimit: Int?,
        timeToLive: Duration?,
        now: @escaping @Sendable () -> Date,
        elapsed: @escaping @Sendable () -> Int64,
        keyString: @escaping @Sendable (Key) -> String,
        willCommit: (@Sendable () -> Void)? = nil
    ) {
        precondition(sizeLimit.map { $0 >= 0 } ?? true, "DiskStorage sizeLimit must be 0 or more")
        precondition(countLimit.map { $0 >= 0 } ?? true, "DiskStorage countLimit must be 0 or more")
        precondition(timeToLive.map { $0 >= .zero } ?? true, "DiskStorage timeToLive must not be negative")
        self.directory = directory.standardizedFileURL
        self.sizeLimit = sizeLimit
        self.countLimit = countLimit
        self.timeToLive = timeToLive
        self.now = now
        self.elapsed = elapsed
        self.keyString = keyString
        self.willCommit = willCommit
        self.folder = CacheFolder(path: self.directory.path, sizeLimit: sizeLimit, countLimit: countLimit, isEntry: Self.isEntryName)
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
        // Two variables read, not `ProcessInfo.environment` (every variable copied into a
        // dictionary: 60 % of making a multiplexer with a cache key).
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        if let xdg = variable("XDG_CACHE_HOME"), xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true)
        }
        guard let home = variable("HOME"), home.hasPrefix("/") else {
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

    /// The bytes stored for `key`, marked stale when the entry expired (it is kept as a stale copy);
    /// `nil` if absent, unreadable or corrupt.
    public func lookup(_ key: Key) -> StoredValue<Data>? {
        guard let entry = try? entry(for: key, includingExpired: true) else { return nil }
        return StoredValue(entry.data, isStale: isExpired(entry, key: key))
    }

    /// Stores `value` for `key`; a failure (disk full, no permission, over the limits) leaves a miss.
    /// Use ``write(_:for:storedAt:expiresAt:)`` to learn why a write failed.
    public func set(_ value: Data, for key: Key) {
        try? write(value, for: key)
    }

    /// Deletes the entry for `key`.
    public func removeValue(for key: Key) {
        let name = entryName(for: key)
        folder.remove(name)
        _ = stamps.withLock { $0.removeValue(forKey: name) }
    }

    /// Deletes every entry (only files this storage names; anything else in the folder is left).
    public func removeAll() {
        folder.removeAll()
        stamps.withLock { $0 = [:] }
    }

    // MARK: Throwing access

    /// Writes `data` for `key`: a temporary file, then `rename(2)` over the entry.
    ///
    /// - Parameters:
    ///   - data: the bytes to store.
    ///   - key: the entry's key.
    ///   - storedAt: when the data was produced, if earlier than now (a copy of a value fetched a
    ///     while ago); now by default.
    ///   - expiresAt: when the entry stops being served; by default `timeToLive` after `storedAt`,
    ///     or never. A date that is not a number (NaN) counts as 1970.
    /// - Throws: ``DiskStorageError``: `.folderUnavailable`, `.unsafeFolder`, `.diskFull`,
    ///   `.permissionDenied`, `.exceedsLimit`, `.io`. Nothing is left behind on failure, and an older
    ///   entry for the key stays as it was (except after `.exceedsLimit`, which removes it, so a
    ///   read never returns a value older than the last write).
    public func write(_ data: Data, for key: Key, storedAt: Date? = nil, expiresAt: Date? = nil) throws(DiskStorageError) {
        let keyBytes = Self.keyBytes(keyString(key))
        let name = Self.entryName(for: keyBytes)
        let storedAtMilliseconds = DiskEntryFormat.milliseconds(storedAt ?? now())
        let expiry: Int64
        if let expiresAt {
            expiry = DiskEntryFormat.milliseconds(expiresAt)
        } else if let timeToLive {
            expiry = Saturating.add(storedAtMilliseconds, Saturating.milliseconds(timeToLive))
        } else {
            expiry = DiskEntryFormat.never
        }
        let size = Saturating.add(Saturating.add(DiskEntryFormat.headerSize, keyBytes.count), data.count)
        if let sizeLimit, size > sizeLimit {
            removeValue(for: key)
            throw DiskStorageError(.exceedsLimit, path: String(decoding: keyBytes.prefix(200), as: UTF8.self),
                                   detail: "it takes \(size) bytes and the size limit is \(sizeLimit)")
        }
        if countLimit == 0 {
            removeValue(for: key)
            throw DiskStorageError(.exceedsLimit, path: String(decoding: keyBytes.prefix(200), as: UTF8.self),
                                   detail: "the count limit is 0")
        }

        let prefix = data.withUnsafeBytes {
            DiskEntryFormat.prefix(key: keyBytes, payload: $0, storedAt: storedAtMilliseconds, expiresAt: expiry)
        }
        var inode: UInt64 = 0
        for attempt in 0..<2 {
            let (temporary, descriptor) = try folder.makeTemporaryFile(for: name)
            do {
                defer { FileSystem.close(descriptor) }
                try prefix.withUnsafeBytes { prefix in
                    try data.withUnsafeBytes { payload in try FileSystem.writeAll(descriptor, [prefix, payload], path: temporary) }
                }
                inode = try FileSystem.status(of: descriptor, path: temporary).inode
            } catch {
                try? FileSystem.remove(temporary)
                throw DiskStorageError(converting: error, path: temporary)
            }
            do {
                willCommit?()
                try folder.commit(temporary, as: name, size: size)
                break
            } catch where attempt == 0 && error.code == FileSystem.noSuchFile {
                // The folder was deleted between the temporary file and its move (a cache cleared
                // while the program runs): written again, once, into the folder made again.
                continue
            }
        }
        let written = elapsed()
        stamps.withLock { stamps in
            if expiry == DiskEntryFormat.never {
                stamps[name] = nil
            } else {
                if stamps.count >= Self.stampLimit { stamps.removeAll(keepingCapacity: true) }
                stamps[name] = (inode, written)
            }
        }
    }

    /// The entry for `key` with its dates, or `nil` if there is none or it expired (unless
    /// `includingExpired`: an expired entry stays on disk as a stale copy). A corrupt, truncated,
    /// edited or foreign file is deleted and reads as `nil`; an entry of another key whose name
    /// collides reads as `nil` and is left alone.
    ///
    /// - Throws: ``DiskStorageError`` with `.permissionDenied` or `.io` when the file exists but
    ///   cannot be read, `.entryTooLarge` when it cannot be held in memory.
    public func entry(for key: Key, includingExpired: Bool = false) throws(DiskStorageError) -> Entry? {
        let keyBytes = Self.keyBytes(keyString(key))
        let name = Self.entryName(for: keyBytes)
        let file = folder.filePath(name)
        _ = folder.totals  // the first use checks the folder and applies the limits

        let descriptor: Int32
        do throws(FileSystem.Failure) {
            descriptor = try FileSystem.openForReading(file)
        } catch {
            switch error.code {
            case ENOENT:
                return nil
            case ELOOP, EISDIR, ENXIO:
                folder.remove(name) { !$0.isRegularFile }  // a planted link or something not ours
                return nil
            default:
                throw DiskStorageError(error)
            }
        }
        defer { FileSystem.close(descriptor) }

        let info: FileSystem.FileInfo
        do throws(FileSystem.Failure) {
            info = try FileSystem.status(of: descriptor, path: file)
        } catch {
            throw DiskStorageError(error)
        }
        let sameFile = { (now: FileSystem.FileInfo) in now.device == info.device && now.inode == info.inode }
        guard info.isRegularFile else {
            folder.remove(name) { !$0.isRegularFile }  // a FIFO, device or socket: never read
            return nil
        }
        let reading: Reading
        do {
            reading = try read(descriptor, size: info.size, key: keyBytes, file: file)
        } catch {
            throw DiskStorageError(converting: error, path: file)
        }
        switch reading {
        case .entry(let entry):
            if !includingExpired, isExpired(entry, name: name, inode: info.inode) { return nil }
            folder.touch(name)
            return entry
        case .otherKey:
            return nil  // a hash collision: that entry belongs to its own key
        case .unsound:
            folder.remove(name, if: sameFile)
            return nil
        }
    }

    /// The number of entries and their total size in bytes, as every process sharing the folder
    /// keeps them (the totals in its lock file).
    public var usage: DiskUsage {
        let totals = folder.totals
        return DiskUsage(count: totals.count, size: totals.size)
    }

    /// The file name used for `key` (for tests and diagnostics).
    func fileName(for key: Key) -> String {
        entryName(for: key)
    }

    // MARK: Names

    /// `<16 hex digits>.entry`: only this character set, so no key can name a path outside the folder.
    static func entryName(for keyBytes: [UInt8]) -> String {
        StableHash.hex(StableHash.fnv1a64(keyBytes)) + entrySuffix
    }

    static var entrySuffix: String { ".entry" }

    static func isEntryName(_ name: String) -> Bool {
        let utf8 = name.utf8
        return utf8.count == 16 + entrySuffix.utf8.count
            && name.hasSuffix(entrySuffix)
            && utf8.prefix(16).allSatisfy(CacheFolder.isLowerHex)
    }

    /// The bytes a key string is stored and compared by: its UTF-8 in NFC, so strings Swift considers
    /// equal (canonically equivalent) are one entry. ASCII, the common case, is already NFC.
    static func keyBytes(_ string: String) -> [UInt8] {
        if string.utf8.allSatisfy({ $0 < 0x80 }) { return Array(string.utf8) }
        return Array(string.precomposedStringWithCanonicalMapping.utf8)
    }

    private func entryName(for key: Key) -> String {
        Self.entryName(for: Self.keyBytes(keyString(key)))
    }

    // MARK: Reading

    private enum Reading {
        case entry(Entry)
        /// A sound entry of another key whose file name collides with this key's.
        case otherKey
        /// Truncated, torn, corrupt or not ours.
        case unsound
    }

    /// Reads and checks the entry for `key`: the header first, checked against the file's size, and
    /// only then the key and payload (one `readv` straight into the payload's buffer).
    private func read(_ descriptor: Int32, size: Int, key: [UInt8], file: String) throws -> Reading {
        var headerBytes = [UInt8](repeating: 0, count: DiskEntryFormat.headerSize)
        let complete = try headerBytes.withUnsafeMutableBytes { try FileSystem.readAll(descriptor, into: [$0], path: file) }
        guard complete, let header = headerBytes.withUnsafeBytes({ DiskEntryFormat.header($0) }),
              header.fileSize == size
        else { return .unsound }
        guard header.keyLength == key.count else { return try classify(descriptor, header: header, headerBytes: headerBytes, file: file) }
        var storedKey = [UInt8](repeating: 0, count: key.count)
        var payload = try Self.allocate(Int(header.payloadLength), file: file)
        let read = try storedKey.withUnsafeMutableBytes { keyBuffer in
            try payload.withUnsafeMutableBytes { try FileSystem.readAll(descriptor, into: [keyBuffer, $0], path: file) }
        }
        guard read else { return .unsound }
        guard storedKey == key else { return try classify(descriptor, header: header, headerBytes: headerBytes, file: file) }
        let checksum = headerBytes.withUnsafeBytes { headerBuffer in
            storedKey.withUnsafeBytes { keyBuffer in
                payload.withUnsafeBytes { DiskEntryFormat.checksum(header: headerBuffer, key: keyBuffer, payload: $0) }
            }
        }
        guard checksum == header.checksum else { return .unsound }
        return .entry(Entry(
            data: payload,
            storedAt: DiskEntryFormat.date(header.storedAt),
            expiresAt: header.expiresAt == DiskEntryFormat.never ? nil : DiskEntryFormat.date(header.expiresAt)
        ))
    }

    /// Tells a colliding key's sound entry from a bad file by checking its checksum, reading the file
    /// in chunks (never all of it at once). Rare: only when the entry is not the expected key's.
    private func classify(_ descriptor: Int32, header: DiskEntryFormat.Header, headerBytes: [UInt8], file: String) throws -> Reading {
        guard lseek(descriptor, off_t(DiskEntryFormat.headerSize), SEEK_SET) == off_t(DiskEntryFormat.headerSize) else { return .unsound }
        var checksum = StableHash.Checksum()
        headerBytes.withUnsafeBytes { checksum.add(UnsafeRawBufferPointer(rebasing: $0[0..<DiskEntryFormat.checkedHeaderSize])) }
        var remaining = header.keyLength + Int(header.payloadLength)  // checked against the file size
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while remaining > 0 {
            let count = min(remaining, chunk.count)
            let complete = try chunk.withUnsafeMutableBytes { buffer in
                try FileSystem.readAll(descriptor, into: [UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])], path: file)
            }
            guard complete else { return .unsound }
            chunk.withUnsafeBytes { checksum.add(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            remaining -= count
        }
        return checksum.value == header.checksum ? .otherKey : .unsound
    }

    /// A buffer of `count` bytes, or ``DiskStorageError/Reason-swift.enum/entryTooLarge`` when the
    /// memory cannot be had (`Data(count:)` would crash instead).
    private static func allocate(_ count: Int, file: String) throws(DiskStorageError) -> Data {
        guard count > 0 else { return Data() }
        // More than the machine's memory is never attempted (sanitizers abort on such a request
        // instead of failing it); below that, a failed allocation is still an error, not a crash.
        guard UInt64(count) <= ProcessInfo.processInfo.physicalMemory, let memory = malloc(count) else {
            throw DiskStorageError(.entryTooLarge, path: file, detail: "\(count) bytes")
        }
        return Data(bytesNoCopy: memory, count: count, deallocator: .free)
    }

    private func isExpired(_ entry: Entry, key: Key) -> Bool {
        let name = entryName(for: key)
        let inode = (try? FileSystem.linkStatus(folder.filePath(name)))?.inode ?? 0
        return isExpired(entry, name: name, inode: inode)
    }

    /// Expired by the wall clock, by the wall clock having moved back past the write, or — for an
    /// entry this process wrote — by the monotonic clock.
    private func isExpired(_ entry: Entry, name: String, inode: UInt64) -> Bool {
        guard let expiresAt = entry.expiresAt else { return false }
        let wallNow = DiskEntryFormat.milliseconds(now())
        let stored = DiskEntryFormat.milliseconds(entry.storedAt)
        let expires = DiskEntryFormat.milliseconds(expiresAt)
        if wallNow >= expires || wallNow < Saturating.subtract(stored, 1_000) { return true }
        guard let stamp = stamps.withLock({ $0[name] }), stamp.inode == inode else { return false }
        let lifetime = Saturating.multiply(Saturating.subtract(expires, stored), 1_000_000)
        return Saturating.subtract(elapsed(), stamp.written) >= lifetime
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
    /// The duration in seconds, as a `TimeInterval` (huge durations are huge doubles; never traps,
    /// as `components` does past `Int64.max` seconds).
    var seconds: Double { self / .seconds(1) }
}
