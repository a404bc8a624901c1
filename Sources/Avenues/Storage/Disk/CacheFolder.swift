import Dispatch
import Synchronization

/// A folder of cache files that threads **and processes** share: the part of ``DiskStorage`` and
/// ``AsyncMedia`` that names temporary files, moves finished ones into place, keeps the folder within
/// its limits and keeps the folder itself safe.
///
/// - **Limits across processes.** The folder's total size and entry count live in a small lock file
///   (`.avenues-lock`) that every process updates under an exclusive `flock(2)` when it adds or
///   removes an entry. When a change goes over a limit, the process holding the lock lists the folder
///   and deletes the least recently used entries down to 80 % of the limits, then writes the exact
///   totals back. So after any change returns, the entries fit the limits, whichever process wrote
///   them. Temporary files being written are not counted: while N writers are mid-write the folder
///   holds up to N more values than the limit. A process killed between moving an entry into place
///   and updating the totals leaves a mark that makes the next process recount.
/// - **No limits, no bookkeeping.** A folder opened without limits does not keep the totals as it
///   changes: its writers hold a shared `flock(2)` while they move entries into place (and
///   ``sharedLinger`` after, for the next one) and mark the totals uncertain, so whoever needs them
///   (a process with limits, ``totals``) recounts once the writers are done. A move into place is
///   then one `rename(2)`, and writers in one process no longer queue behind each other (the
///   bookkeeping took eight system calls under one lock).
/// - **Recency.** Each process knows when it last read or wrote each entry; entries it never used
///   count from their modification time. Reads never write to the disk.
/// - **Safety.** The folder is created with mode 0700; an existing one that is a symbolic link or
///   belongs to another user is refused, and one of this user's that others can read is tightened to
///   0700. Only entries (as `isEntry` recognises them) and this library's own abandoned temporary
///   files are ever deleted.
final class CacheFolder: Sendable {
    static let lockName = ".avenues-lock"
    static let temporaryPrefix = ".tmp-"
    /// Temporary files of a live process older than this are treated as abandoned too.
    static let staleTemporaryAge: Int64 = 10 * 60 * 1_000_000_000

    let path: String
    let sizeLimit: Int?
    let countLimit: Int?
    private let isEntry: @Sendable (String) -> Bool
    private let state = Locked(State())
    /// `state.secured`, readable without the lock: every download asks before opening its file.
    private let secured = Atomic<Bool>(false)

    private struct State {
        /// The lock file's descriptor, once opened.
        var lock: Int32 = -1
        /// The folder was checked (real folder, ours, 0700) and its abandoned temporaries removed.
        var secured = false
        /// The totals were recounted from the folder by this process at least once.
        var reconciled = false
        /// When this process last read or wrote each entry (wall clock, nanoseconds since 1970).
        var lastUse: [String: Int64] = [:]
        /// Untracked commits (no limits) in progress.
        var sharers = 0
        /// This process holds the lock file shared (or exclusive, inside ``withFolderLock``): from
        /// an untracked commit until no commit came for ``sharedLinger``.
        var sharedHeld = false
        /// Untracked commits since the last look of the release check.
        var recentCommits = 0
        /// A release check is scheduled.
        var releaseScheduled = false
    }

    /// How long the lock file stays held shared after an untracked commit, for the next one: in a
    /// burst of small downloads, taking it (and marking the totals) for each cost four system calls
    /// a file under the folder's lock. A process with limits waits at most about this long for it.
    static let sharedLinger: DispatchTimeInterval = .milliseconds(2)
    /// Where shared locks are let go (a test blocks it to keep one held).
    static let releaseQueue = DispatchQueue(label: "avenues.cache-folder.release")

    /// The totals kept in the lock file.
    struct Totals: Equatable {
        var size = 0
        var count = 0
    }

    init(path: String, sizeLimit: Int?, countLimit: Int?, isEntry: @escaping @Sendable (String) -> Bool) {
        self.path = path
        self.sizeLimit = sizeLimit
        self.countLimit = countLimit
        self.isEntry = isEntry
    }

