import Foundation
import Testing
@testable import Avenues
import AvenuesTestSupport

/// A source whose reads wait for permits the test hands out, and which records every read (its
/// range, whether it was cancelled): scans move exactly as far as the test says.
final class GatedSource: Sendable {
    let rows: [String]
    private let state = Locked((permits: 0, waiters: [UnsafeContinuation<Void, Never>](), reads: [Range<Int>](), cancelled: 0, open: false))

    init(_ rows: [String]) { self.rows = rows }

    /// Lets `count` more reads through (or every read from now on, when `nil`).
    func allow(_ count: Int? = nil) {
        let waiters = state.withLock { state -> [UnsafeContinuation<Void, Never>] in
            if let count { state.permits += count } else { state.open = true }
            var released: [UnsafeContinuation<Void, Never>] = []
            while !state.waiters.isEmpty, state.open || state.permits > 0 {
                if !state.open { state.permits -= 1 }
                released.append(state.waiters.removeFirst())
            }
            return released
        }
        for waiter in waiters { waiter.resume() }
    }

    var reads: [Range<Int>] { state.withLock { $0.reads } }
    var cancelledReads: Int { state.withLock { $0.cancelled } }
    var waiting: Int { state.withLock { $0.waiters.count } }

    func read(_ range: Range<Int>) async throws -> [String] {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let go = state.withLock { state -> Bool in
                if state.open { return true }
                if state.permits > 0 {
                    state.permits -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if go { continuation.resume() }
        }
        if Task.isCancelled {
            state.withLock { $0.cancelled += 1 }
            throw CancellationError()
        }
        state.withLock { $0.reads.append(range) }
        let lower = min(range.lowerBound, rows.count)
        return Array(rows[lower ..< min(range.upperBound, rows.count)])
    }

    func filtered(chunk: Int = 100, maxResident: Int = 1_000) -> FilteredRows<String> {
        FilteredRows(chunk: chunk, maxResident: maxResident, count: { [rows] in .exact(rows.count) }, read: { try await self.read($0) }) { row, query in
            query.matches(row)
        }
    }
}

/// Holds, once armed, the next thread that asks the source's count, until released.
final class CountHold: Sendable {
    private let state = Locked((armed: false, holding: false))
    private let released = DispatchSemaphore(value: 0)

    func arm() { state.withLock { $0.armed = true } }
    var isHolding: Bool { state.withLock { $0.holding } }

    func pass() {
        let hold = state.withLock { state -> Bool in
            guard state.armed else { return false }
            state.armed = false
            state.holding = true
            return true
        }
        if hold { released.wait() }
    }

    func release() {
        let held = state.withLock { state -> Bool in
            state.armed = false
            defer { state.holding = false }
            return state.holding
        }
        if held { released.signal() }
    }
}

@Suite("Filtered rows", .timeLimit(.minutes(5)))
struct FilteredRowsTests {
    static func words(_ count: Int, seed: UInt64 = 1) -> [String] {
        var random = SplitMix64(seed: seed)
        let parts = ["fix", "Fix", "add", "build", "test", "café", "CAFÉ", "docs", "abc", "abd", "ab"]
        return (0 ..< count).map { index in
            (0 ..< 3).map { _ in parts.randomElement(using: &random) ?? "x" }.joined(separator: " ") + " \(index)"
        }
    }

    static func model(_ rows: [String], _ query: TextQuery) -> [Int] {
        rows.indices.filter { query.matches(rows[$0]) }
    }

    func finished(_ filtered: FilteredRows<String>) async {
        for await change in filtered.subscribe() where change.progress.isComplete { return }
    }

    func matches(_ filtered: FilteredRows<String>) -> [Int] {
        (0 ..< filtered.count.value).compactMap { filtered.row(at: $0) }
    }

