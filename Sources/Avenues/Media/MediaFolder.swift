import Foundation
import Synchronization

/// The folder of downloaded files: their names, and the moves of finished downloads into place,
/// through the ``CacheFolder`` that ``DiskStorage`` also uses (so limits hold across processes and a
/// deleted folder is created again).
///
/// A file is named by the first 128 bits of the SHA-256 of its URL, plus the URL's path extension.
/// A plain file cannot record its key, so its name must not collide — even for URLs a server picks:
/// a listing's URLs are its server's choice, and a name one of them shared with another host's file
/// would serve its bytes for that file from a cache both use.
final class MediaFolder: Sendable {
    let directory: URL
    let sizeLimit: Int?
    private let folder: CacheFolder
    /// Held by ``removeAll()``: one clear at a time.
    private let clearing = Locked(())
    /// Commits moving a file into place now, and the clear waiting for them to end: a commit never
    /// interleaves with a clear, and commits never wait for each other.
    private let commits = Locked(Commits())
    /// Counts ``removeAll()`` calls; changed only under `commits`, at the start of a clear, so a
    /// download that read it before a clear began never commits (the commit compares it under
    /// `commits`). Read without the lock by every download when it starts.
    private let clears = Atomic<UInt64>(0)

    private struct Commits {
        var inFlight = 0
        var clearWaiting: DispatchSemaphore?
    }
    /// The smallest body kept for resuming when cut short (64 KiB).
    static let smallestResumable: Int64 = 64 << 10
    /// When partial files were last pruned (wall-clock nanoseconds); `nil` before the first time.
    private let lastPrune = Locked<Int64?>(nil)
    /// The least time between two prunes: each lists the whole folder, and a listing per download
    /// made 2,000 small downloads quadratic (7.2 s, 85 % of it in the kernel's readdir and inode
    /// search).
    static let pruneInterval: Int64 = 10_000_000_000
    /// Names of partial files that may exist: those the last prune listed, and those made since.
    /// A download whose partial file is not among them writes to a file with no name instead.
    private let knownPartials = Locked(Set<String>())
    /// Whether files with no name can be made here and named (0: not tried yet, 1: yes, 2: no).
    private let unnamedFiles = Atomic<UInt8>(0)

    /// - Parameter unnamedFiles: whether downloads may be written to files with no name (tests turn
    ///   it off to run the named files' path on Linux).
    init(directory: URL, sizeLimit: Int?, unnamedFiles: Bool = true) {
        precondition(sizeLimit.map { $0 >= 0 } ?? true, "AsyncMedia sizeLimit must be 0 or more")
        self.directory = directory.standardizedFileURL
        self.sizeLimit = sizeLimit
        if !unnamedFiles { self.unnamedFiles.store(2, ordering: .relaxed) }
        folder = CacheFolder(path: self.directory.path, sizeLimit: sizeLimit, countLimit: nil, isEntry: Self.isMediaName)
    }

    // MARK: Names

    static func fileName(for url: URL) -> String {
        var text = url.absoluteString
        // Read in place (a copy of the bytes was an allocation per lookup and per download).
        let (hash, plain) = text.withUTF8 { bytes in (SHA256.prefix128(of: bytes), plainExtension(bytes)) }
        let (first, second) = hash
        var ext = plain ?? url.pathExtension
        if !isUsableExtension(ext) { ext = "" }
        // Written in one buffer: built from strings, the name was a tenth of a small download's
        // time on its thread (the extension's check read Unicode properties).
        let length = 32 + (ext.isEmpty ? 0 : 1 + ext.utf8.count)
        return String(unsafeUninitializedCapacity: length) { buffer in
            StableHash.writeHex(first, into: buffer, at: 0)
            StableHash.writeHex(second, into: buffer, at: 16)
            guard !ext.isEmpty else { return 32 }
            buffer[32] = UInt8(ascii: ".")
            _ = UnsafeMutableBufferPointer(rebasing: buffer[33...]).initialize(from: ext.utf8)
            return length
        }
    }