    deinit {
        let descriptor = state.withLock { $0.lock }
        if descriptor >= 0 { FileSystem.close(descriptor) }
    }

    func filePath(_ name: String) -> String { path + "/" + name }

    // MARK: Temporary files

    /// A hidden, unique name in the folder (so `rename(2)` stays on one file system) carrying the
    /// writer's process id, so a leftover of a killed writer can be recognised.
    static func temporaryName(for entryName: String) -> String {
        let tag = StableHash.hex(StableHash.fnv1a64(Array(entryName.utf8)))
        return temporaryPrefix + tag + "-\(FileSystem.processID)-" + StableHash.hex(UInt64.random(in: .min ... .max))
    }

    /// `.tmp-<16 hex>-<pid>-<16 hex>`: exactly what ``temporaryName(for:)`` makes, so a user's
    /// `.tmp-notes` is never taken for one.
    static func isTemporaryName(_ name: String) -> Bool {
        parseTemporary(name) != nil
    }

    private static func parseTemporary(_ name: String) -> (pid: Int32, Void)? {
        guard name.hasPrefix(temporaryPrefix) else { return nil }
        let parts = name.utf8.dropFirst(temporaryPrefix.utf8.count).split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 16, parts[2].count == 16,
              parts[0].allSatisfy(isLowerHex), parts[2].allSatisfy(isLowerHex),
              (1...10).contains(parts[1].count), parts[1].allSatisfy({ (48...57).contains($0) }),
              let pid = Int32(String(decoding: parts[1], as: UTF8.self)), pid > 0
        else { return nil }
        return (pid, ())
    }

    static func isLowerHex(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (97...102).contains(byte)
    }

    /// Creates the folder if needed and a new temporary file for `entryName`; returns its path and
    /// an open descriptor (write only).
    func makeTemporaryFile(for entryName: String) throws(DiskStorageError) -> (path: String, descriptor: Int32) {
        try state.withLock { (state: inout State) throws(DiskStorageError) in _ = try secure(&state, creating: true) }
        let temporary = filePath(Self.temporaryName(for: entryName))
        if let descriptor = try? FileSystem.createExclusive(temporary, mode: 0o600) { return (temporary, descriptor) }
        // Someone may have deleted the folder since it was checked: make it again, once.
        try state.withLock { (state: inout State) throws(DiskStorageError) in try secureAgain(&state) }
        do throws(FileSystem.Failure) {
            return (temporary, try FileSystem.createExclusive(temporary, mode: 0o600))
        } catch {
            throw DiskStorageError(error, folderMissing: error.isNoSuchFile)
        }
    }

    /// Creates the folder if needed and checks it is safe to use.
    func secure() throws(DiskStorageError) {
        if secured.load(ordering: .acquiring) { return }
        try state.withLock { (state: inout State) throws(DiskStorageError) in _ = try secure(&state, creating: true) }
    }

    // MARK: Changes (under the folder lock)

    /// A finished file to put in place: a temporary file, or a file with no name yet, open.
    enum Finished {
        /// Renamed into place.
        case file(String)
        /// Linked into place (a file made with `O_TMPFILE`); it is never named anything else.
        case unnamed(Int32)

        var isUnnamed: Bool {
            if case .unnamed = self { true } else { false }
        }
    }

    /// Moves a finished temporary file into place as `name` (one `rename(2)`), counts it, and sweeps
    /// the folder if a limit is now exceeded, never deleting `name` itself in that sweep.
    func commit(_ temporary: String, as name: String, size: Int) throws(DiskStorageError) {
        try commit(.file(temporary), as: name, size: size)
    }