    @Test func matchesStreamInOrderAndTheCountIsExactAtTheEnd() async throws {
        let rows = Self.words(1_000)
        let source = GatedSource(rows)
        let filtered = source.filtered(chunk: 100)
        let query = TextQuery("fix")
        let expected = Self.model(rows, query)
        filtered.filter(query)
        #expect(filtered.count == .atLeast(0))
        for chunk in 1 ... 10 {
            source.allow(1)
            await eventually("chunk \(chunk) is taken") { filtered.progress.scanned >= chunk * 100 || filtered.progress.isComplete }
            let found = matches(filtered)
            #expect(found == expected.filter { $0 < chunk * 100 }, "after chunk \(chunk)")
        }
        source.allow(1)  // the short read that says the source ended
        await finished(filtered)
        #expect(filtered.count == .exact(expected.count))
        #expect(matches(filtered) == expected)
        #expect(filtered.progress == FilterProgress(scanned: 1_000, total: .exact(1_000), isComplete: true))
    }

    /// Probes of 2026-11-26: a chunk of Int.max trapped (arithmetic overflow) as soon as a scan
    /// went on past row 0 — narrowing the query, or the source growing. And `sourceGrew()` called
    /// as soon as a scan said it was complete was lost (4 cases in 5 here): the scan still held its
    /// handle for a moment after its last change, and a grown source was only read when none did.
    /// Every step is checked against the model.
    @Test(arguments: [1, 7, Int.max / 2, Int.max - 1, Int.max])
    func anyChunkSizeScansNarrowsAndGoesOnWithoutTrapping(chunk: Int) async throws {
        let rows = Self.words(300, seed: 5)
        let grown = Locked(250)
        let filtered = FilteredRows<String>(
            chunk: chunk, count: { .atLeast(grown.withLock { $0 }) },
            read: { range in
                let end = grown.withLock { $0 }
                let lower = min(range.lowerBound, end)
                return Array(rows[lower ..< max(lower, min(range.upperBound, end))])
            }
        ) { row, query in query.matches(row) }
        filtered.filter(TextQuery("ab"))
        await finished(filtered)
        #expect(matches(filtered) == Self.model(Array(rows[..<250]), TextQuery("ab")))
        filtered.filter(TextQuery("abc"))  // narrows: re-checks the matches from the first one
        await finished(filtered)
        #expect(matches(filtered) == Self.model(Array(rows[..<250]), TextQuery("abc")))
        grown.withLock { $0 = 300 }
        filtered.sourceGrew()  // goes on from row 250
        await finished(filtered)
        #expect(matches(filtered) == Self.model(rows, TextQuery("abc")))
        filtered.stop()
    }

    @Test func aNewQueryCancelsTheOldScanAtOnce() async throws {
        let source = GatedSource(Self.words(10_000))
        let filtered = source.filtered(chunk: 100)
        filtered.filter(TextQuery("fix"))
        await eventually("the first read waits") { source.waiting == 1 }
        filtered.filter(TextQuery("docs"))  // not narrowing: a new scan
        source.allow(1)
        await eventually("the old scan's read saw the cancellation") { source.cancelledReads == 1 }
        source.allow()
        await finished(filtered)
        #expect(filtered.statistics.scansStarted == 2)
        #expect(filtered.statistics.scansCompleted == 1)
        #expect(matches(filtered) == Self.model(source.rows, TextQuery("docs")))
    }

    @Test func typingTenCharactersRunsOnlyTheLastScanToTheEnd() async throws {
        let source = GatedSource(Self.words(5_000))
        let filtered = source.filtered(chunk: 100)
        let typed = "fix 12 abc"
        for length in 1 ... typed.count {
            filtered.filter(TextQuery(String(typed.prefix(length))))
            source.allow(1)  // one read goes through (this scan's, or the last one's, cancelled) before the next key
            await eventually("keystroke \(length)'s read was let through") { source.reads.count + source.cancelledReads >= length }
        }
        source.allow()
        await finished(filtered)
        let stats = filtered.statistics
        #expect(stats.scansCompleted == 1)
        #expect(stats.rowsRead <= 5_000 + typed.count * 100)  // each cancelled scan read at most a chunk or so
        #expect(matches(filtered) == Self.model(source.rows, TextQuery(typed)))
    }

