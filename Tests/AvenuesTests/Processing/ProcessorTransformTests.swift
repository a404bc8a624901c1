import Dispatch
import Foundation
import Testing
@testable import Avenues

/// A storage whose reads wait until the test opens its gate.
final class GatedStorage<Base: Storage>: Storage {
    let base: Base
    let gate = DispatchSemaphore(value: 0)

    init(_ base: Base) { self.base = base }

    func value(for key: Base.Key) -> Base.Value? {
        gate.wait()
        defer { gate.signal() }
        return base.value(for: key)
    }

    func set(_ value: Base.Value, for key: Base.Key) { base.set(value, for: key) }
    func removeValue(for key: Base.Key) { base.removeValue(for: key) }
    func removeAll() { base.removeAll() }
}

/// A storage that counts how often it is read and written.
final class CountingStorage<Base: Storage>: Storage {
    let base: Base
    private let counts = Shared((reads: 0, writes: 0))

    init(_ base: Base) { self.base = base }

    var reads: Int { counts.value.reads }
    var writes: Int { counts.value.writes }

    func value(for key: Base.Key) -> Base.Value? {
        counts.withLock { $0.reads += 1 }
        return base.value(for: key)
    }

    func set(_ value: Base.Value, for key: Base.Key) {
        counts.withLock { $0.writes += 1 }
        base.set(value, for: key)
    }

    func removeValue(for key: Base.Key) { base.removeValue(for: key) }
    func removeAll() { base.removeAll() }
}

@Suite("Processor transforms and cached(in:)", .timeLimit(.minutes(5)))
struct ProcessorTransformTests {
    @Test func mapKeysAsksTheBaseWithTheTransformedKey() async throws {
        let square = ClosureProcessor { (number: Int) in number * number }
        let byText = square.mapKeys { (text: String) in text.count }
        #expect(try await byText.process("four") == 16)
    }

    @Test func mapValuesAndAsyncMapValuesTransformResultsAndPassErrorsOn() async throws {
        let length = ClosureProcessor { (text: String) in text.count }
        #expect(try await length.mapValues { $0 * 10 }.process("abc") == 30)
        let describe = length.asyncMapValues { count async in
            await Task.yield()
            return "\(count) characters"
        }
        #expect(try await describe.process("hello") == "5 characters")
        let refusing = length.mapValues { (count: Int) throws -> Int in
            if count > 3 { throw TestError("too long") }
            return count
        }
        await #expect(throws: TestError("too long")) { try await refusing.process("too long") }
    }

    @Test func cachedInReadsTheStorageFirstAndWritesResultsBack() async throws {
        let work = ControlledWork<String, Int>()
        let storage = MemoryStorage<String, Int>()
        storage.set(1, for: "stored")
        let cached = work.cached(in: storage)
        #expect(try await cached.process("stored") == 1)
        #expect(work.totalStarts == 0)

        async let fresh = cached.process("fresh")
        await work.waitUntilStarted("fresh")
        work.succeed("fresh", with: 2)
        #expect(try await fresh == 2)
        #expect(storage.value(for: "fresh") == 2)
    }

    @Test func underAnAutoProcessorConcurrentRequestsShareOneStorageReadAndOneRun() async throws {
        let work = ControlledWork<String, Int>()
        let disk = CountingStorage(MemoryStorage<String, Int>())
        let processor = AutoProcessor(work.cached(in: disk))
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 { group.addTask { try await processor.value(for: "k") } }
            await work.waitUntilStarted("k")
            await eventually("all 20 joined") { processor.tableSizes.waiters == 20 }
            work.succeed("k", with: 9)
            for try await value in group { #expect(value == 9) }
        }
        #expect(disk.reads == 1)
        #expect(disk.writes == 1)
        #expect(work.starts(of: "k") == 1)
    }

    // MARK: The talk's stack, on a real disk

    struct Summary: Codable, Sendable, Equatable {
        var lines: Int
        var firstLine: String
    }

    static func summarize(_ path: String) throws -> Summary {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return Summary(lines: text.split(separator: "\n").count, firstLine: String(text.prefix { $0 != "\n" }))
    }

    @Test func memoryLayeredOverDiskAsTheAvenuesStorageSurvivesARestart() async throws {
        let folder = TemporaryFolder()
        let file = folder.url.appendingPathComponent("notes.txt")
        try "first\nsecond\nthird\n".write(to: file, atomically: true, encoding: .utf8)
        let runs = Shared(0)
        let work = ClosureProcessor { (path: String) in
            runs.withLock { $0 += 1 }
            return try Self.summarize(path)
        }

        func makeAvenue() -> (Avenue<Int, String, Summary>, EventLog<Int>) {
            let disk = DiskStorage<String>(directory: folder.child("cache")).codable(Summary.self)
            let avenue = Avenue<Int, String, Summary>(storage: MemoryStorage().layered(over: disk), processor: work)
            let told = EventLog<Int>()
            avenue.onStateChange = { told.append($0) }
            return (avenue, told)
        }

        let (first, told) = makeAvenue()
        first.prepareItem(for: file.path, at: 0)
        await told.wait(for: 0)
        #expect(first.item(at: 0) == Summary(lines: 3, firstLine: "first"))

        // A new process: empty memory, same disk. The row is loaded by prepareItem itself.
        let (restarted, _) = makeAvenue()
        restarted.prepareItem(for: file.path, at: 0)
        #expect(restarted.item(at: 0) == Summary(lines: 3, firstLine: "first"))
        #expect(runs.value == 1)
    }

    @Test func workCachedInDiskAsTheProcessorReadsTheDiskOffTheCallersThreadAndSurvivesARestart() async throws {
        let folder = TemporaryFolder()
        let file = folder.url.appendingPathComponent("notes.txt")
        try "alpha\nbeta\n".write(to: file, atomically: true, encoding: .utf8)
        let runs = Shared(0)
        let work = ClosureProcessor { (path: String) in
            runs.withLock { $0 += 1 }
            return try Self.summarize(path)
        }

        func makeAvenue(_ disk: some Storage<String, Summary>) -> (Avenue<Int, String, Summary>, EventLog<Int>) {
            let avenue = Avenue<Int, String, Summary>(storage: MemoryStorage(), processor: work.cached(in: disk))
            let told = EventLog<Int>()
            avenue.onStateChange = { told.append($0) }
            return (avenue, told)
        }

        let (first, told) = makeAvenue(DiskStorage<String>(directory: folder.child("cache")).codable(Summary.self))
        first.prepareItem(for: file.path, at: 0)
        await told.wait(for: 0)
        #expect(first.item(at: 0) == Summary(lines: 2, firstLine: "alpha"))

        // A new process: empty memory, same disk, whose reads block until the gate opens. If
        // prepareItem read the disk on the caller's thread, it would never return.
        let disk = CountingStorage(GatedStorage(DiskStorage<String>(directory: folder.child("cache")).codable(Summary.self)))
        let (restarted, toldAgain) = makeAvenue(disk)
        restarted.prepareItem(for: file.path, at: 0)
        #expect(restarted.state(at: 0).isLoading)
        disk.base.gate.signal()
        await toldAgain.wait(for: 0)
        #expect(restarted.item(at: 0) == Summary(lines: 2, firstLine: "alpha"))
        #expect(disk.reads == 1)
        #expect(runs.value == 1)
    }
}
