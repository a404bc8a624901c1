import Foundation
import Testing
@testable import Avenues

/// README.md's other examples, compiled and run (`.ci/check_readme.py` compares the marked regions
/// with the README's `<!-- compiled: NAME -->` blocks).
@Suite("README examples", .serialized, .timeLimit(.minutes(5)))
struct ReadmeExampleTests {
    @Test func anAvenueOverAsyncMediaLoadsVisibleRowsFirstAndCancelsRowsThatLeave() async throws {
        let server = try MediaServer()
        let temporary = TemporaryFolder("readme-remote")
        defer { withExtendedLifetime(temporary) {} }  // not deleted mid-test, after its last use
        let folder = temporary.url
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
        let changes = avenue.subscribe()
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

/// The README's paged list: a back end's `?offset=` endpoint, 10,000 rows, as a terminal would read it.
struct Numbers: OffsetPageSource {
    typealias Cursor = Int
    typealias Item = String
    func page(at offset: Int, size: Int) async throws -> Page<Int, String> {
        let end = min(10_000, offset + size)            // (an HTTP request would go here)
        return Page(items: (offset..<end).map { "row \($0)" }, cursorAfter: end < 10_000 ? end : nil, itemsAfter: 10_000 - end)
    }
}

@Suite("README paging example", .timeLimit(.minutes(5)))
struct ReadmePagingTests {
    @Test func aPagedListInTwentyLines() async {
        // README a paged list: begin
        let rows = PagedRows(source: Numbers(), configuration: PagingConfiguration(pageSize: 100))
        let changes = rows.subscribe()                                  // pages as they arrive
        rows.show(0..<40)                                           // the first screen (300 rows load)
        for await change in changes where change.rows.contains(39) {
            print(rows.count, rows.item(at: 0) ?? "…", rows.item(at: 39) ?? "…")   // 10000 row 0 row 39
            break
        }
        rows.show(9_960..<10_000)                                   // G: one page asked, none between
        for await change in changes where change.rows.contains(9_999) {
            print(rows.item(at: 9_999) ?? "…", rows.loadStates.after)   // row 9999 end
            break
        }
        // README a paged list: end
        #expect(rows.item(at: 9_999) == "row 9999")
    }
}