    @Test func typingMoreReChecksOnlyTheLastMatches() async throws {
        var rows = Array(repeating: "nothing here", count: 10_000)
        for row in [5, 2_500, 2_501, 7_777] { rows[row] = "the abc row" }
        rows[2_501] = "the abcd row"
        let source = GatedSource(rows)
        source.allow()
        let filtered = source.filtered(chunk: 100)
        filtered.filter(TextQuery("abc"))
        await finished(filtered)
        #expect(matches(filtered) == [5, 2_500, 2_501, 7_777])
        let before = source.reads.count
        filtered.filter(TextQuery("abcd"))
        await finished(filtered)
        #expect(matches(filtered) == [2_501])
        // Three reads, one per group of candidates (5; 2,500 and 2,501; 7,777), not 100 chunks.
        #expect(Array(source.reads.dropFirst(before)) == [5 ..< 105, 2_500 ..< 2_600, 7_777 ..< 7_877])
        // Widening again scans everything.
        filtered.filter(TextQuery("ab"))
        await finished(filtered)
        #expect(matches(filtered) == [5, 2_500, 2_501, 7_777])
    }

    @Test func narrowingWhileTheScanRunsGoesOnFromWhereItStopped() async throws {
        let rows = Self.words(3_000, seed: 9)
        let source = GatedSource(rows)
        let filtered = source.filtered(chunk: 100)
        filtered.filter(TextQuery("ab"))
        source.allow(5)
        await eventually("5 chunks") { filtered.progress.scanned >= 500 }
        filtered.filter(TextQuery("abd"))
        source.allow()
        await finished(filtered)
        #expect(matches(filtered) == Self.model(rows, TextQuery("abd")))
    }

    /// Probe of 2026-11-26: screens at the ends of the integers, with the smallest and largest
    /// memory bounds, while the scan keeps items and evicts them.
    @Test(arguments: [1, 4, Int.max])
    func screensAtTheEndsOfTheIntegersNeitherTrapNorLoseMatches(maxResident: Int) async throws {
        let rows = Self.words(600, seed: 3)
        let windows: [Range<Int>] = [
            Int.min ..< Int.min, Int.min ..< Int.min + 1, Int.min ..< Int.max, -5 ..< 3, 0 ..< Int.max,
            Int.max - 1 ..< Int.max, Int.max ..< Int.max, 10 ..< 20,
        ]
        for window in windows {
            let source = GatedSource(rows)
            source.allow()
            let filtered = source.filtered(chunk: 50, maxResident: maxResident)
            filtered.show(window)
            filtered.filter(TextQuery("ab"))
            await finished(filtered)
            #expect(matches(filtered) == Self.model(rows, TextQuery("ab")), "\(window)")
            #expect(filtered.state.withLock { $0.items.count } <= maxResident)
            filtered.show(window)
        }
    }

    /// Seen in CI under ThreadSanitizer (2026-11-26): a subscriber waited for ever for the change
    /// saying the scan was complete. Its first change, computed as it subscribed, was yielded after
    /// the scan's last one, and with one change buffered it replaced it: the stream ended on a
    /// stale state. Here the subscriber is held in the middle of computing that first change (in
    /// the source's count) while the scan ends.
    @Test func aSubscriberThatRacesTheScansEndStillSeesTheEnd() async throws {
        let rows = Self.words(500)
        let source = GatedSource(rows)
        let hold = CountHold()
        let filtered = FilteredRows<String>(
            chunk: 100, count: { hold.pass(); return .exact(rows.count) }, read: { try await source.read($0) }
        ) { row, query in query.matches(row) }
        filtered.filter(TextQuery("fix"))
        source.allow(5)
        await eventually("the scan waits for its last read") { source.waiting == 1 && source.reads.count == 5 }
        hold.arm()
        let subscribed = Locked<AsyncStream<FilteredRowsChange>?>(nil)
        let subscribing = Task {
            await onOwnThread {
                let stream = filtered.subscribe()  // not under `subscribed`'s lock: it may be held here
                subscribed.withLock { $0 = stream }
            }
        }
        await eventually("the subscriber is held, or subscribed") { hold.isHolding || subscribed.withLock { $0 != nil } }
        source.allow()
        await eventually("the scan ended and let go of its task") { filtered.state.withLock { $0.scan == nil } }
        hold.release()
        await subscribing.value
        let stream = try #require(subscribed.withLock { $0 })
        var last: FilteredRowsChange?
        for await change in stream {
            last = change
            if change.progress.isComplete { break }
        }
        let expected = Self.model(rows, TextQuery("fix")).count
        #expect(last?.count == .exact(expected))
        #expect(last?.progress.isComplete == true)
    }

