import Foundation
import Testing
import Avenues  // alone: DESIGN.md's contract names need no migration module

/// The seeds' names DESIGN.md lists as contract compile with `import Avenues` alone and do what their
/// current names do. Each call below warns that it is deprecated: that is expected here.
@Suite("Contract names", .serialized, .timeLimit(.minutes(1)))
struct ContractNamesTests {
    @Test func processingAndAvenueNames() async throws {
        let processor = AutoProcessor<String, Int> { $0.count }
        #expect(processor.state(of: "k") == .none)
        processor.cancel("k")
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: processor)
        let changes = avenue.changes
        avenue.prepareItem(for: "abc", at: 0)
        for await _ in changes where avenue.item(at: 0) != nil { break }
        #expect(avenue.item(at: 0) == 3)
        avenue.prepareItem(for: "abcd", at: 1)
        avenue.cancelProcessing(of: "abcd")
    }

    @Test func multiplexerNames() async throws {
        let single = Multiplexer<Int> { 7 }
        #expect(try await single.request() == 7)
        let map = MultiplexerMap<String, Int> { $0.count }
        #expect(try await map.request(key: "abc") == 3)
        map.set(9, for: "abc")
        #expect(try await map.request(key: "abc") == 9)
        #expect(try await map.refresh(key: "abc").request(key: "abc") == 3)
        map.clear(key: "abc")
        #expect(map.cachedValue(for: "abc") == nil)
    }

    @Test func asyncMediaNames() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("contract-names-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("local.txt")
        try Data("hi".utf8).write(to: file)
        let media = AsyncMedia(directory: folder.appendingPathComponent("cache"))
        #expect(try await media.request(url: file) == file)  // file: URLs come back as they are
        #expect(media.cachedValue(url: file) == file)
    }
}
