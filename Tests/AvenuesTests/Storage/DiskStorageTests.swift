import Foundation
import Testing
@testable import Avenues
import AvenuesTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif

@Suite("DiskStorage", .timeLimit(.minutes(5)))
struct DiskStorageTests {
    func bytes(_ text: String) -> Data { Data(text.utf8) }

    func entryFile(_ storage: DiskStorage<String>, _ key: String) -> String {
        storage.directory.path + "/" + storage.fileName(for: key)
    }

    func mode(of path: String) -> mode_t {
        var info = stat()
        _ = lstat(path, &info)
        return info.st_mode & 0o777
    }

    // MARK: Basics

    @Test func writesReadsReplacesAndRemoves() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"))
        #expect(storage.value(for: "a") == nil)
        storage.set(bytes("one"), for: "a")
        #expect(storage.value(for: "a") == bytes("one"))
        try storage.write(bytes("two"), for: "a")
        #expect(storage.value(for: "a") == bytes("two"))
        storage.set(Data(), for: "empty")
        #expect(storage.value(for: "empty") == Data())
        storage.removeValue(for: "a")
        #expect(storage.value(for: "a") == nil)
        #expect(storage.usage.count == 1)
    }

    @Test func fileNamesAreAStableHashOfTheKey() {
        let storage = DiskStorage<String>(directory: URL(fileURLWithPath: "/nonexistent"))
        // FNV-1a 64 of "hello" is a430d84680aabd0b on every run and platform.
        #expect(storage.fileName(for: "hello") == "a430d84680aabd0b.entry")
        #expect(storage.fileName(for: "") == "cbf29ce484222325.entry")
    }

    @Test func theChecksumIsStableAndIndependentOfHowTheBytesAreSplit() {
        let data = Array((0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let whole = data.withUnsafeBytes { StableHash.checksum([$0]) }
        for split in [0, 1, 7, 8, 9, 500, 999, 1_000] {
            let parts = data.withUnsafeBytes { all in
                StableHash.checksum([UnsafeRawBufferPointer(rebasing: all[..<split]), UnsafeRawBufferPointer(rebasing: all[split...])])
            }
            #expect(parts == whole, "split at \(split)")
        }
        #expect(Array("abc".utf8).withUnsafeBytes { StableHash.checksum([$0]) } != Array("abd".utf8).withUnsafeBytes { StableHash.checksum([$0]) })
    }

    @Test func theFolderIs0700AndEntriesAre0600() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("nested/cache"))
        try storage.write(bytes("x"), for: "k")
        #expect(mode(of: storage.directory.path) == 0o700)
        #expect(mode(of: entryFile(storage, "k")) == 0o600)
    }

    // MARK: Hostile keys

    @Test func hostileKeysNeverTouchAnythingOutsideTheFolder() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"))
        let keys = [
            "a/b", "../../x", "..", ".", "/etc/passwd", "nul\0inside", "🦊🚀 ünïcödé", "",
            String(repeating: "long key ", count: 1_200), "back\\slash", "new\nline",
        ]
        for (index, key) in keys.enumerated() {
            try storage.write(bytes("value \(index)"), for: key)
        }
        for (index, key) in keys.enumerated() {
            #expect(storage.value(for: key) == bytes("value \(index)"), "key \(key.prefix(20).debugDescription)")
        }
        // Everything written is one flat folder of hash-named entries.
        let files = folder.allFiles().filter { $0 != "cache/" + CacheFolder.lockName }
        #expect(files.first == "cache")
        let entries = files.dropFirst()
        #expect(entries.count == keys.count)
        #expect(entries.allSatisfy { $0.hasPrefix("cache/") && DiskStorage<String>.isEntryName(String($0.dropFirst(6))) })
    }

    @Test func aKeyWhoseFileNameCollidesReadsAsAMissNotAsTheOtherKeysValue() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"))
        try storage.write(bytes("value of a"), for: "a")
        // Make "b"'s file hold "a"'s entry, as a hash collision would.
        try FileManager.default.copyItem(atPath: entryFile(storage, "a"), toPath: entryFile(storage, "b"))
        #expect(storage.value(for: "b") == nil)
        // Sound entries of another key are left alone; "a" itself is intact.
        #expect(FileManager.default.fileExists(atPath: entryFile(storage, "b")))
        #expect(storage.value(for: "a") == bytes("value of a"))
        try storage.write(bytes("value of b"), for: "b")
        #expect(storage.value(for: "b") == bytes("value of b"))
    }

    // MARK: Damaged files

    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case truncated, flippedPayloadByte, flippedKeyByte, zeroFilled, foreign, empty, headerOnly, lengthTooLong
        var testDescription: String { rawValue }

        func apply(to path: String) throws {
            var data = try Data(contentsOf: URL(fileURLWithPath: path))
            switch self {
            case .truncated: data = data.prefix(data.count - 10)
            case .flippedPayloadByte: data[data.count - 1] ^= 0x40
            case .flippedKeyByte: data[DiskEntryFormat.headerSize] ^= 0x01
            case .zeroFilled: data = Data(count: data.count)
            case .foreign: data = Data("I am a text file someone put here\n".utf8)
            case .empty: data = Data()
            case .headerOnly: data = data.prefix(DiskEntryFormat.headerSize)
            case .lengthTooLong: data[16] &+= 1
            }
            try data.write(to: URL(fileURLWithPath: path))
        }
    }

    @Test(arguments: Damage.allCases)
    func aDamagedEntryIsAMissAndIsRemoved(damage: Damage) throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"))
        try storage.write(Data(repeating: 7, count: 4_096), for: "k")
        try damage.apply(to: entryFile(storage, "k"))
        #expect(storage.value(for: "k") == nil)
        #expect(!FileManager.default.fileExists(atPath: entryFile(storage, "k")))
        #expect(storage.usage.count == 0)
        try storage.write(bytes("fine again"), for: "k")
        #expect(storage.value(for: "k") == bytes("fine again"))
    }

    @Test func filesThatAreNotEntriesAreNeverTouched() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"), countLimit: 2)
        try storage.write(bytes("x"), for: "first")
        let notes = storage.directory.appendingPathComponent("notes.txt")
        try bytes("mine").write(to: notes)
        for index in 0..<10 { try storage.write(bytes("\(index)"), for: "k\(index)") }
        storage.removeAll()
        #expect(try Data(contentsOf: notes) == bytes("mine"))
        #expect(folder.allFiles() == ["cache", "cache/" + CacheFolder.lockName, "cache/notes.txt"])
    }

    // MARK: Symlinks

    @Test func aSymlinkPlantedInTheFolderIsNeverFollowed() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"))
        try storage.write(bytes("seed"), for: "other")  // creates the folder
        let target = folder.url.appendingPathComponent("precious.txt")
        try bytes("do not touch").write(to: target)
        try FileManager.default.createSymbolicLink(atPath: entryFile(storage, "k"), withDestinationPath: target.path)

        #expect(storage.value(for: "k") == nil)  // not followed for reads; the link is removed
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: entryFile(storage, "k"))) == nil)

        try FileManager.default.createSymbolicLink(atPath: entryFile(storage, "k"), withDestinationPath: target.path)
        try storage.write(bytes("new value"), for: "k")  // replaces the link, never writes through it
        #expect(try Data(contentsOf: target) == bytes("do not touch"))
        #expect(storage.value(for: "k") == bytes("new value"))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: entryFile(storage, "k"))) == nil)
    }

    // MARK: Errors

    @Test func aFolderThatCannotBeCreatedIsATypedErrorAndTheStorageStaysUsable() throws {
        let folder = TemporaryFolder()
        let blocker = folder.url.appendingPathComponent("a-file")
        try bytes("in the way").write(to: blocker)
        let storage = DiskStorage<String>(directory: blocker.appendingPathComponent("cache"))
        #expect(throws: DiskStorageError.self) { try storage.write(bytes("x"), for: "k") }
        do {
            try storage.write(bytes("x"), for: "k")
        } catch {
            #expect(error.reason == .folderUnavailable)
            #expect(error.description.contains("Choose a folder you can write to"))
        }
        storage.set(bytes("x"), for: "k")  // no crash: a later miss
        #expect(storage.value(for: "k") == nil)
        #expect(storage.usage.count == 0)
    }

    @Test func errnoValuesMapToReasonsThatSayWhatToDo() {
        let diskFull = DiskStorageError(FileSystem.Failure(call: "writev", path: "/c/x", code: ENOSPC))
        #expect(diskFull.reason == .diskFull)
        #expect(diskFull.description.contains("Free some space"))
        #expect(DiskStorageError(FileSystem.Failure(call: "open", path: "/c/x", code: EACCES)).reason == .permissionDenied)
        #expect(DiskStorageError(FileSystem.Failure(call: "open", path: "/c/x", code: EROFS)).reason == .permissionDenied)
        #expect(DiskStorageError(FileSystem.Failure(call: "mkdir", path: "/c", code: ENOTDIR), folderMissing: true).reason == .folderUnavailable)
        #expect(DiskStorageError(FileSystem.Failure(call: "readv", path: "/c/x", code: EIO)).reason == .io)
    }

    @Test func invalidCacheNamesAreRejected() {
        for name in ["", "/abs", "../up", "a/../b", "a//b", "./x"] {
            #expect(throws: DiskStorageError(.invalidName, path: name), "\(name)") {
                try DiskStorage<String>(name: name)
            }
        }
    }

    @Test func theDefaultFolderIsThePlatformCacheFolder() throws {
        let storage = try DiskStorage<String>(name: "avenues-tests/never-written")
        #if os(Linux)
        let environment = ProcessInfo.processInfo.environment
        let root = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? "") + "/.cache"
        #expect(storage.directory.path == URL(fileURLWithPath: root).appendingPathComponent("avenues-tests/never-written").standardizedFileURL.path)
        #endif
        #expect(storage.directory.path.hasSuffix("avenues-tests/never-written"))
    }

    // MARK: Limits, reopening, expiry

    /// A value replaced by one of the same size leaves the folder's totals as they were. They must
    /// still be written back, clearing the "uncertain" mark set before the rename; otherwise every
    /// later write lists and `lstat`s the whole folder (2,500 `lstat`s a write in a 5,000-entry
    /// folder; the crash test spent 30 s on it).
    @Test func aSameSizeReplacementLeavesTheTotalsCertain() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"), countLimit: 100)
        try storage.write(bytes("one"), for: "a")
        try storage.write(bytes("two"), for: "a")
        let lock = try Data(contentsOf: folder.child("cache").appendingPathComponent(CacheFolder.lockName))
        #expect(lock.count == 40)
        // Bytes 12..<16: the flags word; bit 0 marks the totals uncertain.
        #expect(lock.count >= 16 && lock[12..<16].allSatisfy { $0 == 0 }, "the totals are still marked uncertain: \(Array(lock))")
        #expect(storage.usage.count == 1)
    }

    /// A folder without limits keeps no totals while it is written (each move into place is one
    /// `rename(2)`); it marks them uncertain, so a storage with limits on the same folder (another
    /// process: each instance has its own lock-file descriptor) counts what is really there.
    @Test func withoutLimitsTheTotalsAreMarkedUncertainAndALimitedStorageCountsTheFolder() throws {
        let folder = TemporaryFolder()
        let unlimited = DiskStorage<String>(directory: folder.child("cache"))
        for index in 0..<6 { try unlimited.write(bytes("value \(index)"), for: "u\(index)") }
        let lock = try Data(contentsOf: folder.child("cache").appendingPathComponent(CacheFolder.lockName))
        #expect(lock.count == 40 && lock[12] & 1 == 1, "the totals are not marked uncertain: \(Array(lock))")
        let limited = DiskStorage<String>(directory: folder.child("cache"), countLimit: 10)
        #expect(limited.usage.count == 6)
        for index in 0..<5 { try limited.write(bytes("value \(index)"), for: "l\(index)") }
        // 11 > 10: down to 8, counting the unlimited storage's entries.
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.child("cache").path).filter(DiskStorage<String>.isEntryName)
        #expect(files.count == 8)
        #expect(limited.usage.count == 8)
        try unlimited.write(bytes("more"), for: "u-more")
        #expect(limited.usage.count == 9)
        #expect(unlimited.usage.count == 9)
    }

    /// Writers without limits and one with limits on one folder at once: whatever interleaving, the
    /// totals the limited one keeps match the entries on disk once they are done. A writer without
    /// limits holds the lock file shared while it moves an entry into place, so the limited one can
    /// never count the folder in between and clear the mark.
    @Test func writersWithAndWithoutLimitsAtOnceLeaveTotalsThatMatchTheFolder() async throws {
        let folder = TemporaryFolder()
        let unlimited = DiskStorage<String>(directory: folder.child("cache"))
        let limited = DiskStorage<String>(directory: folder.child("cache"), countLimit: 10_000)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for index in 0..<150 { try? unlimited.write(Data("u".utf8), for: "u\(writer)-\(index)") }
                }
            }
            group.addTask {
                for index in 0..<150 {
                    try? limited.write(Data("l".utf8), for: "l\(index)")
                    if index % 10 == 0 { try? limited.write(Data("l".utf8), for: "l\(index)") }  // a replacement
                }
            }
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.child("cache").path).filter(DiskStorage<String>.isEntryName)
        #expect(files.count == 750)
        #expect(limited.usage.count == 750)
        #expect(unlimited.usage.count == 750)
    }

    @Test func aCountLimitSweepsTheLeastRecentlyUsedDownToEightyPercent() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"), countLimit: 10)
        for index in 0..<10 { try storage.write(bytes("\(index)"), for: "k\(index)") }
        _ = storage.value(for: "k0")  // used: now the most recent
        _ = storage.value(for: "k1")
        try storage.write(bytes("10"), for: "k10")  // 11 > 10: down to 8
        let kept = (0...10).filter { storage.value(for: "k\($0)") != nil }
        #expect(kept == [0, 1, 5, 6, 7, 8, 9, 10])
        #expect(storage.usage.count == 8)
    }

    @Test func aSizeLimitCountsEntryFiles() throws {
        let folder = TemporaryFolder()
        let entrySize = DiskEntryFormat.headerSize + 2 + 1_000  // header + "kN" + payload
        let storage = DiskStorage<String>(directory: folder.child("cache"), sizeLimit: entrySize * 5)
        for index in 0..<5 { try storage.write(Data(count: 1_000), for: "k\(index)") }
        #expect(storage.usage.size == entrySize * 5)
        try storage.write(Data(count: 1_000), for: "k5")
        // Down to 80 % of the limit: 4 entries fit.
        #expect(storage.usage.count == 4)
        #expect((0...5).filter { storage.value(for: "k\($0)") != nil } == [2, 3, 4, 5])
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: storage.directory.path)
        #expect(onDisk.filter(DiskStorage<String>.isEntryName).count == 4)
    }

    @Test func aReopenedStorageRebuildsItsIndexOldestFirst() throws {
        let folder = TemporaryFolder()
        let first = DiskStorage<String>(directory: folder.child("cache"))
        for index in 0..<6 { try first.write(bytes("\(index)"), for: "k\(index)") }
        // Modification times decide the order after a restart; set them apart explicitly.
        for index in 0..<6 {
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSince1970: 1_000_000 + Double(index == 2 ? 100 : index))],
                ofItemAtPath: entryFile(first, "k\(index)"))
        }
        let reopened = DiskStorage<String>(directory: folder.child("cache"), countLimit: 5)
        #expect(reopened.usage.count == 4)  // 6 > 5 on open: swept to 80 %
        let kept = (0..<6).filter { reopened.value(for: "k\($0)") != nil }
        #expect(kept == [2, 3, 4, 5])
    }

    @Test func entriesExpireAfterTheTimeToLiveOnAClockTheTestControls() throws {
        let folder = TemporaryFolder()
        let clock = Shared(Date(timeIntervalSince1970: 1_700_000_000))
        let storage = DiskStorage<String>(directory: folder.child("cache"), timeToLive: .seconds(60), now: { clock.value })
        try storage.write(bytes("fresh"), for: "k")
        try storage.write(bytes("forever"), for: "pinned", expiresAt: .distantFuture)
        let entry = try #require(try storage.entry(for: "k"))
        #expect(entry.storedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(entry.expiresAt == Date(timeIntervalSince1970: 1_700_000_060))
        clock.withLock { $0 += 59 }
        #expect(storage.value(for: "k") == bytes("fresh"))
        clock.withLock { $0 += 1 }
        #expect(storage.value(for: "k") == nil)
        // Kept on disk as a stale copy (an avenue shows it while loading a fresh one).
        #expect(FileManager.default.fileExists(atPath: entryFile(storage, "k")))
        #expect(storage.lookup("k")?.isStale == true && storage.lookup("k")?.value == bytes("fresh"))
        #expect(storage.value(for: "pinned") == bytes("forever"))
        #expect(storage.lookup("pinned")?.isStale == false)
    }

    @Test func aDeletedFolderIsCreatedAgainOnTheNextWrite() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"))
        try storage.write(bytes("1"), for: "a")
        try FileManager.default.removeItem(at: storage.directory)
        try storage.write(bytes("2"), for: "b")
        #expect(storage.value(for: "b") == bytes("2"))
        #expect(storage.value(for: "a") == nil)
    }

    @Test func removeAllEmptiesTheStorage() throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"))
        for index in 0..<20 { try storage.write(bytes("\(index)"), for: "k\(index)") }
        storage.removeAll()
        #expect(storage.usage.count == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: storage.directory.path) == [CacheFolder.lockName])
        #expect(storage.value(for: "k3") == nil)
    }

    // MARK: Other key types and Codable

    @Test func urlAndIntegerKeysUseTheirStableStringForms() throws {
        let folder = TemporaryFolder()
        let byURL = DiskStorage<URL>(directory: folder.child("urls"))
        let url = try #require(URL(string: "https://example.com/a/b?c=d#e"))
        byURL.set(bytes("page"), for: url)
        #expect(byURL.value(for: url) == bytes("page"))
        #expect(byURL.fileName(for: url) == DiskStorage<String>(directory: folder.url).fileName(for: url.absoluteString))
        let byNumber = DiskStorage<Int>(directory: folder.child("ints"))
        byNumber.set(bytes("42"), for: 42)
        #expect(byNumber.value(for: 42) == bytes("42"))
    }

    struct Profile: Codable, Sendable, Equatable {
        var name: String
        var followers: Int
    }

    @Test func codableValuesRoundTripAsJSONAndUndecodableBytesAreMisses() throws {
        let folder = TemporaryFolder()
        let disk = DiskStorage<String>(directory: folder.child("cache"))
        let profiles = disk.codable(Profile.self)
        profiles.set(Profile(name: "Ada", followers: 3), for: "ada")
        #expect(profiles.value(for: "ada") == Profile(name: "Ada", followers: 3))
        #expect(String(decoding: try #require(disk.value(for: "ada")), as: UTF8.self).contains("\"Ada\""))
        disk.set(bytes("not json"), for: "broken")
        #expect(profiles.value(for: "broken") == nil)
    }

    // MARK: Laws with a disk layer

    @Test func layeringWithADiskLayerIsAssociativeAndEmptyStorageIsItsIdentity() throws {
        let operations = StorageCompositionTests.operations(seed: 11, count: 600)
        func stack() -> (MemoryStorage<Int, Int>, ValueMappedStorage<DiskStorage<Int>, Int>, MemoryStorage<Int, Int>, TemporaryFolder) {
            let folder = TemporaryFolder()
            let disk = DiskStorage<Int>(directory: folder.child("cache"))
                .compactMapValues({ Int(String(decoding: $0, as: UTF8.self)) }, { Data(String($0).utf8) })
            return (MemoryStorage(countLimit: 4), disk, MemoryStorage(), folder)
        }
        let (a1, b1, c1, folder1) = stack()
        let (a2, b2, c2, folder2) = stack()
        let left = StorageCompositionTests.run(operations, on: a1.layered(over: b1).layered(over: c1))
        let right = StorageCompositionTests.run(operations, on: a2.layered(over: b2.layered(over: c2)))
        #expect(left == right)
        #expect(a1.keys == a2.keys)
        #expect((0..<24).map { b1.value(for: $0) } == (0..<24).map { b2.value(for: $0) })

        let (_, plainDisk, _, folder3) = stack()
        let (_, wrappedDisk, _, folder4) = stack()
        let plain = StorageCompositionTests.run(operations, on: plainDisk)
        #expect(StorageCompositionTests.run(operations, on: EmptyStorage<Int, Int>().layered(over: wrappedDisk.layered(over: EmptyStorage()))) == plain)
        _ = (folder1, folder2, folder3, folder4)
    }

    // MARK: Concurrency

    @Test func eightTasksWritingAndReadingOverlappingKeysOnlyEverSeeWholeValues() async throws {
        let folder = TemporaryFolder()
        let storage = DiskStorage<String>(directory: folder.child("cache"), countLimit: 40)
        // Every version of a key is self-describing, so a reader can check a value is whole.
        func value(key: Int, version: Int) -> Data {
            Data(repeating: UInt8(truncatingIfNeeded: key &* 7 &+ version), count: 512 + (key % 5) * 700)
        }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var rng = SplitMix64(seed: UInt64(task) + 100)
                    for step in 0..<600 {
                        let key = Int(rng.next() % 60)
                        switch rng.next() % 10 {
                        case 0..<4: storage.set(value(key: key, version: step), for: "k\(key)")
                        case 4: storage.removeValue(for: "k\(key)")
                        default:
                            if let read = storage.value(for: "k\(key)") {
                                let first = read.first ?? 0
                                #expect(read.count == 512 + (key % 5) * 700 && read.allSatisfy { $0 == first }, "torn value for k\(key)")
                            }
                        }
                    }
                }
            }
        }
        let usage = storage.usage
        #expect(usage.count <= 40)
        let files = try FileManager.default.contentsOfDirectory(atPath: storage.directory.path)
        #expect(files.filter(CacheFolder.isTemporaryName).isEmpty)
        #expect(files.filter(DiskStorage<String>.isEntryName).count == usage.count)
    }
}