    /// Queries typed, the source growing with `sourceGrew()` and screens shown, from three tasks at
    /// once: when it settles, the matches are the model's, each once (two scans of one query would
    /// add rows twice). ThreadSanitizer runs it in CI.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func queriesGrowthAndScreensFromThreeTasksSettleOnTheModel(seed: UInt64) async throws {
        let rows = Self.words(6_000, seed: seed)
        let grown = Shared(1_000)
        let filtered = FilteredRows<String>(
            chunk: 64, count: { .atLeast(grown.withLock { $0 }) },
            read: { range in
                await Task.yield()
                let end = grown.withLock { $0 }
                let lower = min(range.lowerBound, end)
                return Array(rows[lower ..< max(lower, min(range.upperBound, end))])
            }
        ) { row, query in query.matches(row) }
        let queries = ["a", "ab", "abc", "abd", "fix", "fi", "café", "Fix", "b"].map { TextQuery($0) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var random = SplitMix64(seed: seed)
                for _ in 0..<60 {
                    filtered.filter(queries[Int(random.next() % UInt64(queries.count))])
                    await Task.yield()
                }
            }
            group.addTask {
                for _ in 0..<50 {
                    grown.withLock { $0 = min(rows.count, $0 + 100) }
                    filtered.sourceGrew()
                    await Task.yield()
                }
            }
            group.addTask {
                var random = SplitMix64(seed: seed &+ 1)
                for _ in 0..<60 {
                    let top = Int(random.next() % 200)
                    filtered.show(top ..< top + 40)
                    await Task.yield()
                }
            }
        }
        // The query the tasks left, as they left it (a scan running, a re-check, or over): the
        // last growth said must reach it. A new query here would start a scan from row 0 and hide
        // a growth the scan lost.
        let last = try #require(filtered.query, "the tasks set a query")
        grown.withLock { $0 = rows.count }
        filtered.sourceGrew()
        await finished(filtered)
        filtered.sourceGrew()  // nothing more to read: a complete scan stays complete
        await finished(filtered)
        #expect(matches(filtered) == Self.model(rows, last))
        #expect(filtered.count == .exact(Self.model(rows, last).count))
        filtered.stop()
    }

    @Test func randomQueriesMatchTheModel() async throws {
        var random = SplitMix64(seed: 77)
        let rows = Self.words(2_000, seed: 5)
        let texts = ["a", "ab", "abc", "abd", "f", "fi", "fix", "Fix", "FIX", "café", "CAFÉ", "caf", "", "1", "19", " "]
        for round in 0 ..< 30 {
            let source = GatedSource(rows)
            let filtered = source.filtered(chunk: Int.random(in: 1 ... 300, using: &random))
            var last: TextQuery?
            for _ in 0 ..< Int.random(in: 1 ... 6, using: &random) {
                let text = texts.randomElement(using: &random) ?? "a"
                let query = text.isEmpty ? nil : TextQuery(text)
                filtered.filter(query)
                last = query
                if Int.random(in: 0 ..< 4, using: &random) == 0, query != nil {
                    source.allow()  // this scan runs to its end before the next query (which may narrow it)
                    await finished(filtered)
                } else {
                    source.allow(Int.random(in: 0 ... 4, using: &random))
                    await Task.yield()
                }
            }
            source.allow()
            guard let last else {
                #expect(filtered.count == .exact(0))
                continue
            }
            await finished(filtered)
            #expect(matches(filtered) == Self.model(rows, last), "round \(round): \(last)")
            #expect(filtered.count == .exact(Self.model(rows, last).count))
        }
    }

    @Test func itemsOfVisibleMatchesLoadAndResidencyIsBounded() async throws {
        let rows = (0 ..< 20_000).map { "row \($0)" }
        let source = GatedSource(rows)
        source.allow()
        let filtered = source.filtered(chunk: 500, maxResident: 100)
        filtered.filter(TextQuery("row"))
        await finished(filtered)
        #expect(filtered.count == .exact(20_000))
        #expect(filtered.state.withLock { $0.items.count } <= 100)
        filtered.show(10_000 ..< 10_040)
        await eventually("the screen's items loaded") { (10_000 ..< 10_040).allSatisfy { filtered.item(at: $0) != nil } }
        #expect(filtered.item(at: 10_039) == "row 10039")
        #expect(filtered.state.withLock { $0.items.count } <= 100)
        #expect(filtered.index(ofRow: 12_345) == 12_345)

        // A screen wider than the bound (a front end's height gone wrong) is cut to its first
        // `maxResident` matches: 0..<Int.max read every match's row (1.1 million rows in 3 s, 2026-11-27).
        let readsBefore = source.reads.count
        for (shown, cut) in [(0 ..< Int.max, 0 ..< 100), (Int.min ..< Int.max, 0 ..< 100), (-5 ..< 3, 0 ..< 3), (19_990 ..< Int.max, 19_990 ..< 20_090)] {
            filtered.show(shown)
            #expect(filtered.state.withLock { $0.window } == cut, "\(shown)")
        }
        await eventually("the last screen's items loaded") { (19_990 ..< 20_000).allSatisfy { filtered.item(at: $0) != nil } }
        // Each screen's items at most: 100 rows in reads of up to 64 (the old code read on through
        // all 20,000 matches, about 313 reads).
        #expect(source.reads.dropFirst(readsBefore).allSatisfy { $0.upperBound <= 100 || $0.lowerBound >= 19_990 }, "\(source.reads.dropFirst(readsBefore))")
    }

    @Test func aFilterDroppedWhileItScansStopsScanning() async throws {
        // The filter's end is awaited through a value only it holds, not by polling a weak
        // reference: each look at one holds the filter for a moment, and a look that overlapped
        // the scan letting go of it kept the filter alive for one more read (1 run in ~600 under
        // a full ThreadSanitizer run, 2026-11-29).
        final class Sentinel: Sendable {
            let gone: AsyncStream<Void>.Continuation
            init(_ gone: AsyncStream<Void>.Continuation) { self.gone = gone }
            deinit { gone.finish() }
        }
        let (gone, signal) = AsyncStream<Void>.makeStream()
        let source = GatedSource(Self.words(10_000))
        var filtered: FilteredRows<String>? = {
            let sentinel = Sentinel(signal)
            return FilteredRows(chunk: 100, count: { [rows = source.rows] in .exact(rows.count) }, read: { try await source.read($0) }) { row, query in
                _ = sentinel
                return query.matches(row)
            }
        }()
        filtered?.filter(TextQuery("fix"))
        await eventually("the first read waits") { source.waiting == 1 }
        filtered = nil
        source.allow()  // the read in flight ends; the scan holds the filter no longer
        for await _ in gone {}  // the filter is gone (deinitialized) once the sentinel is
        #expect(source.reads.count == 1)  // no read after the one in flight
    }

    @Test func aFailedReadStopsTheScanAndSaysWhy() async throws {
        struct Broken: Error {}
        let filtered = FilteredRows<String>(chunk: 10, count: { .atLeast(100) }, read: { range in
            if range.lowerBound >= 30 { throw Broken() }
            return range.map { "row \($0)" }
        }) { row, query in query.matches(row) }
        filtered.filter(TextQuery("row"))
        await eventually("the error is reported") { filtered.error != nil }
        #expect(filtered.error is Broken)
        #expect(filtered.count == .atLeast(30))
    }

    @Test func readmeExample() async throws {
        // README a filter as you type: begin
        let commits = (0..<100_000).map { "commit \($0): " + ($0 % 7 == 0 ? "fix the build" : "add a feature") }
        let filtered = FilteredRows(items: commits) { row, query in query.matches(row) }
        filtered.filter(TextQuery("fix"))          // every keystroke: the old scan is cancelled
        filtered.show(0..<40)                      // the first screen's matches, as they are found
        for await change in filtered.subscribe() where change.progress.isComplete {
            print(filtered.count, filtered.row(at: 1) ?? -1)   // 14286 7
            break
        }
        // README a filter as you type: end
        #expect(filtered.count == .exact(14_286) && filtered.row(at: 1) == 7)
    }

    /// A scan reads the source itself, past the rows its list loaded, and a list's count is only
    /// the rows it loaded while the source does not say: `progress` said "3000 of ≥ 0 scanned" (its
    /// total below what it had read).
    /// The source grows, and `sourceGrew()` is said, while a read that saw the old end is out: that
    /// read comes back short, and the scan must read on to the new end (it ended at the old one).
    @Test func theSourceGrowingWhileAReadIsOutIsScannedToItsNewEnd() async throws {
        let rows = Self.words(300, seed: 21)
        let length = Shared(100)
        let gate = GatedSource(rows)
        let filtered = FilteredRows<String>(chunk: 64, count: { .atLeast(length.withLock { $0 }) }, read: { range in
            let end = length.withLock { $0 }  // the end as it is when the read starts
            _ = try await gate.read(range)
            let lower = min(range.lowerBound, end)
            return Array(rows[lower ..< max(lower, min(range.upperBound, end))])
        }) { row, query in query.matches(row) }
        let query = TextQuery("ab")
        filtered.filter(query)
        gate.allow(1)  // rows 0..<64
        await eventually("the second read saw the end at 100 and waits") { gate.waiting == 1 && gate.reads.count == 1 }
        length.withLock { $0 = 300 }
        filtered.sourceGrew()
        gate.allow()
        await finished(filtered)
        #expect(matches(filtered) == Self.model(rows, query))
        #expect(filtered.progress.scanned == 300)
    }

    /// A source that gives more rows than asked: the rows past the range are not taken as rows of
    /// the range's end, nor found twice.
    @Test(arguments: [1, 5, 64])
    func aReadGivingMoreRowsThanAskedIsTakenAtTheRowsAsked(extra: Int) async throws {
        let rows = Self.words(500, seed: 23)
        let filtered = FilteredRows<String>(chunk: 32, count: { .exact(rows.count) }, read: { range in
            let lower = min(range.lowerBound, rows.count)
            // A whole range's rows, then `extra` rows that are not the next ones (past the range,
            // where a short read would say the end, they could not be told from rows).
            return Array(rows[lower ..< min(range.upperBound, rows.count)]) + (range.upperBound <= rows.count ? Array(repeating: "ab stray", count: extra) : [])
        }) { row, query in query.matches(row) }
        let query = TextQuery("ab")
        filtered.filter(query)
        await finished(filtered)
        #expect(matches(filtered) == Self.model(rows, query))
        filtered.filter(TextQuery("abc"))  // a re-check reads ranges of candidates
        await finished(filtered)
        #expect(matches(filtered) == Self.model(rows, TextQuery("abc")))
    }

    @Test func theTotalIsNeverBelowWhatTheScanRead() async throws {
        final class Gate: Sendable {
            private let state = Locked((open: false, waiting: [CheckedContinuation<Void, Never>]()))
            func pass() async {
                await withCheckedContinuation { continuation in
                    let open = state.withLock { state -> Bool in
                        if !state.open { state.waiting.append(continuation) }
                        return state.open
                    }
                    if open { continuation.resume() }
                }
            }
            func open() {
                for continuation in state.withLock({ state in
                    state.open = true
                    defer { state.waiting = [] }
                    return state.waiting
                }) { continuation.resume() }
            }
        }
        struct Unsaid: OffsetPageSource {  // 5,000 rows; it never says how many, and rows from 3,000 on wait for the gate
            typealias Cursor = Int
            typealias Item = String
            let gate: Gate
            func page(at offset: Int, size: Int) async throws -> Page<Int, String> {
                if offset + size > 3_000 { await gate.pass() }
                let end = min(offset + size, 5_000)
                return Page(items: (offset ..< max(offset, end)).map { "number \($0)" }, cursorAfter: end < 5_000 ? end : nil)
            }
        }
        let gate = Gate()
        let rows = PagedRows(source: Unsaid(gate: gate))
        let filtered = FilteredRows(rows: rows) { row, query in query.matches(row) }
        filtered.filter(TextQuery("99"))
        await eventually("the scan waits at row 3,000") { filtered.progress.scanned == 3_000 }
        let waiting = filtered.progress
        #expect(!waiting.isComplete && !waiting.total.isExact)
        #expect(waiting.total.value >= waiting.scanned, "\(waiting)")
        gate.open()
        await finished(filtered)
        let done = filtered.progress
        #expect(done.isComplete && done.scanned == 5_000 && done.total.value >= 5_000, "\(done)")
        #expect(filtered.count == .exact((0 ..< 5_000).filter { String($0).contains("99") }.count))
    }

    @Test func overPagedRowsAndInMemory() async throws {
        struct Numbers: OffsetPageSource {
            typealias Cursor = Int
            typealias Item = String
            func page(at offset: Int, size: Int) async throws -> Page<Int, String> {
                let end = min(offset + size, 5_000)
                return Page(items: (offset ..< max(offset, end)).map { "number \($0)" }, cursorAfter: end < 5_000 ? end : nil, itemsAfter: max(0, 5_000 - end))
            }
        }
        let rows = PagedRows(source: Numbers())
        let filtered = FilteredRows(rows: rows) { row, query in query.matches(row) }
        filtered.filter(TextQuery("99"))
        await finished(filtered)
        #expect(filtered.count == .exact((0 ..< 5_000).filter { String($0).contains("99") }.count))
        let memory = FilteredRows(items: (0 ..< 5_000).map { "number \($0)" }) { row, query in query.matches(row) }
        memory.filter(TextQuery("99"))
        for await change in memory.subscribe() where change.progress.isComplete { break }
        #expect(memory.count == filtered.count)
        #expect(rows.resident.pages == 0)  // the list's own pages were not loaded by the filter
    }
}