    /// ``commit(_:as:size:)`` for either kind of finished file: an unnamed one is linked as `name`
    /// (one `linkat(2)`), or, if `name` exists, linked as a temporary file renamed over it.
    func commit(_ finished: Finished, as name: String, size: Int) throws(DiskStorageError) {
        guard sizeLimit != nil || countLimit != nil else { return try commitUntracked(finished, as: name) }
        let now = FileSystem.wallClockNanoseconds()
        try state.withLock { (state: inout State) throws(DiskStorageError) in
            // The totals are written back even when unchanged (a value replaced by one of the same
            // size): that write clears the mark, which would otherwise make every later change recount.
            try withFolderLock(&state, rewritingTotals: true) { (state: inout State, totals: inout Totals, lock: Int32) throws(DiskStorageError) in
                let replaced = try? FileSystem.linkStatus(filePath(name))
                // Marked first: a process killed between the rename and the new totals makes the
                // next one recount instead of trusting totals that miss this entry.
                writeTotals(totals, uncertain: true, to: lock)
                do throws(FileSystem.Failure) {
                    try place(finished, as: name)
                } catch {
                    throw DiskStorageError(error)
                }
                if let replaced, replaced.isRegularFile {
                    totals.size = max(0, totals.size - replaced.size)
                    totals.count = max(0, totals.count - 1)
                }
                totals.size = Saturating.add(totals.size, size)
                totals.count += 1
                state.lastUse[name] = now
                if isOverLimit(totals) { totals = sweep(&state, protecting: name) }
            }
        }
    }

    /// ``commit(_:as:size:)`` in a folder without limits: one `rename(2)` or `linkat(2)` under the
    /// lock file held shared, the totals marked uncertain when this process first takes it.
    private func commitUntracked(_ finished: Finished, as name: String) throws(DiskStorageError) {
        try state.withLock { (state: inout State) throws(DiskStorageError) in
            if !state.sharedHeld {
                let lock = try takeLockFile(&state, exclusive: false, creating: true)
                // Held shared from here until no move came for `sharedLinger`, so no process can
                // count the folder and clear the mark in between.
                writeTotals(Totals(), uncertain: true, to: lock)
                state.sharedHeld = true
            }
            state.sharers += 1
        }
        var moved = true
        defer {
            let schedule = state.withLock { state -> Bool in
                state.sharers -= 1
                state.recentCommits += 1
                // Perhaps the folder is gone: the next commit looks at the lock file again.
                if !moved, state.sharedHeld, state.sharers == 0 {
                    FileSystem.unlock(state.lock)
                    state.sharedHeld = false
                }
                guard !state.releaseScheduled else { return false }
                state.releaseScheduled = true
                return true
            }
            if schedule { scheduleRelease() }
        }
        var failure: FileSystem.Failure?
        do throws(FileSystem.Failure) { try place(finished, as: name) } catch { failure = error }
        if let error = failure, error.isNoSuchFile, finished.isUnnamed {
            // The folder was deleted while this process held its lock shared (a cache cleared
            // while the program runs), so no lock was taken to see it: made again with a new lock
            // file, and the file with no name, which lives on, is linked there.
            do throws(DiskStorageError) {
                try state.withLock { (state: inout State) throws(DiskStorageError) in
                    let lock = try takeLockFile(&state, exclusive: false, creating: true)
                    writeTotals(Totals(), uncertain: true, to: lock)
                }
            } catch {
                moved = false
                throw error
            }
            failure = nil
            do throws(FileSystem.Failure) { try place(finished, as: name) } catch { failure = error }
        }
        if let failure {
            moved = false
            throw DiskStorageError(failure)
        }
    }

    /// Puts `finished` in place as `name`; on failure nothing of it is left under a name.
    private func place(_ finished: Finished, as name: String) throws(FileSystem.Failure) {
        switch finished {
        case .file(let temporary):
            do throws(FileSystem.Failure) {
                do throws(FileSystem.Failure) {
                    try FileSystem.rename(temporary, to: filePath(name))
                } catch where error.isFolder && FileSystem.removeEmptyFolder(filePath(name)) {
                    // An empty folder at the entry's name (nothing of ours makes one) failed every
                    // write of its key: gone, the entry goes in. One with files in it is left, and said.
                    try FileSystem.rename(temporary, to: filePath(name))
                }
            } catch {
                try? FileSystem.remove(temporary)
                throw error
            }
        case .unnamed(let descriptor):
            do throws(FileSystem.Failure) {
                try FileSystem.link(descriptor, to: filePath(name))
            } catch where error.isExistingName {
                // Replacing a file (a revalidated download, or another process's): a link cannot,
                // so a temporary name is given first and renamed over it.
                let temporary = filePath(Self.temporaryName(for: name))
                try FileSystem.link(descriptor, to: temporary)
                try place(.file(temporary), as: name)
            }
        }
    }

