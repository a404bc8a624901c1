import Foundation
import Testing
import Avenues
import AvenuesAsyncMuxCompat

/// Every name a rename replaced that the migration module keeps (CONTRIBUTING.md, "One dialect")
/// still works, with `import AvenuesAsyncMuxCompat`, and does what its replacement does. Each call below warns that it is deprecated: that is expected here.
@Suite("Seed names", .serialized, .timeLimit(.minutes(1)))
struct SeedNamesTests {
    // DESIGN.md's contract names (`request()`, `state(of:)`, `cancelProcessing(of:)`, AsyncMedia's
    // `request(url:)`…) live in Avenues itself: `ContractNamesTests` calls them without this module.

    @Test func multiplexerNames() async throws {
        let single = Multiplexer<Int> { 7 }
        single.store(8)
        #expect(try await single.value() == 8)

        let map = MultiplexerMap<String, Int>(memoryLimit: 2) { $0.count }
        map.store(9, for: "abc")
        #expect(try await map.value(for: "abc") == 9)

        let many = MultiRequester(map: map) { keys in Dictionary(uniqueKeysWithValues: keys.map { ($0, $0.count * 10) }) }
        let outcome = await many.request(keys: ["a", "bb"])
        #expect(outcome.values == ["a": 10, "bb": 20])

        #expect(MuxRepository.shared.saveAll().isEmpty)
        MuxRepository.shared.clearMemory()
    }

    @Test func asyncMediaNames() async throws {
        // file: URLs come back as they are, so no server is needed; the static names forward to `shared`.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("seed-names-\(UUID().uuidString).txt")
        try Data("hi".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try await AsyncMedia.request(url: file) == file)
        #expect(AsyncMedia.cachedValue(url: file) == file)
        for await step in AsyncMedia.shared.progress(url: file) { #expect(step.isComplete) }
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
