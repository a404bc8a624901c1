import DiskStorageCrashWriter
import Foundation
import Testing
@testable import Avenues

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif

/// A child process writes 10,000 entries and is killed with SIGKILL part-way; every key must then be
/// absent or byte-for-byte right, every write the child finished must be there, and the storage must
/// keep working.
@Suite("DiskStorage crash safety", .timeLimit(.minutes(5)))
struct DiskStorageCrashTests {
    static let entries = 10_000

    /// The crash writer is built next to the test binary.
    static func writerExecutable() throws -> URL {
        let name = "DiskStorageCrashWriter"
        var candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        candidates.append(Bundle.main.bundleURL)
        for directory in candidates {
            let executable = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: executable.path) { return executable }
        }
        throw TestError("\(name) was not found next to the test binary (looked in \(candidates.map(\.path)))")
    }

    /// Runs the writer until it has reported `killAfter` finished writes, then kills it with SIGKILL.
    /// Returns the indices it reported as written.
    static func runWriterAndKill(folder: String, killAfter: Int) throws -> Int {
        let process = Process()
        process.executableURL = try writerExecutable()
        process.arguments = [folder, String(entries)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var reported = -1
        var pending = ""
        let reader = output.fileHandleForReading
        while reported + 1 < killAfter {
            let chunk = reader.availableData
            if chunk.isEmpty { break }  // the writer ended on its own
            pending += String(decoding: chunk, as: UTF8.self)
            while let newline = pending.firstIndex(of: "\n") {
                if let index = Int(pending[..<newline]) { reported = max(reported, index) }
                pending.removeSubrange(...newline)
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // Lines written before the kill but not read yet were finished writes too.
        let rest = String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        for line in (pending + rest).split(separator: "\n") {
            if let index = Int(line) { reported = max(reported, index) }
        }
        return reported
    }

    @Test func aWriterKilledPartWayLeavesEveryKeyAbsentOrExact() async throws {
        let folder = TemporaryFolder()
        let directory = folder.child("cache")
        var sawPartialRun = false
        for killAfter in [600, 2_500, 5_000] {
            let path = directory.path
            let lastFinished = try await onOwnThread { try Self.runWriterAndKill(folder: path, killAfter: killAfter) }
            #expect(lastFinished >= killAfter - 1)

            let storage = DiskStorage<String>(directory: directory)
            var present = 0
            var wrong: [Int] = []
            var missingFinished: [Int] = []
            for index in 0..<Self.entries {
                guard let data = storage.value(for: CrashPayload.key(index)) else {
                    if index <= lastFinished { missingFinished.append(index) }
                    continue
                }
                present += 1
                if data != CrashPayload.bytes(index) { wrong.append(index) }
            }
            #expect(wrong.isEmpty, "keys with wrong bytes: \(wrong.prefix(10))")
            #expect(missingFinished.isEmpty, "finished writes that are missing: \(missingFinished.prefix(10))")
            if present < Self.entries { sawPartialRun = true }

            // Still a working storage: writes, reads, and its index agrees with the folder.
            try storage.write(Data("after the crash".utf8), for: "after")
            #expect(storage.value(for: "after") == Data("after the crash".utf8))
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(files.filter(DiskStorage<String>.isEntryName).count == storage.usage.count)
            // The write the kill interrupted left a temporary file; its writer is dead, so it is gone.
            #expect(files.filter(CacheFolder.isTemporaryName).isEmpty)
        }
        #expect(sawPartialRun, "every kill came after the writer had finished; the test proved nothing")
    }

    @Test func threeProcessesSharingOneFolderKeepItsSizeLimit() async throws {
        let folder = TemporaryFolder()
        let directory = folder.child("shared").path
        let limit = 60_000, writers = 3, largestEntry = DiskEntryFormat.headerSize + 7 + 4_096
        let processes = try (0..<writers).map { index in
            let process = Process()
            process.executableURL = try Self.writerExecutable()
            process.arguments = ["share", directory, "400", String(limit), String(0x5EED + index)]
            process.standardOutput = Pipe()
            try process.run()
            return process
        }
        var peaks: [Int] = []
        for process in processes {
            let pipe = process.standardOutput as? Pipe
            let (output, status) = await onOwnThread { () -> (Data, Int32) in
                let output = pipe?.fileHandleForReading.readDataToEndOfFile() ?? Data()
                process.waitUntilExit()
                return (output, process.terminationStatus)
            }
            #expect(status == 0)
            let line = String(decoding: output, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("peak ") }
            peaks.append(line.flatMap { Int($0.dropFirst(5)) } ?? .max)
        }
        // With every writer done, the folder holds at most the limit. While they write, an entry
        // renamed into place by one process is over the limit until that process's sweep, which
        // happens under the same lock: at most one entry per writer beyond it.
        let final = CrashPayload.entryBytes(in: directory)
        #expect(final <= limit, "\(final) bytes left with a limit of \(limit)")
        #expect(final > limit / 2, "the writers stored far less than the limit allows")
        #expect(peaks.allSatisfy { $0 <= limit + writers * largestEntry }, "peaks \(peaks) with a limit of \(limit)")
        let storage = DiskStorage<String>(directory: folder.child("shared"), sizeLimit: limit)
        #expect(storage.usage.size == final)
    }
}