    /// Lets the shared lock go once no untracked commit ran for ``sharedLinger`` (one detached check
    /// at a time, not one per commit).
    private func scheduleRelease() {
        // On a queue of its own, not the cooperative pool: a writer with limits blocked in flock(2)
        // on every pool thread must not keep this release from running.
        Self.releaseQueue.asyncAfter(deadline: .now() + Self.sharedLinger) { [weak self] in
            guard let self else { return }
            let again = state.withLock { state -> Bool in
                if state.sharers == 0, state.recentCommits == 0 {
                    if state.sharedHeld, state.lock >= 0 { FileSystem.unlock(state.lock) }
                    state.sharedHeld = false
                    state.releaseScheduled = false
                    return false
                }
                state.recentCommits = 0
                // The folder may have been deleted (and made again by another process) meanwhile:
                // then this lock file is not the folder's, and the next commit takes the new one.
                if state.sharedHeld, state.sharers == 0, ((try? FileSystem.status(of: state.lock, path: filePath(Self.lockName)))?.links ?? 0) == 0 {
                    FileSystem.unlock(state.lock)
                    state.sharedHeld = false
                }
                return true
            }
            if again { scheduleRelease() }
        }
    }

    /// Deletes entry `name` if it passes `check` (given its current `lstat`); `false` if it did not
    /// (or was not there).
    @discardableResult
    func remove(_ name: String, if check: (FileSystem.FileInfo) -> Bool = { _ in true }) -> Bool {
        state.withLock { state in
            state.lastUse[name] = nil
            let removed = try? withFolderLock(&state) { (_: inout State, totals: inout Totals, _: Int32) throws(DiskStorageError) -> Bool in
                guard let info = try? FileSystem.linkStatus(filePath(name)), check(info),
                      (try? FileSystem.remove(filePath(name))) != nil
                else { return false }
                if info.isRegularFile {
                    totals.size = max(0, totals.size - info.size)
                    totals.count = max(0, totals.count - 1)
                }
                return true
            }
            return removed ?? false
        }
    }

    /// Deletes every entry and abandoned temporary file; anything else in the folder stays.
    func removeAll() {
        state.withLock { state in
            state.lastUse = [:]
            _ = try? withFolderLock(&state) { (_: inout State, totals: inout Totals, _: Int32) throws(DiskStorageError) in
                let now = FileSystem.wallClockNanoseconds()
                for name in (try? FileSystem.contents(of: path)) ?? [] {
                    if isEntry(name) {
                        try? FileSystem.remove(filePath(name))
                    } else if let info = try? FileSystem.linkStatus(filePath(name)), info.isRegularFile,
                              Self.isAbandonedTemporary(name, modified: info.modified, now: now) {
                        try? FileSystem.remove(filePath(name))
                    }
                }
                totals = Totals()
            }
        }
    }

    /// Notes that this process used entry `name` now (a read): it leaves last in a sweep.
    func touch(_ name: String) {
        guard sizeLimit != nil || countLimit != nil else { return }  // recency matters only to a sweep
        let now = FileSystem.wallClockNanoseconds()
        state.withLock { $0.lastUse[name] = now }
    }

    /// The folder's entries and their total size in bytes, as every process sharing it keeps them.
    var totals: Totals {
        state.withLock { state in
            (try? withFolderLock(&state, creating: false) { (_: inout State, totals: inout Totals, _: Int32) throws(DiskStorageError) in
                totals
            }) ?? Totals()
        }
    }

    // MARK: Internals

