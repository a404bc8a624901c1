import Testing
@testable import Avenues
import AvenuesTestSupport

/// A list of rows (row `n` is `n`) whose pages wait until the test answers them, with full, short
/// or failed pages as the test decides. It can grow and shrink.
final class HeldPages: Sendable {
    struct Request: Sendable {
        let id: Int
        let offset: Int
        let size: Int
        let continuation: CheckedContinuation<Page<Int, Int>, any Error>
    }

    let count: Shared<Int>
    private let requests = Shared([Request]())
    private let nextID = Shared(0)
    /// Requests made since the counter was last reset.
    let asked = Shared(0)

    init(count: Int) { self.count = Shared(count) }

    var pending: Int { requests.value.count }

    /// Where the waiting requests start.
    var pendingOffsets: [Int] { requests.value.map(\.offset) }

    func page(at offset: Int, size: Int) async throws -> Page<Int, Int> {
        let id = nextID.withLock { id in
            id += 1
            return id
        }
        asked.withLock { $0 += 1 }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelled = requests.withLock { requests -> Bool in
                    if Task.isCancelled { return true }
                    requests.append(Request(id: id, offset: offset, size: size, continuation: continuation))
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let request = requests.withLock { requests -> Request? in
                guard let index = requests.firstIndex(where: { $0.id == id }) else { return nil }
                return requests.remove(at: index)
            }
            request?.continuation.resume(throwing: CancellationError())
        }
    }

    enum Answer { case full, short, failure }

    /// Answers one waiting request (the `pick`-th, modulo), as `answer` says.
    func answer(_ pick: Int, _ answer: Answer, saysTotal: Bool, random: inout SplitMix64) {
        guard let request = requests.withLock({ requests -> Request? in
            requests.isEmpty ? nil : requests.remove(at: pick % requests.count)
        }) else { return }
        if case .failure = answer {
            request.continuation.resume(throwing: TestError("page at \(request.offset) failed"))
            return
        }
        let total = count.value
        let wanted = answer == .short ? Int.random(in: 1...max(1, request.size), using: &random) : request.size
        let end = min(total, Saturating.add(request.offset, wanted))
        let items = request.offset < end ? Array(request.offset ..< end) : []
        let page = Page(items: items, cursorAfter: end < total ? end : nil, itemsAfter: saysTotal ? max(0, total - end) : nil)
        request.continuation.resume(returning: page)
    }
}

struct HeldOffsetSource: OffsetPageSource {
    typealias Cursor = Int
    typealias Item = Int
    let pages: HeldPages
    func page(at offset: Int, size: Int) async throws -> Page<Int, Int> { try await pages.page(at: offset, size: size) }
}

struct HeldCursorSource: PageSource {
    let pages: HeldPages
    func page(_ request: PageRequest<Int>) async throws -> Page<Int, Int> {
        try await pages.page(at: request.cursor ?? 0, size: request.size)
    }
}

/// Seeded random operation sequences against ``PagedRows`` — shows near and far, refreshes, a list
/// that grows or shrinks, pages answered full, short or failed in any order — with its promises
/// checked after every step: residency within `maxResident` plus one page, every item at its row, a
/// count never above the list's length (unless it shrank since the last refresh: pages held from
/// before still count); a visible row the count says exists either shows its item or is loading or
/// failed; no two loads of one page at once, no more loads at once than `maxConcurrentLoads`, none
/// for a page past the window and its prefetch, nor below it farther than its prefetch or a walk to
/// it (from a source that must be walked: none but the walk's next page), and only the probe while
/// the end is looked for; and, once every load is answered, every visible row loaded — the loads
/// started by the loads before them, not by showing the window again — reached from the nearest
/// page (never by walking a list an offset source can jump into).
@Suite("Paged rows properties", .timeLimit(.minutes(5)))
struct PagedRowsPropertyTests {
    static let seeds: ClosedRange<UInt64> = 1...20
    /// 100,000 steps in all (a tenth under ThreadSanitizer: these run on one thread).
    static let stepsPerSeed = ThreadSanitizer.annotations == nil ? 5_000 : 500

