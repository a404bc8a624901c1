import Avenues
import AvenuesTestSupport
@testable import AvenuesSQLite
import CSQLite
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder of its own for a test, deleted after, and again at exit: Swift may release the value
/// after its last use, mid-test, and a storage committing there later made the folder again (every
/// run left a few behind).
final class Folder: Sendable {
    let url: URL
    private static let made: Locked<Set<URL>> = {
        atexit { for url in Folder.made.withLock({ Array($0) }) { try? FileManager.default.removeItem(at: url) } }
        return Locked([])
    }()

    init(_ label: String = #function) {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("avenues-sqlite-" + label.filter { $0.isLetter } + "-" + UUID().uuidString, isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        _ = Self.made.withLock { $0.insert(url) }
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    var database: URL { url.appendingPathComponent("cache/rows.sqlite") }
}

/// A wall clock the test moves.
// Safe: `time` is read and written under `lock` only (NSLock: ThreadSanitizer sees its ordering).
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var time = Date(timeIntervalSince1970: 1_800_000_000)
    var now: Date { lock.withLock { time } }
    func advance(_ seconds: Double) { lock.withLock { time = time.addingTimeInterval(seconds) } }
}

/// Waits (yielding, at most 10 s) until `condition` holds.
func eventuallyTrue(_ condition: () -> Bool) async {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: .seconds(10))
    while !condition(), clock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
    #expect(condition())
}

