import Foundation
import Testing
@testable import Avenues

/// README.md's other examples, compiled and run (`.ci/check_readme.py` compares the marked regions
/// with the README's `<!-- compiled: NAME -->` blocks).
@Suite("README examples", .serialized, .timeLimit(.minutes(2)))
struct ReadmeExampleTests {
    @Test func anAvenueOverAsyncMediaLoadsVisibleRowsFirstAndCancelsRowsThatLeave() async throws {
        let server = try MediaServer()
        let folder = TemporaryFolder("readme-remote").url
        let urls = (0..<100).map { server.url("/bytes/\(1_000 + $0)") }

        // README from a row to the network: begin
        let media = AsyncMedia(directory: folder, maxConcurrentDownloads: 4)       // the one queue and limit
        let sizes = media.asyncMapValues { file in                                   // runs after each download
            try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0
        }
        let avenue = Avenue<Int, URL, Int>(storage: MemoryStorage(), processor: sizes)   // claims only
        let prefetcher = RowPrefetcher(avenue: avenue, ahead: 20, behind: 5) { row in
            urls.indices.contains(row) ? urls[row] : nil
        }
        let changes = avenue.changes
        prefetcher.show(0..<10)     // rows 0–9 queue at .visible, 10–29 at .prefetch, in media's queue
        prefetcher.show(50..<60)    // a jump: rows 0–29 are released, their downloads stopped or never started
        for await event in changes where (50..<60).contains(event.index) {
            if case .failed(let error) = event.change { print("row \(event.index): \(error)") }   // retried after a wait
            if (50..<60).allSatisfy({ avenue.state(at: $0).hasValue }) { break }
        }
        // README from a row to the network: end

        #expect((50..<60).allSatisfy { avenue.item(at: $0) == 1_000 + $0 })
        #expect(avenue.key(at: 0) == nil)
        prefetcher.stop()
    }
}
