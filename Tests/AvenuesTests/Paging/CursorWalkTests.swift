import Testing

@testable import Avenues
import AvenuesTestSupport

/// A source that goes on only from an opaque cursor (a token, as a crawl or an API gives), and
/// counts the pages asked of it. Its rows can grow.
final class TokenSource: PageSource, Sendable {
    struct Token: Hashable, Sendable { let next: Int }
    private let state: Shared<(rows: [String], pagesAsked: [Int])>

    init(_ rows: [String]) { state = Shared((rows: rows, pagesAsked: [])) }

    var pagesAsked: [Int] { state.withLock { $0.pagesAsked } }
    func append(_ more: [String]) { state.withLock { $0.rows += more } }

    func page(_ request: PageRequest<Token>) async throws -> Page<Token, String> {
        try Task.checkCancellation()
        let start = request.cursor?.next ?? 0
        return state.withLock { state in
            state.pagesAsked.append(start)
            let end = min(start + request.size, state.rows.count)
            let items = Array(state.rows[min(start, end) ..< end])
            return Page(items: items, cursorAfter: end < state.rows.count ? Token(next: end) : nil)
        }
    }
}

@Suite("Cursor walks", .timeLimit(.minutes(5)))
struct CursorWalkTests {
    @Test func randomReadsMatchTheRowsAndAScanInOrderAsksEachPageOnce() async throws {
        var random = SplitMix64(seed: 31)
        for round in 0 ..< 200 {
            let length = Int.random(in: 0 ... 300, using: &random)
            let rows = (0 ..< length).map { "row \($0)" }
            let pageSize = Int.random(in: 1 ... 40, using: &random)
            let source = TokenSource(rows)
            let walk = CursorWalk(source: source, pageSize: pageSize)
            // A scan in order, in chunks unrelated to the pages.
            let chunk = Int.random(in: 1 ... 70, using: &random)
            var scanned: [String] = []
            while true {
                let items = try await walk.read(scanned.count ..< scanned.count + chunk)
                scanned += items
                if items.count < chunk { break }
            }
            #expect(scanned == rows, "round \(round)")
            #expect(walk.count == .exact(length))
            let pages = Set(source.pagesAsked)
            #expect(pages == Set(stride(from: 0, to: max(length, 1), by: pageSize)), "round \(round): each page")
            #expect(source.pagesAsked.count <= pages.count + (length / chunk + 1), "round \(round): a page is asked again at most once per chunk that ends inside it")
            // Reads anywhere afterwards start from the page holding their first row.
            for _ in 0 ..< 10 {
                let lower = Int.random(in: 0 ... length + 5, using: &random)
                let upper = lower + Int.random(in: 0 ... 50, using: &random)
                let before = source.pagesAsked.count
                let items = try await walk.read(lower ..< upper)
                #expect(items == Array(rows[min(lower, length) ..< min(upper, length)]), "round \(round): \(lower)..<\(upper)")
                let asked = source.pagesAsked.count - before
                let spanned = upper == lower ? 0 : (min(upper, length + 1) - 1) / pageSize - min(lower, length) / pageSize + 1
                #expect(asked <= max(1, spanned), "round \(round): \(lower)..<\(upper) asked \(asked) pages")
            }
        }
    }

    @Test func aSourceThatGrowsIsReadOnFromItsLastPage() async throws {
        let source = TokenSource((0 ..< 25).map { "row \($0)" })
        let walk = CursorWalk(source: source, pageSize: 10)
        #expect(try await walk.read(0 ..< 100).count == 25)
        #expect(walk.count == .exact(25))
        source.append((25 ..< 47).map { "row \($0)" })
        let more = try await walk.read(25 ..< 100)
        #expect(more == (25 ..< 47).map { "row \($0)" })
        #expect(walk.count == .exact(47))
        #expect(source.pagesAsked == [0, 10, 20, 20, 30, 40])
    }

    @Test func aSourceOfAnyLengthKeepsAtMostMaxCheckpointsCursors() async throws {
        let rows = (0 ..< 5_000).map { "row \($0)" }
        let source = TokenSource(rows)
        let walk = CursorWalk(source: source, pageSize: 3, maxCheckpoints: 8)
        #expect(try await walk.read(0 ..< 10_000) == rows)
        let (count, stride) = walk.checkpoints
        #expect(count <= 8 && stride >= 1_667 / 8, "\(count) cursors, a stride of \(stride) pages")
        var random = SplitMix64(seed: 4)
        for _ in 0 ..< 200 {
            let lower = Int.random(in: 0 ..< 5_000, using: &random), upper = min(5_000, lower + Int.random(in: 1 ... 20, using: &random))
            let before = source.pagesAsked.count
            #expect(try await walk.read(lower ..< upper) == Array(rows[lower ..< upper]))
            // From the checkpoint before the first row's page: at most a stride of pages before it.
            #expect(source.pagesAsked.count - before <= stride + (upper - 1) / 3 - lower / 3 + 1)
        }
    }