    /// Runs `body` with the folder's totals under the cross-process lock and writes them back after
    /// if they changed, were recounted, or `rewritingTotals` (the body marked them uncertain).
    /// Throws when the folder is missing (and `creating` is false) or unsafe.
    private func withFolderLock<Result>(
        _ state: inout State,
        creating: Bool = true,
        rewritingTotals: Bool = false,
        _ body: (inout State, inout Totals, Int32) throws(DiskStorageError) -> Result
    ) throws(DiskStorageError) -> Result {
        let lock = try takeLockFile(&state, exclusive: true, creating: creating)
        // Held shared for untracked commits of this process: it goes back to them after.
        let shared = state.sharedHeld
        defer {
            if shared {
                try? FileSystem.lock(lock, exclusive: false, path: filePath(Self.lockName))
            } else {
                FileSystem.unlock(lock)
            }
        }
        // Recounted on this process's first use (fixing what a killed process may have left) and
        // whenever the file is missing, damaged or marked uncertain.
        var totals: Totals
        var recounted = false
        if state.reconciled, let stored = readTotals(from: lock) {
            totals = stored
        } else {
            totals = recount()
            recounted = true
            state.reconciled = true
            // A storage opened with lower limits than the folder was filled with applies them now.
            if isOverLimit(totals) { totals = sweep(&state, protecting: nil) }
        }
        let before = totals
        let result = try body(&state, &totals, lock)
        if shared {
            writeTotals(totals, uncertain: true, to: lock)  // this process's commits are not counted
        } else if recounted || rewritingTotals || totals != before {
            writeTotals(totals, uncertain: false, to: lock)
        }
        return result
    }

    /// Checks the folder (creating it if asked: else a missing one throws) and takes its lock file,
    /// `exclusive` or shared; returns the lock file's descriptor.
    private func takeLockFile(_ state: inout State, exclusive: Bool, creating: Bool) throws(DiskStorageError) -> Int32 {
        guard try secure(&state, creating: creating) else {
            throw DiskStorageError(.folderUnavailable, path: path, call: "open", code: FileSystem.noSuchFile)
        }
        let lock = try lockDescriptor(&state, creating: creating)
        do throws(FileSystem.Failure) {
            try FileSystem.lock(lock, exclusive: exclusive, path: filePath(Self.lockName))
        } catch {
            throw DiskStorageError(error)
        }
        return lock
    }

    /// Creates (if asked) and checks the folder. `false` when it does not exist and was not created.
    private func secure(_ state: inout State, creating: Bool) throws(DiskStorageError) -> Bool {
        if state.secured { return true }
        let info: FileSystem.FileInfo
        do throws(FileSystem.Failure) {
            info = try FileSystem.linkStatus(path)
        } catch where error.isNoSuchFile {
            guard creating else { return false }
            do throws(FileSystem.Failure) {
                try FileSystem.createDirectory(path, mode: 0o700)
            } catch {
                throw DiskStorageError(error, folderMissing: true)
            }
            return try secure(&state, creating: false)
        } catch {
            throw DiskStorageError(error, folderMissing: true)
        }
        if info.isSymbolicLink {
            throw DiskStorageError(.unsafeFolder, path: path, call: "lstat", detail: "it is a symbolic link")
        }
        guard info.isDirectory else { throw DiskStorageError(.folderUnavailable, path: path, call: "lstat", code: FileSystem.notADirectory) }
        guard info.owner == FileSystem.currentUser else {
            throw DiskStorageError(.unsafeFolder, path: path, call: "lstat", detail: "it belongs to another user")
        }
        // A sticky folder (`/tmp`, `/var/tmp`, `/dev/shm`) is shared by the system by design:
        // tightened to 0700, it broke every other user and service of the machine (a program running
        // as root, as many containers do, given `temporaryDirectory`). Refused, and left as it is; a
        // folder of its own inside it is made 0700 as any other.
        if info.permissions & 0o1000 != 0 {
            throw DiskStorageError(
                .unsafeFolder, path: path, call: "lstat",
                detail: "it is shared by every user (a sticky folder, such as /tmp; a folder of your own inside it can be used)"
            )
        }
        if info.permissions & 0o077 != 0 {
            // Others could read the cache or plant files in it: tighten, through a descriptor of the
            // folder itself so a link swapped in meanwhile is not followed.
            do throws(FileSystem.Failure) {
                let folder = try FileSystem.openFolder(path)
                defer { FileSystem.close(folder) }
                try FileSystem.setPermissions(folder, 0o700, path: path)
            } catch {
                throw DiskStorageError(error)
            }
        }
        removeAbandonedTemporaries()
        state.secured = true
        secured.store(true, ordering: .releasing)
        return true
    }