@Suite("SQLiteStorage")
struct SQLiteStorageTests {
    @Test func valuesRoundTripForAnyKeyAndSize() throws {
        let folder = Folder()
        let storage = SQLiteStorage<String>(file: folder.database)
        let keys = ["a", "", "with/slash/../..", "nul\0inside", "nul\0other", "emoji 🧭", String(repeating: "long", count: 2_500), "café", "cafe\u{301}"]
        for (index, key) in keys.enumerated() { try storage.write(Data("value \(index)".utf8), for: key) }
        for (index, key) in keys.enumerated() {
            #expect(storage.value(for: key) == Data("value \(index)".utf8), "\(key.prefix(20))")
        }
        // 12 MiB of 64 KiB blocks, each numbered in its first bytes: built per byte, it held a
        // thread of the tests' small pool for about 3 s in a debug build.
        let block = Data((0..<(1 << 16)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        var big = Data(capacity: 12 << 20)
        for number in 0..<192 {
            var numbered = block
            numbered.replaceSubrange(0..<4, with: withUnsafeBytes(of: UInt32(number).littleEndian) { Data($0) })
            big.append(numbered)
        }
        try storage.write(big, for: "big")
        #expect(storage.value(for: "big") == big)
        try storage.write(Data(), for: "empty")
        #expect(storage.value(for: "empty") == Data())
        storage.removeValue(for: "a")
        #expect(storage.value(for: "a") == nil)
        #expect(storage.usage?.count == keys.count + 1)
        storage.removeAll()
        #expect(storage.value(for: "big") == nil)
        #expect(storage.usage == DiskUsage(count: 0, size: 0))
    }

    @Test func aSecondInstanceAndARestartSeeTheSameEntries() throws {
        let folder = Folder()
        try SQLiteStorage<Int>(file: folder.database).write(Data("x".utf8), for: 7)
        #expect(SQLiteStorage<Int>(file: folder.database).value(for: 7) == Data("x".utf8))
    }

    /// `set` commits a batch at a time: its values are readable at once here, and everywhere after
    /// `flush()`, or when the instance goes, or by themselves within milliseconds. Another instance
    /// reads from a snapshot at most 20 ms old, so it sees them within that.
    @Test func valuesSetAreReadableAtOnceAndCommittedInBatches() async throws {
        let folder = Folder()
        let writer = SQLiteStorage<String>(file: folder.database)
        let reader = SQLiteStorage<String>(file: folder.database)
        writer.set(Data("1".utf8), for: "a")
        #expect(writer.value(for: "a") == Data("1".utf8))
        try writer.flush()
        #expect(reader.value(for: "a") == Data("1".utf8))
        writer.set(Data("2".utf8), for: "b")
        await eventuallyTrue { reader.value(for: "b") == Data("2".utf8) }  // the scheduled commit
        do {
            let going = SQLiteStorage<String>(file: folder.database)
            for index in 0..<1_500 { going.set(Data("\(index)".utf8), for: "many\(index)") }  // two full batches and a rest
        }
        await eventuallyTrue { reader.value(for: "many1499") == Data("1499".utf8) }
        #expect(reader.usage?.count == 1_502)
        writer.set(Data("3".utf8), for: "a")
        writer.removeValue(for: "a")  // removes the value waiting for its commit too
        try writer.flush()
        #expect(writer.value(for: "a") == nil)
        await eventuallyTrue { reader.value(for: "a") == nil }
    }

    /// A key set again while its value waits for the commit replaces it in the batch: the batch's
    /// size counts it once (counted each time, it forced a commit every 500 KB of re-sets).
    @Test func aKeySetAgainBeforeItsCommitIsCountedOnce() throws {
        let storage = SQLiteStorage<String>(file: Folder().database, sizeLimit: 1_000_000)
        for _ in 0..<5_000 { storage.set(Data(count: 200), for: "same") }
        #expect(storage.pendingBytes <= 204)  // one value and its key, or none once committed
        try storage.flush()
        #expect(storage.pendingBytes == 0)
        #expect(storage.usage?.count == 1)
    }

    @Test func expiredEntriesAreStaleCopiesAndEntriesFromTheFutureAreExpired() throws {
        let folder = Folder()
        let clock = TestClock()
        let storage = SQLiteStorage<String>(file: folder.database, timeToLive: .seconds(60), now: { clock.now })
        try storage.write(Data("v".utf8), for: "k")
        #expect(storage.lookup("k")?.isStale == false)
        clock.advance(61)
        #expect(storage.value(for: "k") == nil)
        #expect(storage.lookup("k")?.value == Data("v".utf8))
        #expect(storage.lookup("k")?.isStale == true)
        #expect(try storage.entry(for: "k", includingExpired: true)?.expiresAt == Date(timeIntervalSince1970: 1_800_000_060))
        try storage.write(Data("w".utf8), for: "later")
        clock.advance(-3_600)  // the wall clock moved back: what was written "later" is not trusted
        #expect(storage.lookup("later")?.isStale == true)
        // Durations too long to represent mean "never".
        let forever = SQLiteStorage<String>(file: folder.database, timeToLive: .seconds(Int64.max), now: { clock.now })
        try forever.write(Data("f".utf8), for: "forever")
        clock.advance(1e9)
        #expect(forever.value(for: "forever") == Data("f".utf8))
    }

    @Test func limitsHoldAfterEveryWriteAndTheLeastRecentlyUsedGoFirst() throws {
        let folder = Folder()
        let clock = TestClock()
        let storage = SQLiteStorage<String>(file: folder.database, countLimit: 10, now: { clock.now })
        for index in 0..<10 {
            clock.advance(1)
            try storage.write(Data("\(index)".utf8), for: "k\(index)")
        }
        clock.advance(60)  // recency is kept to the nearest ten seconds
        #expect(storage.value(for: "k0") != nil)  // read: now the most recently used
        clock.advance(1)
        try storage.write(Data("10".utf8), for: "k10")  // 11 > 10: down to 8, sparing k10 and the read k0
        #expect(storage.usage?.count == 8)
        #expect(storage.value(for: "k0") != nil)
        #expect(storage.value(for: "k10") != nil)
        #expect(storage.value(for: "k1") == nil && storage.value(for: "k2") == nil && storage.value(for: "k3") == nil)
        #expect(storage.value(for: "k4") != nil)

        let sized = SQLiteStorage<String>(file: Folder().database, sizeLimit: 1_000)
        for index in 0..<500 {
            try sized.write(Data(count: 90 + index % 7), for: "s\(index)")
            let usage = try #require(sized.usage)
            #expect(usage.size <= 1_000, "after write \(index)")
        }
    }

    @Test func aValueOverTheWholeLimitIsRefusedAndRemovesTheOldOne() throws {
        let storage = SQLiteStorage<String>(file: Folder().database, sizeLimit: 100)
        try storage.write(Data("small".utf8), for: "k")
        #expect(throws: SQLiteStorageError.self) { try storage.write(Data(count: 200), for: "k") }
        do {
            try storage.write(Data(count: 200), for: "k")
        } catch {
            #expect(error.reason == .exceedsLimit)
            #expect(error.description.contains("sizeLimit"))
        }
        #expect(storage.value(for: "k") == nil)
        let none = SQLiteStorage<String>(file: Folder().database, countLimit: 0)
        #expect(throws: SQLiteStorageError.self) { try none.write(Data("x".utf8), for: "k") }
    }

    /// A value longer than SQLite's length limit (1,000,000,000 bytes as Debian builds it) was bound
    /// with its result unread, so its row failed with "NOT NULL constraint failed" (an `.io` error)
    /// and took down the batch it was committed with: "a", set before it, was lost.
    @Test func aValueLongerThanSQLiteStoresIsRefusedAndHarmsNoOther() throws {
        let storage = SQLiteStorage<String>(file: Folder().database)
        let tooLong = Data(count: SQLiteConnection.largestRow + 1)  // zeros: pages never touched
        storage.set(Data("first".utf8), for: "a")
        storage.set(tooLong, for: "huge")
        storage.set(Data("second".utf8), for: "b")
        try storage.flush()
        let again = SQLiteStorage<String>(file: storage.file)
        #expect(again.value(for: "a") == Data("first".utf8))
        #expect(again.value(for: "b") == Data("second".utf8))
        #expect(again.value(for: "huge") == nil)
        #expect(storage.value(for: "huge") == nil)
        let usage = try #require(again.usage)
        #expect(usage.count == 2)
        #expect(usage.size < 100)
        do {
            try storage.write(tooLong, for: "a")
            Issue.record("a value longer than SQLite stores was written")
        } catch {
            #expect(error.reason == .exceedsLimit)
            #expect(error.description.contains("SQLite stores rows of at most"))
        }
        #expect(storage.value(for: "a") == nil, "a read never returns a value older than the last write")
        #expect(again.value(for: "b") == Data("second".utf8))
    }

    @Test func theFileIsPrivateAndALinkInItsPlaceIsRefused() throws {
        let folder = Folder()
        let storage = SQLiteStorage<String>(file: folder.database)
        try storage.write(Data("x".utf8), for: "k")
        var info = stat()
        #expect(stat(folder.database.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(folder.database.deletingLastPathComponent().path, &info) == 0 && info.st_mode & 0o777 == 0o700)

        let target = folder.url.appendingPathComponent("target")
        try Data("keep me".utf8).write(to: target)
        let linked = folder.url.appendingPathComponent("linked.sqlite")
        #expect(symlink(target.path, linked.path) == 0)
        let refused = SQLiteStorage<String>(file: linked)
        do {
            try refused.write(Data("x".utf8), for: "k")
            Issue.record("a write through a symbolic link succeeded")
        } catch {
            #expect(error.reason == .unsafeFile)
        }
        #expect(refused.value(for: "k") == nil)
        #expect(try Data(contentsOf: target) == Data("keep me".utf8))

        let linkedFolder = folder.url.appendingPathComponent("linked-folder")
        #expect(symlink(folder.url.path, linkedFolder.path) == 0)
        #expect(throws: SQLiteStorageError.self) {
            try SQLiteStorage<String>(file: linkedFolder.appendingPathComponent("db.sqlite")).write(Data(), for: "k")
        }
    }

    /// Probe of 2026-11-27: the folder of the database was tightened to 0700 whatever it was —
    /// `/tmp` for `/tmp/cache.sqlite` (as root: every other user and service lost it), the home
    /// folder for `~/cache.sqlite`. A sticky folder is refused and left as it is; one others can
    /// only read is left as it is; one others can write in is still tightened.
    @Test(arguments: [(mode: mode_t(0o1777), kept: mode_t(0o1777), refused: true), (0o755, 0o755, false), (0o750, 0o750, false), (0o777, 0o700, false), (0o775, 0o700, false)])
    func theDatabasesFolderIsLeftAsItIsUnlessOthersCanWriteInIt(mode: mode_t, kept: mode_t, refused: Bool) throws {
        let folder = Folder()
        let parent = folder.url.appendingPathComponent("parent")
        #expect(mkdir(parent.path, 0o700) == 0)
        #expect(chmod(parent.path, mode) == 0)
        let storage = SQLiteStorage<String>(file: parent.appendingPathComponent("cache.sqlite"))
        do {
            try storage.write(Data("x".utf8), for: "k")
            #expect(!refused, "a sticky folder was used")
        } catch {
            #expect(refused, "\(error)")
            #expect(error.reason == .unsafeFile)
        }
        var info = stat()
        #expect(lstat(parent.path, &info) == 0 && info.st_mode & 0o7777 == kept)
        if !refused { #expect(lstat(parent.appendingPathComponent("cache.sqlite").path, &info) == 0 && info.st_mode & 0o777 == 0o600) }
    }

    @Test(arguments: ["garbage", "empty", "truncated", "foreign", "damaged row"])
    func aFileThatIsNotOurDatabaseIsSetAsideAndANewOneMade(kind: String) throws {
        let folder = Folder()
        let file = folder.database
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        switch kind {
        case "garbage":
            try Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }).write(to: file)
        case "empty":
            try Data().write(to: file)
        case "truncated":
            let storage = SQLiteStorage<String>(file: file)
            for index in 0..<2_000 { try storage.write(Data(repeating: UInt8(index % 256), count: 300), for: "k\(index)") }
            try storage.flush()
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
            #expect(truncate(file.path, off_t(size / 2)) == 0)
            try? FileManager.default.removeItem(atPath: file.path + "-wal")
            try? FileManager.default.removeItem(atPath: file.path + "-shm")
        case "foreign":
            var handle: OpaquePointer?
            #expect(sqlite3_open(file.path, &handle) == SQLITE_OK)
            #expect(sqlite3_exec(handle, "CREATE TABLE mail(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO mail VALUES (1, 'keep')", nil, nil, nil) == SQLITE_OK)
            sqlite3_close(handle)
        default:  // a value's bytes changed inside the file, where SQLite does not look
            let storage = SQLiteStorage<String>(file: file)
            try storage.write(Data(repeating: 0x41, count: 2_000), for: "k")
            try storage.write(Data(repeating: 0x42, count: 100), for: "other")
            var handle: OpaquePointer?
            #expect(sqlite3_open(file.path, &handle) == SQLITE_OK)
            #expect(sqlite3_exec(handle, "UPDATE entries SET value = zeroblob(2000) WHERE key = 'k'", nil, nil, nil) == SQLITE_OK)
            sqlite3_close(handle)
            let reopened = SQLiteStorage<String>(file: file)
            #expect(reopened.value(for: "k") == nil)  // a miss, not 2,000 zeros
            #expect(reopened.value(for: "other") == Data(repeating: 0x42, count: 100))
            return
        }
        let storage = SQLiteStorage<String>(file: file)
        let value = storage.value(for: "k1")
        #expect(value == nil || value == Data(repeating: 1, count: 300))
        try storage.write(Data("new".utf8), for: "k")
        #expect(storage.value(for: "k") == Data("new".utf8))
        if kind == "garbage" || kind == "foreign" {
            #expect(FileManager.default.fileExists(atPath: file.path + ".corrupt"), "set aside, not deleted")
        }
    }