    @Test func pagedRowsKeepTheirPromisesUnderRandomOperations() async {
        // On a thread of its own: the sequences never suspend, and would hold a thread of the
        // small cooperative pool every other test needs.
        let failure = await onOwnThread { () -> String? in
            for seed in Self.seeds {
                let jumps = seed.isMultiple(of: 2) == false
                let failure = jumps ? Self.run(seed: seed, steps: Self.stepsPerSeed, source: HeldOffsetSource.self)
                    : Self.run(seed: seed, steps: Self.stepsPerSeed, source: HeldCursorSource.self)
                if let failure { return "seed \(seed) (\(jumps ? "offset" : "cursor-only") source): \(failure)" }
            }
            return nil
        }
        if let failure { Issue.record("\(failure)") }
    }

    protocol HeldSource: PageSource where Cursor == Int, Item == Int {
        init(pages: HeldPages)
    }

    static func run<Source: HeldSource>(seed: UInt64, steps: Int, source: Source.Type) -> String? {
        var random = SplitMix64(seed: seed)
        let executor = HeldExecutor()
        let size = [1, 3, 10, 50].randomElement(using: &random) ?? 10
        // Up to 150 pages: a walk through a cursor-only list costs a load per page.
        let pages = HeldPages(count: Int.random(in: 0 ... 150 * size, using: &random))
        let configuration = PagingConfiguration(
            pageSize: size, prefetchDistance: Int.random(in: 0...(3 * size), using: &random),
            maxResident: Int.random(in: 0...(30 * size), using: &random)
        )
        let maxConcurrentLoads = Int.random(in: 1...3, using: &random)
        let rows = PagedRows(
            source: Source(pages: pages), configuration: configuration, pageCache: nil, maxConcurrentLoads: maxConcurrentLoads,
            retryPolicy: RetryPolicy(attempts: .max, base: .zero, cap: .zero, jitter: 0), executor: executor,
            retrySleep: { _ in try await Task.sleep(for: .seconds(3_600)) }
        )
        let bound = configuration.maxResident + size
        let screen = Int.random(in: 1...40, using: &random)
        let saysTotal = Bool.random(using: &random)
        var visible = 0 ..< screen
        let firstScreen = visible
        /// The list grew since the last full refresh: an exact count may be the old length.
        var grown = false
        /// The list shrank since the last full refresh: pages held from before may still hold rows
        /// it no longer has, and the count may be above its length.
        var shrunk = false
        /// A full refresh came after the list shrank: once the end is shown again, the count must
        /// be the new length.
        var refreshedSinceShrinking = false
        var log = RecentSteps()
        /// A page failed since the window was last shown: only a show loads it again.
        var failedSinceShow = false
        rows.show(visible)
        executor.runAll()

        /// What must hold after every step.
        func check(_ step: Int) -> String? {
            let resident = rows.resident.rows
            if resident > bound { return "step \(step): \(resident) rows resident, bound \(bound) (\(log))" }
            // No load runs for a page past the window's last and the prefetch ahead of it: a page
            // the window left is cancelled as it leaves.
            let settings = rows.machine.withLock { $0.settings }
            let first = visible.lowerBound / size
            var lastShown = max(first, (visible.upperBound - 1) / size)
            if visible == firstScreen { lastShown = max(lastShown, first + settings.initialPages - 1) }  // the first screen loads more
            let lastPage = Saturating.add(min(lastShown, first + settings.maxVisiblePages - 1), settings.aheadPages)
            if let far = pages.pendingOffsets.first(where: { $0 / size > lastPage }) {
                return "step \(step): a load of page \(far / size) runs for a window of pages \(first)... (the last it may load is \(lastPage)) (\(log))"
            }
            // Nor, from a source that can start anywhere, for a page below the window farther than
            // the prefetch behind it or a walk to it — unless the window is past an end being looked for.
            let probe = rows.machine.withLock { $0.endProbe(forWindowAt: first) }
            if let probe, let other = pages.pendingOffsets.first(where: { $0 / size != probe }) {
                return "step \(step): a load of page \(other / size) runs while the end is looked for at page \(probe) (\(log))"
            }
            let firstPage = first - max(settings.aheadPages, settings.reachPages)
            if Source.self == HeldOffsetSource.self, probe == nil, let far = pages.pendingOffsets.first(where: { $0 / size < firstPage }) {
                return "step \(step): a load of page \(far / size) runs for a window of pages \(first)... (the first it may load is \(firstPage); prefetcher \(rows.prefetcher.window.keys.sorted())) (\(log))"
            }
            // From a source that must be walked, a page below the window and its prefetch loads
            // only as the walk's next page.
            if Source.self == HeldCursorSource.self, probe == nil {
                let walk = rows.machine.withLock { $0.walkFrontier(below: first) }
                if let far = pages.pendingOffsets.first(where: { $0 / size < first - settings.aheadPages && $0 / size != walk }) {
                    return "step \(step): a load of page \(far / size) runs for a window of pages \(first)... walked from page \(walk.map(String.init) ?? "none") (\(log))"
                }
            }
            // A visible row the list is known to have shows its item, or is loading or failed.
            let known = rows.count.value
            let windowEnd = Saturating.add(first * size, Saturating.multiply(settings.maxVisiblePages, size))
            let shownKnown = visible.lowerBound ..< max(visible.lowerBound, min(known, windowEnd))
            for row in visible.clamped(to: shownKnown) where rows.item(at: row) == nil {
                switch rows.state(at: row) {
                case .loading, .failed, .stale(true, _), .stale(_, _?): continue
                default:
                    let machine = rows.machine.withLock { "end \(String(describing: $0.endPage)), total \(String(describing: $0.total)), atMost \(String(describing: $0.endAtMost)), key \(String(describing: $0.key(for: row / size))), walkedTo \($0.walkedTo)" }
                    return "step \(step): visible row \(row) of \(known) known has no item and is \(rows.state(at: row)) (\(machine), pending \(pages.pendingOffsets), window \(rows.prefetcher.window.keys.sorted())) (\(log))"
                }
            }
            let offsets = pages.pendingOffsets
            if Set(offsets).count < offsets.count { return "step \(step): two loads of one page at once (\(offsets.sorted())) (\(log))" }
            if pages.pending > maxConcurrentLoads { return "step \(step): \(pages.pending) loads at once, at most \(maxConcurrentLoads) allowed (\(log))" }
            let length = pages.count.value
            let count = rows.count
            if !shrunk, count.value > length { return "step \(step): count \(count) above the list's \(length) (\(log))" }
            for row in visible.clamped(to: 0 ..< visible.lowerBound + 64) {
                if let item = rows.item(at: row), item != row { return "step \(step): row \(row) shows \(item) (\(log))" }
            }
            return nil
        }

        /// Answers every load fully until the window is loaded; what the window asked for meanwhile.
        func settle(_ step: Int) -> String? {
            pages.asked.withLock { $0 = 0 }
            var rounds = 0
            while true {
                // Shown again only to re-prepare pages that failed (their retry wait is zero): every
                // other load must start without it, as the loads before it end.
                if rounds == 0, failedSinceShow {
                    rows.show(visible)
                    failedSinceShow = false
                }
                executor.runAll()
                if pages.pending == 0 { break }
                while pages.pending > 0 {
                    pages.answer(0, .full, saysTotal: saysTotal, random: &random)
                    executor.runAll()
                }
                rounds += 1
                if rounds > 50_000 { return "step \(step): the window never settled (\(log))" }
            }
            let length = pages.count.value
            let count = rows.count
            // Every visible row the list has, within what one window holds, is loaded.
            let pagesShown = rows.machine.withLock { $0.settings.maxVisiblePages }
            let firstRow = visible.lowerBound / size * size
            let shown = visible.lowerBound ..< min(visible.upperBound, Saturating.add(firstRow, Saturating.multiply(pagesShown, size)))
            // Rows the list gained after its end was seen — the end page, or an empty page past
            // the rows then known — appear only after a refresh.
            let seenEnd: Int? = count.isExact ? count.value : rows.machine.withLock { $0.endAtMost }
            let known = (grown || shrunk) ? min(length, seenEnd ?? length) : length
            for row in shown where row < known {
                guard rows.item(at: row) == row else {
                    let machine = rows.machine.withLock { "walkedTo \($0.walkedTo), cursors \($0.cursors.keys.sorted().suffix(5)), end \(String(describing: $0.endPage)), total \(String(describing: $0.total)), atMost \(String(describing: $0.endAtMost)), size \(size)" }
                    return "step \(step): visible row \(row) of \(length) did not load (item \(String(describing: rows.item(at: row))), count \(count), state \(rows.state(at: row)), \(machine), window \(rows.prefetcher.window.keys.sorted())) (\(log))"
                }
            }
            if !grown, !shrunk, count.isExact, visible.upperBound >= length, count.value != length, visible.lowerBound < length {
                return "step \(step): the end was shown but the count is \(count), not \(length) (\(log))"
            }
            if shrunk, refreshedSinceShrinking, !grown, shown.lowerBound < length, shown.upperBound >= length {
                // The end is shown again after a refresh: the count is the list's length again.
                guard count == .exact(length) else {
                    return "step \(step): the end of a shrunk list was shown after a refresh but the count is \(count), not \(length) (\(log))"
                }
                shrunk = false
                refreshedSinceShrinking = false
            }
            // An offset source is never walked far: the window's pages, their prefetch, a few
            // probes for an unknown end, and the requests that complete short pages.
            let asked = pages.asked.value
            if Source.self == HeldOffsetSource.self, asked > 12 * (shown.count / size + 8) + 200 {
                return "step \(step): \(asked) requests to settle a window of \(shown.count) rows (\(log))"
            }
            return nil
        }

        for step in 0 ..< steps {
            let roll = Int.random(in: 0..<100, using: &random)
            switch roll {
            case 0..<12:
                let top = Int.random(in: 0 ... max(0, pages.count.value + 50), using: &random)  // far, past the end too
                visible = top ..< top + screen
                rows.show(visible)
                failedSinceShow = false
                let shown = visible
                log.append("jump \(shown)")
            case 12..<30:
                let move = Int.random(in: -3 * screen ... 3 * screen, using: &random)
                let top = max(0, visible.lowerBound + move)
                visible = top ..< top + screen
                rows.show(visible)
                failedSinceShow = false
                let shown = visible
                log.append("move \(shown)")
            case 30..<62, 91..<96:
                pages.answer(Int.random(in: 0..<1_000, using: &random), .full, saysTotal: saysTotal, random: &random)
                log.append("answer full")
            case 62..<72:
                pages.answer(Int.random(in: 0..<1_000, using: &random), .short, saysTotal: saysTotal, random: &random)
                log.append("answer short")
            case 72..<78:
                pages.answer(Int.random(in: 0..<1_000, using: &random), .failure, saysTotal: saysTotal, random: &random)
                failedSinceShow = true
                log.append("answer failed")
            case 78..<81:
                rows.refresh()
                grown = false
                refreshedSinceShrinking = shrunk
                log.append("refresh")
            case 81..<85:
                let row = Int.random(in: 0 ... max(0, rows.count.value), using: &random)
                rows.refresh(after: row)
                log.append("refresh after \(row)")
            case 85..<87:
                let length = pages.count.withLock { count -> Int in
                    count += Int.random(in: 1...200, using: &random)
                    return count
                }
                grown = true
                log.append("grow to \(length)")
            case 87:
                let length = pages.count.withLock { count -> Int in
                    count = Int.random(in: 0 ... count, using: &random)
                    return count
                }
                shrunk = true
                refreshedSinceShrinking = false
                log.append("shrink to \(length)")
            case 88..<91:
                rows.show(0 ..< .max)
                rows.show(visible)
                failedSinceShow = false
                log.append("show everything, then the window")
            default:
                executor.runAll()
                if let failure = check(step) ?? settle(step) { return failure }
                log.append("settle")
                continue
            }
            executor.runAll()
            if let failure = check(step) { return failure }
        }
        rows.stop()
        executor.runAll()
        return nil
    }
}

extension HeldOffsetSource: PagedRowsPropertyTests.HeldSource {}
extension HeldCursorSource: PagedRowsPropertyTests.HeldSource {}
