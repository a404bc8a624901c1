import Foundation
import Testing
import Avenues
import AvenuesAsyncMuxCompat

/// Every name a rename replaced (CONTRIBUTING.md, "One dialect") still works, with
/// `import AvenuesAsyncMuxCompat`, and does what its replacement does. Each call below warns that it is deprecated: that is expected here.
@Suite("Seed names", .serialized, .timeLimit(.minutes(1)))
struct SeedNamesTests {
    @Test func autoProcessorAndAvenueKeyLabels() async throws {
        let processor = AutoProcessor<String, Int> { $0.count }
        #expect(processor.state(of: "k") == .none)
        #expect(ProcessingState.none == .idle)
        processor.cancel("k")
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: processor)
        let changes = avenue.changes
        avenue.prepareItem(for: "abc", at: 0)
        for await _ in changes where avenue.item(at: 0) != nil { break }
        #expect(avenue.item(at: 0) == 3)

        let slow = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: ClosureProcessor { _ in
            try await Task.sleep(for: .seconds(3_600))   // cancelled below
            return 0
        })
        slow.prepareItem(for: "abc", at: 0)
        slow.cancelProcessing(of: "abc")
        #expect(slow.tableSizes.isIdle)
    }

    @Test func multiplexerNames() async throws {
        let single = Multiplexer<Int> { 7 }
        #expect(try await single.request() == 7)
        single.store(8)
        #expect(try await single.request() == 8)

        let map = MultiplexerMap<String, Int>(memoryLimit: 2) { $0.count }
        #expect(try await map.request(key: "abc") == 3)
        map.store(9, for: "abc")
        #expect(try await map.request(key: "abc") == 9)
        map.refresh(key: "abc")
        #expect(try await map.request(key: "abc") == 3)
        map.clear(key: "abc")
        #expect(map.cachedValue(for: "abc") == nil)

        let many = MultiRequester(map: map) { keys in Dictionary(uniqueKeysWithValues: keys.map { ($0, $0.count * 10) }) }
        let outcome = await many.request(keys: ["a", "bb"])
        #expect(outcome.values == ["a": 10, "bb": 20])

        #expect(MuxRepository.shared.saveAll().isEmpty)
        MuxRepository.shared.clearMemory()
    }

    @Test func asyncMediaNames() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("seed-names-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("local.txt")
        try Data("hi".utf8).write(to: file)
        let media = AsyncMedia(directory: folder.appendingPathComponent("cache"))
        #expect(try await media.request(url: file) == file)   // file: URLs come back as they are
        #expect(media.cachedValue(url: file) == file)
        for await step in media.progress(url: file) { #expect(step.isComplete) }
        #expect(AsyncMedia.cachedValue(url: file) == file)
    }

    @Test func pagedRowsChanges() async {
        let rows = PagedRows(source: Numbers())
        let changes = rows.changes
        rows.show(0..<10)
        for await change in changes where change.rows.contains(9) { break }
        #expect(rows.item(at: 9) == "row 9")
    }
}

/// 10,000 rows of text, any page at once.
struct Numbers: OffsetPageSource {
    typealias Cursor = Int
    typealias Item = String
    func page(at offset: Int, size: Int) async throws -> Page<Int, String> {
        let end = min(10_000, offset + size)
        return Page(items: (offset..<end).map { "row \($0)" }, cursorAfter: end < 10_000 ? end : nil, itemsAfter: 10_000 - end)
    }
}