    /// Short pages with a cursor, more items than asked, a cursor that comes round again: the walk
    /// numbers the rows as the paged rows do.
    @Test func aSourceThatBreaksTheContractIsNumberedAsThePagedRowsNumberIt() async throws {
        struct Hostile: PageSource {
            struct Token: Hashable, Sendable { let next: Int }
            func page(_ request: PageRequest<Token>) async throws -> Page<Token, String> {
                let start = request.cursor?.next ?? 0
                guard start < 400 else { return Page(items: [], cursorAfter: Token(next: start)) }  // comes round
                let count = start % 3 == 0 ? max(1, request.size / 2) : request.size + 2  // short, or too many
                let end = min(start + count, 400)
                return Page(items: (start ..< end).map { "item \($0)" }, cursorAfter: Token(next: end))
            }
        }
        let rows = PagedRows(source: Hostile(), configuration: PagingConfiguration(pageSize: 10, prefetchDistance: 10))
        var listed: [String] = []
        while true {
            rows.show(listed.count ..< listed.count + 10)
            let next = listed.count
            await eventually("rows from \(next) load, or the list ends") {
                rows.item(at: next) != nil || (rows.count.isExact && rows.count.value <= next)
            }
            guard let item = rows.item(at: next) else { break }
            listed.append(item)
            if listed.count > 1_000 { break }
        }
        let walk = CursorWalk(source: Hostile(), pageSize: 10)
        let walked = try await walk.read(0 ..< 2_000)
        #expect(!walked.isEmpty && walked == listed)
        #expect(walk.count == .exact(walked.count))
    }

    @Test func hugePagesAndRangesAreClampedNotTrappedOn() async throws {
        let rows = (0 ..< 25).map { "row \($0)" }
        let huge = CursorWalk(source: TokenSource(rows), pageSize: .max)
        #expect(try await huge.read(0 ..< 10) == Array(rows[0 ..< 10]))
        #expect(try await huge.read(3 ..< .max) == Array(rows[3...]))
        let walk = CursorWalk(source: TokenSource(rows), pageSize: 7)
        #expect(try await walk.read(0 ..< .max) == rows)
        #expect(try await walk.read(.max - 1 ..< .max).isEmpty)
        #expect(try await walk.read(-5 ..< 3).isEmpty)
    }

    /// A source whose first page cancels the task reading it: the read is cancelled at a known
    /// point, whatever the scheduling (cancelling from outside raced the task under TSan: 99 pages
    /// were read before the cancel landed).
    final class CancellingSource: PageSource, Sendable {
        let inner: TokenSource
        /// Pages the walk asked for, counted before the inner source checks for cancellation itself.
        let asked = Shared(0)

        init(inner: TokenSource) { self.inner = inner }

        func page(_ request: PageRequest<TokenSource.Token>) async throws -> Page<TokenSource.Token, String> {
            asked.withLock { $0 += 1 }
            let page = try await inner.page(request)
            withUnsafeCurrentTask { $0?.cancel() }
            return page
        }
    }

    @Test func aCancelledReadStopsBeforeTheNextPage() async throws {
        let source = TokenSource((0 ..< 10_000).map { "row \($0)" })
        let cancelling = CancellingSource(inner: source)
        let walk = CursorWalk(source: cancelling, pageSize: 10)
        let task = Task { try await walk.read(0 ..< 10_000) }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(source.pagesAsked == [0])
        #expect(cancelling.asked.withLock { $0 } == 1)  // the walk itself stopped, not the source
    }

    @Test func aFilterOverACursorSourceFindsEveryMatchWithoutTheListsPages() async throws {
        let words = FilteredRowsTests.words(3_000, seed: 9)
        let source = TokenSource(words)
        let rows = PagedRows(source: source, configuration: PagingConfiguration(pageSize: 50, prefetchDistance: 50))
        let filtered = FilteredRows(rows: rows, chunk: 128, maxResident: 64) { row, query in query.matches(row) }
        let query = TextQuery("café")
        filtered.filter(query)
        for await change in filtered.subscribe() where change.progress.isComplete { break }
        let expected = FilteredRowsTests.model(words, query)
        #expect(filtered.count == .exact(expected.count))
        #expect((0 ..< expected.count).compactMap { filtered.row(at: $0) } == expected)
        #expect(filtered.progress.total == .exact(3_000))  // the walk's, though the list read nothing
        #expect(rows.resident.pages == 0)
        #expect(Set(source.pagesAsked).count == 60 && source.pagesAsked.count <= 60 + 3_000 / 128 + 1)
        // Matches far back load from the page that holds them, not from the start.
        let before = source.pagesAsked.count
        filtered.show(expected.count - 5 ..< expected.count)
        await eventually("the last matches' items loaded") { (expected.count - 5 ..< expected.count).allSatisfy { filtered.item(at: $0) != nil } }
        #expect(filtered.item(at: expected.count - 1) == words[expected[expected.count - 1]])
        #expect(source.pagesAsked.count - before <= 5)
        // Narrowing re-checks the matches found, reading only their pages.
        filtered.filter(TextQuery("café 1"))
        for await change in filtered.subscribe() where change.progress.isComplete { break }
        #expect((0 ..< filtered.count.value).compactMap { filtered.row(at: $0) } == FilteredRowsTests.model(words, TextQuery("café 1")))
    }
}