    /// A cache cleared while the program runs (`rm -rf ~/.cache/tool`): what is set afterwards goes
    /// to the file at the path, where the next run finds it, not to the deleted one.
    @Test(arguments: ["file deleted", "file and its WAL deleted", "folder deleted", "file replaced"])
    func writesAfterTheFileIsDeletedOrReplacedReachTheFileAtItsPath(change: String) throws {
        let folder = Folder()
        let file = folder.database
        let storage = SQLiteStorage<String>(file: file)
        try storage.write(Data("before".utf8), for: "k0")
        switch change {
        case "file deleted":
            try FileManager.default.removeItem(at: file)
        case "file and its WAL deleted":
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
        case "folder deleted":
            try FileManager.default.removeItem(at: file.deletingLastPathComponent())
        default:
            let other = folder.url.appendingPathComponent("other.sqlite")
            do {
                let theirs = SQLiteStorage<String>(file: other)
                try theirs.write(Data("theirs".utf8), for: "k9")
            }  // released: checkpointed, its WAL gone
            #expect(rename(other.path, file.path) == 0)
        }
        storage.set(Data("set".utf8), for: "k1")
        try storage.flush()
        try storage.write(Data("written".utf8), for: "k2")
        #expect(storage.value(for: "k0") == nil, "the deleted entry is not served after the database is opened again")

        let nextRun = SQLiteStorage<String>(file: file)
        #expect(nextRun.value(for: "k1") == Data("set".utf8))
        #expect(nextRun.value(for: "k2") == Data("written".utf8))
        #expect(nextRun.value(for: "k0") == nil)
        if change == "file replaced" { #expect(nextRun.value(for: "k9") == Data("theirs".utf8)) }
    }

    /// Probe of 2026-11-27 on a read-only mount: `DiskStorage` said "Permission denied … Make the
    /// folder writable", `SQLiteStorage` "SQLite failed on … (open: Read-only file system)", with
    /// nothing to do. A read-only file system is permission denied here too.
    @Test func aReadOnlyFileSystemIsPermissionDenied() {
        let error = SQLiteConnection.systemFailure(.io, "/mnt/ro/db.sqlite", "open", code: EROFS)
        #expect(error.reason == .permissionDenied)
        #expect(error.description.contains("Make it writable by this user or choose another"), "\(error)")
        #expect(SQLiteConnection.systemFailure(.io, "/x", "open", code: EIO).reason == .io)
        #expect(SQLiteConnection.systemFailure(.io, "/x", "write", code: ENOSPC).reason == .diskFull)
    }

    /// Probe of 2026-11-27: a database whose path is longer than SQLite opens (512 bytes on Unix)
    /// failed with SQLite's "unable to open database file", after its folders were made. It says
    /// why now, and makes nothing.
    @Test func aPathTooLongForSQLiteSaysSoAndMakesNothing() throws {
        let folder = Folder()
        let deep = folder.url.appendingPathComponent(String(repeating: "d", count: 200)).appendingPathComponent(String(repeating: "e", count: 200))
            .appendingPathComponent(String(repeating: "f", count: 200))
        let storage = SQLiteStorage<String>(file: deep.appendingPathComponent("cache.sqlite"))
        do {
            try storage.write(Data("x".utf8), for: "k")
            Issue.record("a path of \(deep.path.utf8.count) bytes was opened")
        } catch {
            #expect(error.description.contains("SQLite opens paths of fewer than"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent(String(repeating: "d", count: 200)).path))
        let near = SQLiteStorage<String>(file: folder.url.appendingPathComponent("ok.sqlite"))
        try near.write(Data("x".utf8), for: "k")
        #expect(near.value(for: "k") == Data("x".utf8))
    }

    @Test func threadsShareOneStorageAndTwoInstancesShareOneFile() async throws {
        let folder = Folder()
        let first = SQLiteStorage<String>(file: folder.database, countLimit: 200)
        let second = SQLiteStorage<String>(file: folder.database, countLimit: 200)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                let storage = worker % 2 == 0 ? first : second
                group.addTask {
                    for index in 0..<1_000 {
                        let key = "k\((worker * 7 + index) % 300)"
                        if index % 3 == 0 {
                            storage.set(Data("\(key)=\(worker)".utf8), for: key)
                        } else if let data = storage.value(for: key) {
                            let text = String(decoding: data, as: UTF8.self)
                            #expect(text.hasPrefix(key + "="), "\(key) read \(text)")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect((first.usage?.count ?? .max) <= 200)
    }


    // Storages made and released on several threads at once register with (and leave) the one
    // table of storages committed at exit. Its lock was a `Synchronization.Mutex`, whose futex
    // ThreadSanitizer cannot see: every such pair was reported as a race in a parallel TSan run,
    // drowning real ones. Run under `--sanitize=thread`, this fails on that lock.
    @Test func storagesMadeOnManyThreadsAtOnceRegisterForTheExitCommit() async throws {
        let folder = Folder()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for round in 0..<25 {
                        let storage = SQLiteStorage<String>(file: folder.url.appendingPathComponent("w\(worker)-\(round % 3).sqlite"))
                        storage.set(Data("\(round)".utf8), for: "k")
                        #expect(storage.value(for: "k") == Data("\(round)".utf8))
                    }
                }
            }
            try await group.waitForAll()
        }
    }
    @Test func aFullDiskIsATypedErrorAndLosesNothingStored() throws {
        // Needs root to mount a 1 MiB tmpfs; skipped (with a line saying so) elsewhere.
        let folder = Folder()
        let mountPoint = folder.url.appendingPathComponent("tmpfs")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint.path]
        mount.standardError = Pipe()
        guard getuid() == 0, (try? mount.run()) != nil, { mount.waitUntilExit(); return mount.terminationStatus == 0 }() else {
            print("skipped: mounting a 1 MiB tmpfs needs root (mount -t tmpfs)")
            return
        }
        defer {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/bin/umount")
            unmount.arguments = [mountPoint.path]
            try? unmount.run()
            unmount.waitUntilExit()
        }
        let storage = SQLiteStorage<String>(file: mountPoint.appendingPathComponent("cache/rows.sqlite"))
        try storage.write(Data("kept".utf8), for: "keep")
        do {
            try storage.write(Data(count: 3 << 20), for: "huge")
            Issue.record("3 MiB were stored on a 1 MiB file system")
        } catch {
            #expect(error.reason == .diskFull, "\(error)")
            #expect(error.description.contains("No space left"))
        }
        #expect(storage.value(for: "keep") == Data("kept".utf8))
        #expect(storage.value(for: "huge") == nil)
        try storage.write(Data("again".utf8), for: "small")  // the storage still works
        #expect(SQLiteStorage<String>(file: mountPoint.appendingPathComponent("cache/rows.sqlite")).value(for: "small") == Data("again".utf8))
    }

    // MARK: Processes

    static func worker() throws -> URL {
        var candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for directory in candidates {
            let executable = directory.appendingPathComponent("SQLiteStorageWorker")
            if FileManager.default.isExecutableFile(atPath: executable.path) { return executable }
        }
        throw WorkerNotFound(candidates: candidates.map(\.path))
    }

    struct WorkerNotFound: Error, CustomStringConvertible {
        let candidates: [String]
        var description: String { "SQLiteStorageWorker was not found next to the test binary (looked in \(candidates))" }
    }

    /// Runs the worker to its end; its output and exit status.
    static func run(_ arguments: [String]) async throws -> (output: String, status: Int32) {
        let process = Process()
        process.executableURL = try worker()
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        let ended = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { ended.continuation.yield($0.terminationStatus) }
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        var status: Int32 = -1
        for await code in ended.stream {
            status = code
            break
        }
        return (text, status)
    }

    /// Probe of 2026-11-26: a process that `set` values and then ended normally — exit(), or
    /// returning from main, where a global storage is never deinitialized — lost every value still
    /// waiting for its batched commit (300 of 300; its last 10 ms of `set`s were meant to be lost
    /// only to a kill). They are committed when the process exits.
    @Test(.timeLimit(.minutes(5)))
    func valuesSetJustBeforeANormalExitAreKept() async throws {
        let folder = Folder()
        let (_, status) = try await Self.run(["set-and-exit", folder.database.path])
        #expect(status == 0)
        let (output, _) = try await Self.run(["verify", folder.database.path])
        #expect(output == "ok 300 present\n")
    }

    @Test(.timeLimit(.minutes(5)))
    func threeProcessesShareOneDatabaseWithoutAWrongValueAndWithinTheLimits() async throws {
        let folder = Folder()
        let path = folder.database.path
        let results = try await withThrowingTaskGroup(of: (String, Int32).self) { group in
            for worker in 0..<3 {
                group.addTask { try await Self.run(["mixed", path, "\(worker)", "3000", "\(worker * 977 + 5)", "150", "40000"]) }
            }
            var results: [(String, Int32)] = []
            for try await result in group { results.append(result) }
            return results
        }
        for (output, status) in results {
            #expect(status == 0 && output.hasPrefix("ok 3000"), "\(output)")
        }
        let usage = try #require(SQLiteStorage<String>(file: folder.database).usage)
        #expect(usage.count <= 150 && usage.size <= 40_000)
    }

    @Test(.timeLimit(.minutes(5)))
    func aWriterKilledMidWriteNeverLeavesAWrongValue() async throws {
        let folder = Folder()
        let path = folder.database.path
        for round in 0..<5 {
            let process = Process()
            process.executableURL = try Self.worker()
            process.arguments = ["write-forever", path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let started = output.fileHandleForReading.availableData  // blocks until "started"
            #expect(String(decoding: started, as: UTF8.self).hasPrefix("started"), "round \(round)")
            // Killed somewhere in its stream of writes: each round a little later.
            usleep(useconds_t(2_000 + round * 7_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let (verified, status) = try await Self.run(["verify", path])
            #expect(status == 0 && verified.hasPrefix("ok"), "round \(round): \(verified)")
        }
    }
}

/// README's SQLiteStorage example, compiled and run.
struct DiffStat: Codable, Sendable, Equatable {
    var files: Int
    var added: Int
    var removed: Int
}

@Suite("SQLiteStorage README")
struct SQLiteStorageReadmeTests {
    @Test func theReadmeExampleRuns() async throws {
        let cache = Folder()
        let folder = cache.url
        let diffStats = ClosureProcessor<String, DiffStat> { hash in DiffStat(files: hash.count, added: 1, removed: 0) }
        // README sqlite storage: begin
        let stats = SQLiteStorage<String>(file: folder.appendingPathComponent("diff-stats.sqlite"), sizeLimit: 64 << 20).codable(DiffStat.self)
        let rows = Avenue<Int, String, DiffStat>(storage: MemoryStorage(), processor: diffStats.cached(in: stats))
        // README sqlite storage: end
        _ = rows
        #expect(try await diffStats.cached(in: stats).process("abc") == DiffStat(files: 3, added: 1, removed: 0))
        #expect(stats.value(for: "abc") == DiffStat(files: 3, added: 1, removed: 0))
    }
}

/// SQLiteStorage against a dictionary: seeded random sets, writes, removals, clears, flushes and
/// reopenings. Without limits every read must be the model's value exactly; with limits, a read is
/// the model's value or a miss (an eviction), never another value, and the limits hold.
@Suite("SQLiteStorage properties")
struct SQLiteStoragePropertyTests {
    /// `limit`: none, 20 entries, or 240 bytes of keys and values (about 20 entries).
    @Test(arguments: [(seed: UInt64(1), limit: "none"), (2, "none"), (3, "count"), (4, "count"), (5, "size"), (6, "size")])
    func agreesWithADictionary(seed: UInt64, limit: String) throws {
        let folder = Folder()
        let limited = limit != "none"
        let countLimit: Int? = limit == "count" ? 20 : nil
        let sizeLimit: Int? = limit == "size" ? 240 : nil
        func open() -> SQLiteStorage<String> { SQLiteStorage<String>(file: folder.database, sizeLimit: sizeLimit, countLimit: countLimit) }
        var storage = open()
        var model: [String: Data] = [:]
        var random = SplitMix64(seed: seed)
        for step in 0..<3_000 {
            let key = "k\(Int.random(in: 0 ..< 60, using: &random))"
            let value = Data("\(key)#\(step)".utf8)
            switch Int.random(in: 0 ..< 100, using: &random) {
            case 0..<30: storage.set(value, for: key); model[key] = value
            case 30..<40: try storage.write(value, for: key); model[key] = value
            case 40..<50: storage.removeValue(for: key); model[key] = nil
            case 50: storage.removeAll(); model = [:]
            case 51..<54: try storage.flush()
            case 54:  // another instance, after the flush, sees what this one does
                try storage.flush()
                let other = open()
                for (key, value) in model {
                    let read = other.value(for: key)
                    #expect(read == value || (limited && read == nil), "step \(step), seed \(seed): \(key) in another instance")
                }
            case 55:  // reopened
                try storage.flush()
                storage = open()
            default:
                let read = storage.value(for: key)
                if limited {
                    #expect(read == nil || read == model[key], "step \(step), seed \(seed): \(key)")
                    if read == nil { model[key] = nil }  // evicted: it stays out until written again
                } else {
                    #expect(read == model[key], "step \(step), seed \(seed): \(key)")
                }
            }
            if limited, step % 50 == 0, let usage = storage.usage {
                #expect(usage.count <= countLimit ?? .max && usage.size <= sizeLimit ?? .max, "step \(step), seed \(seed): \(usage)")
            }
        }
    }

    /// As DiskStorage takes them: NaN counts as 1970, infinities are kept. Before, SQLite stored NaN
    /// as NULL: a NaN `storedAt` failed as an I/O error and a NaN `expiresAt` was written, then
    /// deleted as damaged by its first read.
    @Test func datesThatAreNotNumbersCountAsTheEpochAndInfinitiesAreKept() throws {
        let folder = Folder()
        let storage = SQLiteStorage<String>(file: folder.database)
        try storage.write(Data("a".utf8), for: "stored", storedAt: Date(timeIntervalSince1970: .nan))
        try storage.write(Data("b".utf8), for: "expires", expiresAt: Date(timeIntervalSince1970: .nan))
        try storage.write(Data("c".utf8), for: "never", expiresAt: Date(timeIntervalSince1970: .infinity))
        try storage.write(Data("d".utf8), for: "always", expiresAt: Date(timeIntervalSince1970: -.infinity))
        let reopened = SQLiteStorage<String>(file: folder.database)
        #expect(try reopened.entry(for: "stored")?.storedAt == Date(timeIntervalSince1970: 0))
        #expect(reopened.lookup("stored")?.isStale == false)
        #expect(reopened.value(for: "expires") == nil)
        #expect(try reopened.entry(for: "expires", includingExpired: true)?.data == Data("b".utf8))
        #expect(reopened.lookup("never")?.isStale == false)
        #expect(reopened.lookup("always")?.isStale == true)
    }

    /// Parameters and names a hostile or careless caller might pass.
    @Test func extremeLimitsDurationsAndNames() throws {
        let folder = Folder()
        let huge = SQLiteStorage<String>(file: folder.database, sizeLimit: .max, countLimit: .max, timeToLive: .seconds(1e19))
        try huge.write(Data("x".utf8), for: "k")
        huge.set(Data("y".utf8), for: "j")
        #expect(huge.value(for: "k") == Data("x".utf8) && huge.value(for: "j") == Data("y".utf8))
        #expect(try huge.entry(for: "k")?.expiresAt != nil)
        let forever = SQLiteStorage<String>(file: folder.database, timeToLive: .seconds(Int64.max))
        #expect(forever.lookup("k")?.isStale == false)
        for name in ["", "/etc/passwd", "a/../b", "a/./b", "a//b", "nul\0name"] {
            do {
                _ = try SQLiteStorage<String>(name: name)
                Issue.record("the name \(name.debugDescription) was accepted")
            } catch {
                #expect(error.reason == .invalidName, "\(name.debugDescription)")
            }
        }
        // A key of 1 MiB with escape sequences, and a value of every byte.
        let key = String(repeating: "\u{1B}[2J\u{7}ü", count: 200_000)
        let value = Data((0...255).map { UInt8($0) })
        try huge.write(value, for: key)
        #expect(huge.value(for: key) == value)
    }
}