@Suite("Text queries")
struct TextQueryTests {
    @Test func smartCase() {
        #expect(TextQuery("fix").matches("Fix the BUILD"))
        #expect(TextQuery("build").matches("Fix the BUILD"))
        #expect(!TextQuery("Fix").matches("fix the build"))
        #expect(TextQuery("Fix").matches("a Fix"))
        #expect(TextQuery("é").matches("café"))
        #expect(!TextQuery("é").matches("CAFÉ"))  // outside ASCII, case matches exactly
        #expect(TextQuery("").matches("anything"))
        #expect(!TextQuery("x").matches(""))
        #expect(TextQuery("fix", caseSensitive: true).matches("fix") && !TextQuery("fix", caseSensitive: true).matches("FIX"))
        #expect(TextQuery("ab").matches("xxab") && TextQuery("ab").matches("aB") && !TextQuery("ab").matches("a b"))
    }

    @Test func narrowing() {
        #expect(TextQuery("abc").narrows(TextQuery("ab")))
        #expect(TextQuery("xabc").narrows(TextQuery("ab")))
        #expect(!TextQuery("ab").narrows(TextQuery("abc")))
        #expect(TextQuery("Abc").narrows(TextQuery("ab")))  // exact case ⊂ either case
        #expect(!TextQuery("abc").narrows(TextQuery("Ab")))  // either case ⊄ exact case
        #expect(TextQuery("ABC").narrows(TextQuery("AB")))
        #expect(TextQuery("a").narrows(TextQuery("")))
    }

    @Test func randomFieldsMatchTheModel() {
        var random = SplitMix64(seed: 3)
        let alphabet = Array("aAbBé \u{1B}")
        for _ in 0 ..< 2_000 {
            let field = String((0 ..< Int.random(in: 0 ... 12, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" })
            let text = String((0 ..< Int.random(in: 1 ... 3, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" })
            let query = TextQuery(text)
            func fold(_ s: String) -> String { String(s.map { $0.isASCII ? Character($0.lowercased()) : $0 }) }
            let expected = query.caseSensitive ? field.contains(text) : fold(field).contains(fold(text))
            #expect(query.matches(field) == expected, "\(text) in \(field)")
        }
    }
}