    /// Checks the folder again, making it if it is gone: someone deleted it since it was checked
    /// (a cache cleared while the program runs).
    private func secureAgain(_ state: inout State) throws(DiskStorageError) {
        state.secured = false
        secured.store(false, ordering: .releasing)
        _ = try secure(&state, creating: true)
    }

    /// The lock file's descriptor, opened again if the file was deleted (with the folder) since; a
    /// folder deleted since it was checked (a cache cleared while the program runs) is made again,
    /// once, if `creating`.
    private func lockDescriptor(_ state: inout State, creating: Bool) throws(DiskStorageError) -> Int32 {
        if state.lock >= 0 {
            if let info = try? FileSystem.status(of: state.lock, path: filePath(Self.lockName)), info.links > 0 {
                return state.lock
            }
            FileSystem.close(state.lock)
            state.lock = -1
            state.reconciled = false
        }
        do throws(FileSystem.Failure) {
            state.lock = try FileSystem.openOrCreate(filePath(Self.lockName), mode: 0o600)
        } catch where error.isNoSuchFile && creating {
            try secureAgain(&state)
            do throws(FileSystem.Failure) {
                state.lock = try FileSystem.openOrCreate(filePath(Self.lockName), mode: 0o600)
            } catch {
                throw lockFileFailure(error)
            }
        } catch {
            throw lockFileFailure(error)
        }
        return state.lock
    }

    /// Why the lock file cannot be opened, said so that it can be mended: a link or a folder at its
    /// name (no program of ours makes one) read as "Input/output error … (open: Is a directory)".
    private func lockFileFailure(_ error: FileSystem.Failure) -> DiskStorageError {
        guard error.isLinkOrFolder else { return DiskStorageError(error, folderMissing: error.isNoSuchFile) }
        return DiskStorageError(
            .unsafeFolder, path: path, call: "open", code: error.code,
            detail: "its lock file \(Self.lockName) is a symbolic link or a folder (remove it)"
        )
    }

    private func isOverLimit(_ totals: Totals) -> Bool {
        if let sizeLimit, totals.size > sizeLimit { return true }
        if let countLimit, totals.count > countLimit { return true }
        return false
    }

    /// Lists the folder and deletes the least recently used entries (this process's reads and
    /// writes, else modification times) down to 80 % of the limits, sparing `protected`. Returns the
    /// exact totals of what is left.
    private func sweep(_ state: inout State, protecting protected: String?) -> Totals {
        var entries = scan()
        var totals = Totals(size: entries.reduce(0) { Saturating.add($0, $1.size) }, count: entries.count)
        if isOverLimit(totals) {
            let sizeTarget = sizeLimit.map { $0 / 5 * 4 } ?? Int.max
            let countTarget = countLimit.map { $0 * 4 / 5 } ?? Int.max
            let lastUse = state.lastUse
            entries.sort { (lastUse[$0.name] ?? $0.modified, $0.name) < (lastUse[$1.name] ?? $1.modified, $1.name) }
            var kept: [(name: String, size: Int, modified: Int64)] = []
            for (position, entry) in entries.enumerated() {
                guard totals.size > sizeTarget || totals.count > countTarget else {
                    kept += entries[position...]
                    break
                }
                if entry.name == protected || (try? FileSystem.remove(filePath(entry.name))) == nil {
                    kept.append(entry)
                    continue
                }
                totals.size -= entry.size
                totals.count -= 1
            }
            let names = Set(kept.map(\.name))
            state.lastUse = state.lastUse.filter { names.contains($0.key) }
        }
        return totals
    }