    /// An extension kept in a file's name: 1 to 10 ASCII letters and digits.
    static func isUsableExtension(_ ext: String) -> Bool {
        (1...10).contains(ext.utf8.count) && ext.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    /// `URL.pathExtension` read straight from an absolute URL's bytes where that is plain — the last
    /// path segment is `name.ext` or has no dot, with no percent escape and no trailing slash —
    /// else `nil` (Foundation decides). Foundation parsed the whole URL for it on every download.
    static func plainExtension(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBufferPointer(plainExtension)
    }

    /// ``plainExtension(_:)`` of bytes in place.
    static func plainExtension(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let scheme = bytes.firstIndex(of: UInt8(ascii: ":")), bytes.count - scheme >= 3,
              bytes[scheme + 1] == UInt8(ascii: "/"), bytes[scheme + 2] == UInt8(ascii: "/")
        else { return nil }
        let afterAuthority = scheme + 3
        let end = bytes[afterAuthority...].firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex
        guard let pathStart = bytes[afterAuthority..<end].firstIndex(of: UInt8(ascii: "/")) else { return "" }
        let path = bytes[pathStart..<end]
        guard !path.contains(UInt8(ascii: "%")), path.last != UInt8(ascii: "/") else { return nil }
        let segment = path[((path.lastIndex(of: UInt8(ascii: "/")) ?? pathStart) + 1)...]
        guard let dot = segment.lastIndex(of: UInt8(ascii: ".")) else { return "" }
        let ext = segment[(dot + 1)...]
        guard dot > segment.startIndex, (1...10).contains(ext.count),
              ext.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else { return nil }
        return String(decoding: ext, as: UTF8.self)
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

    /// Whether a file for `url` is kept (without making it the most recently used).
    func holds(_ url: URL) -> Bool {
        (try? FileSystem.linkStatus(folder.filePath(Self.fileName(for: url))))?.isRegularFile ?? false
    }

    /// The cached file for `url`, if any (it becomes the most recently used). With `listing` (from
    /// ``listing(forLookups:)``), a name neither in it nor moved in by this process since is taken
    /// as absent without a look.
    func cachedFile(for url: URL, listing: Listing? = nil) -> URL? {
        cachedFile(named: Self.fileName(for: url), listing: listing)
    }

    /// ``cachedFile(for:listing:)`` of a name worked out already.
    func cachedFile(named name: String, listing: Listing?) -> URL? {
        if let listing, !listing.names.contains(name), !wasCommittedHere(name) { return nil }
        return cachedFile(named: name)
    }

    /// The names in a folder, taken once for a list's lookups in place of a failing `lstat` each.
    /// What this process moves in afterwards is known from ``wasCommittedHere(_:)``.
    struct Listing: Sendable {
        let names: Set<String>
    }

    /// The names (their hash values) this process moved into the folder since the last clear: a
    /// lookup after a listing finds them, and a download run whose caller looked for its file just
    /// before another run of the URL moved it in, and claimed just after that run ended, finds it
    /// instead of fetching it twice. Forgotten past 2^20 names (16 MB at most; then such a file is
    /// fetched again).
    private let committedHere = Locked(Set<Int>())

    /// A listing of the folder now, for `lookups` URLs still to look up, when listing it once costs
    /// less than looking each up; `nil` when it would not (or the folder cannot be listed).
    ///
    /// For a list whose first lookups mostly failed (a cold cache): a failing `lstat` costs
    /// 1.5–3.3 µs against 0.3–0.5 µs for an entry listed (C, on tmpfs and ext4). A folder's size
    /// says how many entries it may hold: 20 bytes an entry on tmpfs, more on others (ext4 about 64,
    /// and it never shrinks), so estimating with 20 errs toward looking up; a size under 40 bytes
    /// (some file systems give 0) says nothing, and each URL is looked up. A folder not made yet
    /// holds nothing. A file another process (or another `MediaFolder` of the same folder) makes
    /// after the listing is fetched again, and the download replaces it.
    func listing(forLookups lookups: Int) -> Listing? {
        guard lookups >= Self.smallestListedLookup else { return nil }
        // A file moved in while the folder is read is in the listing or in `committedHere` (it is
        // added there after it is in place), so a later lookup finds it either way.
        do throws(FileSystem.Failure) {
            let info = try FileSystem.status(directory.path)
            // At most about twice as many entries as lookups.
            guard info.isDirectory, info.size >= 40, info.size / 40 <= lookups else { return nil }
            return Listing(names: Set(try FileSystem.contents(of: directory.path)))
        } catch where error.isMissing {
            return Listing(names: [])  // not made yet: nothing in it
        } catch {
            return nil
        }
    }

    /// The fewest lookups worth a listing: below this, a listing's own calls (a `stat`, an
    /// `opendir`, a `getdents` or more, a `closedir`) are most of the saving.
    static let smallestListedLookup = 16

    /// The cached file named `name` (``fileName(for:)``, computed once per download: hashing the
    /// URL and parsing its extension cost more than the `lstat`), if any.
    func cachedFile(named name: String) -> URL? {
        guard let info = try? FileSystem.linkStatus(folder.filePath(name)), info.isRegularFile else { return nil }
        folder.touch(name)
        return URL(fileURLWithPath: folder.filePath(name), isDirectory: false)  // without the hint, Foundation stat()s the path
    }

    /// The number of clears so far.
    var generation: UInt64 { clears.load(ordering: .acquiring) }

    /// Moves a complete download into place (one `rename(2)`, or `linkat(2)` for a file with no
    /// name) and sweeps down to 80 % of the size limit if it is exceeded; a file larger than the
    /// whole limit still goes to its caller, and the next sweep takes it. A download begun before a
    /// clear is not committed (`CancellationError`).
    func commit(_ partial: Partial, for url: URL, named name: String, size: Int64, since generation: UInt64) throws -> URL {
        try commits.withLock { commits throws in
            guard clears.load(ordering: .acquiring) == generation else { throw CancellationError() }
            commits.inFlight += 1
        }
        defer {
            let clear = commits.withLock { commits -> DispatchSemaphore? in
                commits.inFlight -= 1
                guard commits.inFlight == 0 else { return nil }
                defer { commits.clearWaiting = nil }
                return commits.clearWaiting
            }
            clear?.signal()
        }
        do throws(DiskStorageError) {
            try folder.commit(partial.finished, as: name, size: Int(clamping: size))
        } catch {
            throw AsyncMediaError.cannotStore(url, reason: error)
        }
        if !partial.isUnnamed { forgetPartial(partial.path) }
        committedHere.withLock { names in
            if names.count >= 1 << 20 { names.removeAll() }
            names.insert(name.hashValue)
        }
        return URL(fileURLWithPath: folder.filePath(name), isDirectory: false)  // without the hint, Foundation stat()s the path
    }

    /// Whether this process moved a file named `name` into the folder since the last clear (a hash
    /// that collides only costs an `lstat`).
    func wasCommittedHere(_ name: String) -> Bool {
        committedHere.withLock { $0.contains(name.hashValue) }
    }

    /// Whether no clear started since `generation` and, in a folder with a size limit, `file` still
    /// exists (another download's sweep may have taken it). Without a limit nothing here deletes a
    /// file but a clear, and every file a download returns was found or moved into place just
    /// before: the `lstat` is skipped.
    func stillHolds(_ file: URL, since generation: UInt64) -> Bool {
        // A clear that starts after the generation is read and deletes the file before the
        // `lstat` is seen by it; one that deletes it after is like a clear after the return.
        guard clears.load(ordering: .acquiring) == generation else { return false }
        return sizeLimit == nil || ((try? FileSystem.linkStatus(file.path))?.isRegularFile ?? false)
    }

    /// Deletes every downloaded file, partial download and abandoned temporary file (nothing else
    /// in the folder).
    func removeAll() {
        clearing.withLock { _ in
            // From here no commit starts; those already moving a file are waited for (a rename).
            let commitsEnded = commits.withLock { commits -> DispatchSemaphore? in
                clears.add(1, ordering: .releasing)  // wrapping
                guard commits.inFlight > 0 else { return nil }
                let semaphore = DispatchSemaphore(value: 0)
                commits.clearWaiting = semaphore
                return semaphore
            }
            commitsEnded?.wait()
            committedHere.withLock { $0.removeAll() }
            folder.removeAll()
            // Records first: a record never outlives its partial file (see `openPartial`).
            let partials = ((try? FileSystem.contents(of: directory.path)) ?? []).filter(Self.isPartialName)
            for name in partials.sorted(by: { Self.isRecordName($0) && !Self.isRecordName($1) }) {
                try? FileSystem.remove(folder.filePath(name))
            }
        }
    }

    // MARK: Partial downloads (resume)

    /// A download's file while it is written: a partial file that a later run resumes (kept when
    /// the download is cut short with a validator to resume with), a file with no name that becomes
    /// that partial file only if its body is worth resuming, or a plain temporary file when another
    /// download holds the URL's partial file.
    final class Partial: Sendable {
        /// The file's path; for a file with no name, the partial file's it would take.
        let path: String
        /// Open for reading and writing; holds the partial file's lock until its last owner (this
        /// run, a transfer still writing) lets it go.
        let file: SharedDescriptor
        var descriptor: Int32 { file.descriptor }
        /// The validator the bytes already there were sent with (`If-Range`), if any.
        let validator: String?
        /// `false` for a plain temporary file: never kept for a later run.
        let resumable: Bool
        private let metaPath: String?
        /// Whether the `.meta` file may exist: only this download writes it (it holds the partial
        /// file's lock), so a download that found none and wrote none deletes none — two failing
        /// `unlink(2)` calls fewer per small file.
        private let metaExists: Locked<Bool>
        /// Whether the bytes have no name yet (`O_TMPFILE`): nothing to delete, and nothing a crash
        /// leaves behind.
        private let unnamed: Locked<Bool>
        /// Called when a file with no name becomes the partial file.
        private let named: (@Sendable () -> Void)?

        init(path: String, descriptor: Int32, validator: String?, resumable: Bool, metaPath: String?, metaExists: Bool) {
            (self.path, self.validator, self.resumable, self.metaPath) = (path, validator, resumable, metaPath)
            file = SharedDescriptor(descriptor)
            self.metaExists = Locked(metaPath != nil && metaExists)
            unnamed = Locked(false)
            named = nil
        }

        /// A file with no name, which becomes the partial file at `path` if its body is worth resuming.
        init(unnamed descriptor: Int32, partialPath path: String, metaPath: String, named: @escaping @Sendable () -> Void) {
            (self.path, validator, resumable, self.metaPath) = (path, nil, true, metaPath)
            file = SharedDescriptor(descriptor)
            metaExists = Locked(false)
            unnamed = Locked(true)
            self.named = named
        }

        /// Whether the bytes have no name yet.
        var isUnnamed: Bool { unnamed.withLock { $0 } }

        /// What the folder puts in place when the file is whole.
        var finished: CacheFolder.Finished {
            isUnnamed ? .unnamed(descriptor) : .file(path)
        }

        /// Gives a file with no name the partial file's name, locked, so a later run (in this process
        /// or after a crash) can resume it; `false` if another download's partial file has it.
        private func takeName() -> Bool {
            unnamed.withLock { unnamed in
                guard unnamed else { return true }
                // Nobody else can hold this file yet; locked before it has a name anyone could open.
                guard (try? FileSystem.tryLock(descriptor, path: path)) == true, (try? FileSystem.link(descriptor, to: path)) != nil else {
                    return false
                }
                unnamed = false
                return true
            }
        }

        /// The bytes the file holds now.
        var size: Int64 { Int64((try? FileSystem.status(of: descriptor, path: path).size) ?? 0) }

        /// Records what the bytes being written can be resumed with (atomically, before they are).
        func saveValidator(_ validator: String?, for url: URL) {
            guard let metaPath else { return }
            guard let validator, !validator.contains("\n") else {
                removeMeta()
                return
            }
            if isUnnamed {
                guard takeName() else { return }  // then it is not resumed: no record
                named?()
            }
            let text = "avenues-partial 1\n\(RedactedURL.recorded(url))\n\(validator)\n"  // no password on disk
            let temporary = metaPath + ".tmp"
            guard let descriptor = try? FileSystem.openOrCreate(temporary, mode: 0o600) else { return }
            defer { FileSystem.close(descriptor) }
            _ = try? FileSystem.truncate(descriptor, path: temporary)
            let written = Array(text.utf8).withUnsafeBytes { (try? FileSystem.writeAll(descriptor, $0, path: temporary)) != nil }
            if written {
                metaExists.withLock { $0 = true }  // before the rename: a failed one leaves nothing to delete
                try? FileSystem.rename(temporary, to: metaPath)
            } else {
                try? FileSystem.remove(temporary)
            }
        }

        /// Whether a validator was recorded for the bytes written (or may have been): only then is
        /// the file worth keeping for a later run.
        var hasValidator: Bool { metaExists.withLock { $0 } }

        /// Deletes the file and what was recorded for it (the record first: it never outlives the file).
        ///
        /// `emptying`: cut to nothing first, so that its space is free at once even while a
        /// transport that failed still holds it open (it writes no more). Only for a file that no
        /// commit can have placed.
        func discard(emptying: Bool = false) {
            removeMeta()
            if emptying { try? FileSystem.truncate(descriptor, path: path) }
            if !isUnnamed { try? FileSystem.remove(path) }
        }

        /// Forgets what was recorded for it (before it is moved into place).
        func forgetValidator() {
            removeMeta()
        }

        private func removeMeta() {
            guard let metaPath, metaExists.withLock({ exists in defer { exists = false }; return exists }) else { return }
            try? FileSystem.remove(metaPath)
        }

        /// This run is done with the file (a transfer may still hold it).
        func close() {
            file.release()
        }
    }

    static let partialPrefix = ".partial-"
    /// Partial downloads kept at most, and for how long (older and more are deleted).
    static let partialsKept = 16
    static let partialAge: Int64 = 24 * 3_600 * 1_000_000_000

    /// A partial file's record: `.partial-<media name>.meta` (or `.meta.tmp`).
    static func isRecordName(_ name: String) -> Bool {
        name.hasSuffix(".meta") || name.hasSuffix(".meta.tmp")
    }

    /// `.partial-<media name>`, and its `.meta` (and `.meta.tmp` while that is written).
    static func isPartialName(_ name: String) -> Bool {
        guard name.hasPrefix(partialPrefix) else { return false }
        var rest = name.dropFirst(partialPrefix.count)
        for suffix in [".meta.tmp", ".meta"] where rest.hasSuffix(suffix) {
            rest = rest.dropLast(suffix.count)
            break
        }
        return isMediaName(String(rest))
    }

    /// The partial file for `url` (named after `name`, its ``fileName(for:)``), locked for this
    /// download, with what it holds; a plain temporary file if another download holds it.
    func openPartial(for url: URL, named name: String) throws(DiskStorageError) -> Partial {
        try folder.secure()
        let partialName = Self.partialPrefix + name
        let path = folder.filePath(partialName)
        let metaPath = path + ".meta"
        prunePartials(sparing: partialName)
        // No partial file of this URL is known (none was listed, none was made here since): the
        // bytes go to a file with no name, linked into place when whole — one change of the
        // directory per download instead of a create and a rename, and nothing left behind by a
        // crash. A body worth resuming takes the partial file's name when it starts.
        if !knownPartials.withLock({ $0.contains(partialName) }), let descriptor = unnamedFile() {
            // `self` held, not weakly (no side table per download): a partial lives for one download.
            return Partial(unnamed: descriptor, partialPath: path, metaPath: metaPath) { [self] in
                knownPartials.withLock { _ = $0.insert(partialName) }
            }
        }
        // Held by another download (or the folder vanished): a file of this download's own.
        func ownTemporaryFile(closing descriptor: Int32?) throws(DiskStorageError) -> Partial {
            if let descriptor { FileSystem.close(descriptor) }
            let (temporary, writable) = try folder.makeTemporaryFile(for: name)
            return Partial(path: temporary, descriptor: writable, validator: nil, resumable: false, metaPath: nil, metaExists: false)
        }
        // Usually there is none: made now, it holds nothing and has no record, since a record is
        // always deleted before its partial file. One `open(2)`, and no `.meta` to look for.
        let created = try? FileSystem.createExclusive(path, mode: 0o600, readable: true)
        guard let descriptor = created ?? (try? FileSystem.openOrCreate(path, mode: 0o600)) else { return try ownTemporaryFile(closing: nil) }
        guard (try? FileSystem.tryLock(descriptor, path: path)) == true else { return try ownTemporaryFile(closing: descriptor) }
        if created != nil {
            return Partial(path: path, descriptor: descriptor, validator: nil, resumable: true, metaPath: metaPath, metaExists: false)
        }
        guard let info = try? FileSystem.status(of: descriptor, path: path), info.isRegularFile else { return try ownTemporaryFile(closing: descriptor) }
        let (metaExists, validator) = Self.readValidator(metaPath, for: url)
        if info.size > 0, validator == nil { _ = try? FileSystem.truncate(descriptor, path: path) }
        return Partial(
            path: path, descriptor: descriptor, validator: info.size > 0 ? validator : nil, resumable: true, metaPath: metaPath,
            metaExists: metaExists
        )
    }

    /// A new file with no name in the folder, if the system can make one and name it later (found
    /// out once: `linkat` with `AT_EMPTY_PATH` needs Linux 3.11 and, before 6.10, a capability; a
    /// file system may have no such files). `nil`: a named file serves.
    private func unnamedFile() -> Int32? {
        let known = unnamedFiles.load(ordering: .relaxed)
        guard known != 2 else { return nil }
        let descriptor: Int32
        do throws(FileSystem.Failure) {
            descriptor = try FileSystem.createUnnamed(in: folder.path, mode: 0o600)
        } catch {
            // A missing or full folder says nothing of the system: asked again next time.
            if error.isUnsupported { unnamedFiles.store(2, ordering: .relaxed) }
            return nil
        }
        if known == 1 { return descriptor }
        // The first one is named under a temporary name and deleted (a file can be named only
        // once, so the download gets another).
        let probe = folder.filePath(CacheFolder.temporaryName(for: "unnamed-probe"))
        defer { FileSystem.close(descriptor) }
        do throws(FileSystem.Failure) {
            try FileSystem.link(descriptor, to: probe)
            try? FileSystem.remove(probe)
        } catch {
            if error.isPermissionDenied || error.isNoSuchFile || error.isUnsupported { unnamedFiles.store(2, ordering: .relaxed) }
            return nil
        }
        unnamedFiles.store(1, ordering: .relaxed)
        return try? FileSystem.createUnnamed(in: folder.path, mode: 0o600)
    }

    /// A partial file of this process's is gone (moved into place or deleted).
    private func forgetPartial(_ path: String) {
        let name = String(path.split(separator: "/").last ?? "")
        knownPartials.withLock { _ = $0.remove(name) }
    }

    /// Whether the `.meta` file may exist (it opened, or failed for a reason other than its
    /// absence), and the validator it records for `url`.
    private static func readValidator(_ metaPath: String, for url: URL) -> (exists: Bool, validator: String?) {
        let descriptor: Int32
        do throws(FileSystem.Failure) {
            descriptor = try FileSystem.openForReading(metaPath)
        } catch {
            return (!error.isNoSuchFile, nil)
        }
        defer { FileSystem.close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 4_096)
        let count = bytes.withUnsafeMutableBytes { (try? FileSystem.read(descriptor, into: $0, at: 0, path: metaPath)) ?? 0 }
        let lines = String(decoding: bytes[0..<count], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 3, lines[0] == "avenues-partial 1", lines[1] == RedactedURL.recorded(url), !lines[2].isEmpty else { return (true, nil) }
        // Sent as `If-Range`: a record damaged on disk must not put a line break (or any control
        // character) into a request. Without a validator the download starts over.
        let validator = String(lines[2])
        guard HTTPField(name: "If-Range", value: validator).problem == nil else { return (true, nil) }
        return (true, validator)
    }

    /// Deletes partial downloads older than a day, beyond the newest ``partialsKept``, or beyond the
    /// folder's size limit (oldest first), unless a download holds them.
    private func prunePartials(sparing kept: String) {
        let now = FileSystem.wallClockNanoseconds()
        let due = lastPrune.withLock { last -> Bool in
            if let last, now >= last, now - last < Self.pruneInterval { return false }
            last = now
            return true
        }
        guard due else { return }
        let names = ((try? FileSystem.contents(of: directory.path)) ?? []).filter(Self.isPartialName)
        // Never forgotten here: a partial file another process deletes costs a named file, no more.
        let files = names.filter { !Self.isRecordName($0) }
        knownPartials.withLock { $0.formUnion(files) }
        var partials: [(name: String, size: Int, modified: Int64)] = []
        for name in files {
            guard let info = try? FileSystem.linkStatus(folder.filePath(name)), info.isRegularFile else { continue }
            partials.append((name, info.size, info.modified))
        }
        // A record whose partial file is gone (a process killed between the two deletions, or one
        // that deleted the file first, as 1.0.0 did) is deleted: a new partial file of that name is
        // made without looking for its record. Checked again just before: a listing is not a snapshot.
        let listed = Set(names)
        for record in names where Self.isRecordName(record) {
            let owner = String(record.dropLast(record.hasSuffix(".tmp") ? ".meta.tmp".count : ".meta".count))
            guard !listed.contains(owner), (try? FileSystem.linkStatus(folder.filePath(owner))) == nil else { continue }
            try? FileSystem.remove(folder.filePath(record))
        }
        partials.sort { $0.modified > $1.modified }
        var total = 0
        for (position, partial) in partials.enumerated() where partial.name != kept {
            total = Saturating.add(total, partial.size)
            let tooMany = position >= Self.partialsKept
            let tooOld = partial.modified < now - Self.partialAge
            let tooBig = sizeLimit.map { total > $0 } ?? false
            guard tooMany || tooOld || tooBig else { continue }
            let path = folder.filePath(partial.name)
            guard let descriptor = try? FileSystem.openOrCreate(path, mode: 0o600) else { continue }
            defer { FileSystem.close(descriptor) }
            guard (try? FileSystem.tryLock(descriptor, path: path)) == true else { continue }  // being written
            try? FileSystem.remove(path + ".meta")  // the record first: it never outlives the file
            try? FileSystem.remove(path)
        }
    }

    /// Files and their total size, as every process sharing the folder keeps them.
    var usage: (count: Int, size: Int) {
        let totals = folder.totals
        return (totals.count, totals.size)
    }
}