    /// Every entry file in the folder (regular files only: a link or a folder is never an entry).
    private func scan() -> [(name: String, size: Int, modified: Int64)] {
        var found: [(name: String, size: Int, modified: Int64)] = []
        for name in (try? FileSystem.contents(of: path)) ?? [] where isEntry(name) {
            guard let info = try? FileSystem.linkStatus(filePath(name)), info.isRegularFile else { continue }
            found.append((name, info.size, info.modified))
        }
        return found
    }

    private func recount() -> Totals {
        let entries = scan()
        return Totals(size: entries.reduce(0) { Saturating.add($0, $1.size) }, count: entries.count)
    }

    private func removeAbandonedTemporaries() {
        let now = FileSystem.wallClockNanoseconds()
        for name in (try? FileSystem.contents(of: path)) ?? [] where Self.isTemporaryName(name) {
            guard let info = try? FileSystem.linkStatus(filePath(name)), info.isRegularFile,
                  Self.isAbandonedTemporary(name, modified: info.modified, now: now)
            else { continue }
            try? FileSystem.remove(filePath(name))
        }
    }

    /// `true` for a temporary file nobody will finish: its writer process is gone, or it is old.
    static func isAbandonedTemporary(_ name: String, modified: Int64, now: Int64) -> Bool {
        guard let (pid, _) = parseTemporary(name) else { return false }
        if modified < now - staleTemporaryAge { return true }
        return FileSystem.processIsGone(pid)
    }

    // MARK: The lock file

    /// `AVENLOCK`, a version, a flags word (bit 0: uncertain), the size and count, and a checksum.
    private static let totalsMagic: [UInt8] = Array("AVENLOCK".utf8)
    private static let totalsSize = 40

    private func readTotals(from lock: Int32) -> Totals? {
        var bytes = [UInt8](repeating: 0, count: Self.totalsSize)
        let count = bytes.withUnsafeMutableBytes { (try? FileSystem.read(lock, into: $0, at: 0, path: "")) ?? 0 }
        guard count == Self.totalsSize, Array(bytes[0..<8]) == Self.totalsMagic else { return nil }
        return bytes.withUnsafeBytes { raw -> Totals? in
            let version = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
            let flags = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
            let size = Int64(littleEndian: raw.loadUnaligned(fromByteOffset: 16, as: Int64.self))
            let entries = Int64(littleEndian: raw.loadUnaligned(fromByteOffset: 24, as: Int64.self))
            let sum = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
            guard version == 1, flags == 0, size >= 0, entries >= 0,
                  sum == StableHash.checksum([UnsafeRawBufferPointer(rebasing: raw[0..<32])])
            else { return nil }
            return Totals(size: Int(clamping: size), count: Int(clamping: entries))
        }
    }

    private func writeTotals(_ totals: Totals, uncertain: Bool, to lock: Int32) {
        var bytes = [UInt8](repeating: 0, count: Self.totalsSize)
        bytes.replaceSubrange(0..<8, with: Self.totalsMagic)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt32(1).littleEndian, toByteOffset: 8, as: UInt32.self)
            raw.storeBytes(of: UInt32(uncertain ? 1 : 0).littleEndian, toByteOffset: 12, as: UInt32.self)
            raw.storeBytes(of: Int64(totals.size).littleEndian, toByteOffset: 16, as: Int64.self)
            raw.storeBytes(of: Int64(totals.count).littleEndian, toByteOffset: 24, as: Int64.self)
            let sum = StableHash.checksum([UnsafeRawBufferPointer(rebasing: raw[0..<32])])
            raw.storeBytes(of: sum.littleEndian, toByteOffset: 32, as: UInt64.self)
        }
        bytes.withUnsafeBytes { try? FileSystem.write(lock, $0, at: 0, path: filePath(Self.lockName)) }
    }
}
