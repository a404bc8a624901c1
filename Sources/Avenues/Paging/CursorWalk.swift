/// Rows `range` of a cursor-paged source (one that can only go on from a page it was given), read by
/// walking its pages from the nearest place walked before: a cursor is kept at the start of pages
/// walked, so a scan in order reads each page once, and a read behind it (a narrowing re-check, the
/// items of a match shown again) starts a little before its rows.
///
/// Memory is bounded whatever the source's length: at most `maxCheckpoints` cursors are kept, at
/// every `stride`-th page; when they would be more, every other one goes and the stride doubles (so
/// a read starts at most `stride` pages before its rows). Pages are numbered as ``PagedRows``
/// numbers them: a page shorter than asked but with a cursor is completed from that cursor, and
/// items beyond what was asked are dropped. Reads may run at once (each walks on its own; a source
/// that de-duplicates its fetches, as listings through `AsyncMedia` do, fetches a page once).
final class CursorWalk<Source: PageSource>: Sendable {
    let source: Source
    let pageSize: Int
    let maxCheckpoints: Int

    private struct State {
        /// `(page, cursor)`: the cursor that starts page `page` (`nil`: the first page), ascending,
        /// every `stride`-th page.
        var checkpoints: [(page: Int, cursor: Source.Cursor?)] = [(0, nil)]
        /// The page each checkpoint's cursor starts: a page that gives one of them for a page after
        /// it loops back (a "next" link pointing back), and the walk would go round for ever.
        var checkpointOf: [Source.Cursor: Int] = [:]
        var stride = 1
        /// The source's length, once a page said it ended.
        var end: Int?
        /// The rows walked past so far.
        var furthest = 0

        /// Drops the checkpoints `dropped` says, and their cursors' pages.
        mutating func removeCheckpoints(where dropped: ((page: Int, cursor: Source.Cursor?)) -> Bool) {
            for checkpoint in checkpoints where dropped(checkpoint) {
                if let cursor = checkpoint.cursor, checkpointOf[cursor] == checkpoint.page { checkpointOf[cursor] = nil }
            }
            checkpoints.removeAll(where: dropped)
        }

        /// The last checkpoint at or before `page`.
        func checkpoint(atOrBefore page: Int) -> (page: Int, cursor: Source.Cursor?) {
            var low = 0, high = checkpoints.count - 1
            while low < high {
                let middle = (low + high + 1) / 2
                if checkpoints[middle].page <= page { low = middle } else { high = middle - 1 }
            }
            return checkpoints[low]
        }
    }

    private let state = Locked(State())

    init(source: Source, pageSize: Int, maxCheckpoints: Int = 4_096) {
        precondition(pageSize >= 1, "a walk's pages hold at least one row")
        precondition(maxCheckpoints >= 2, "a walk keeps at least two checkpoints")
        self.source = source
        self.pageSize = pageSize
        self.maxCheckpoints = maxCheckpoints
    }

    /// How many rows the source has, as far as the walks went.
    var count: RowCount {
        state.withLock { state in state.end.map { .exact($0) } ?? .atLeast(state.furthest) }
    }

    /// The cursors kept, and the pages between them.
    var checkpoints: (count: Int, stride: Int) { state.withLock { ($0.checkpoints.count, $0.stride) } }

    /// Rows `range` (fewer at the source's end).
    func read(_ range: Range<Int>) async throws -> [Source.Item] {
        guard !range.isEmpty, range.lowerBound >= 0 else { return [] }
        var (page, cursor) = state.withLock { $0.checkpoint(atOrBefore: range.lowerBound / pageSize) }
        var items: [Source.Item] = []
        items.reserveCapacity(min(range.count, 4_096))  // a range to Int.max asks for the rest
        while true {
            try Task.checkCancellation()
            let start = Saturating.multiply(page, pageSize)
            let (pageItems, next) = try await fetchPage(after: cursor)
            let rows = start ..< start + pageItems.count
            // The page's rows in the range (none when the source ended before it).
            let first = max(rows.lowerBound, range.lowerBound), last = min(rows.upperBound, range.upperBound)
            if first < last { items += pageItems[(first - start) ..< (last - start)] }
            let loops = record(page: page, rows: rows, next: next)
            guard !loops, let next, rows.upperBound < range.upperBound else { return items }
            page += 1
            cursor = next
        }
    }

    /// One page of `pageSize` items after `cursor`, completed from the source's cursor when it gave
    /// fewer, its extra items dropped; the cursor after it, `nil` at the end.
    private func fetchPage(after cursor: Source.Cursor?) async throws -> ([Source.Item], Source.Cursor?) {
        var items: [Source.Item] = []
        var position = cursor
        while true {
            let result = try await source.page(PageRequest(position: position.map { .after($0) } ?? .start, size: pageSize - items.count))
            items += result.items.prefix(pageSize - items.count)
            // No cursor, nothing new, or the cursor asked with (a source going round): the end.
            guard let next = result.cursorAfter, !result.items.isEmpty, next != position else { return (items, nil) }
            if items.count == pageSize { return (items, next) }
            position = next
            try Task.checkCancellation()
        }
    }

    /// Records what page `page` gave; returns whether its cursor loops back (the walk ends there).
    private func record(page: Int, rows: Range<Int>, next: Source.Cursor?) -> Bool {
        state.withLock { state in
            state.furthest = max(state.furthest, rows.upperBound)
            let loops = next.flatMap { state.checkpointOf[$0] }.map { $0 <= page } ?? false
            guard let next, !loops else {
                // The end (or a loop, which ends the list there as ``PagedRows`` ends it).
                state.end = rows.upperBound
                // A source that grows (a log) goes on from the last checkpoint, not from past its end.
                state.removeCheckpoints { $0.page > page }
                return loops
            }
            if let end = state.end, end <= rows.upperBound { state.end = nil }  // it grew
            let following = page + 1
            guard following % state.stride == 0, let last = state.checkpoints.last, following > last.page else { return false }
            state.checkpoints.append((following, next))
            state.checkpointOf[next] = following
            if state.checkpoints.count > maxCheckpoints {
                state.stride *= 2
                let stride = state.stride
                state.removeCheckpoints { $0.page % stride != 0 }
            }
            return false
        }
    }
}

extension FilteredRows {
    /// A filter over the rows of a ``PagedRows`` whose source goes on only from a cursor (a
    /// crawl, a token-paged API): the scan walks the source's pages itself, in order, keeping a
    /// cursor every page so the items of matches shown later are read from the nearest one; the
    /// list's own pages and memory bound are left alone.
    ///
    /// The source is asked for pages of the list's ``PagingConfiguration/pageSize``; its total, for
    /// ``progress``, is the larger of what the list and the scan have seen.
    public convenience init<Source: PageSource>(
        rows: PagedRows<Source>,
        chunk: Int = 1_000,
        maxResident: Int = 1_000,
        priority: TaskPriority = .utility,
        matches: @escaping @Sendable (Item, TextQuery) -> Bool
    ) where Source.Item == Item {
        let walk = CursorWalk(source: rows.source, pageSize: rows.configuration.pageSize)
        self.init(
            chunk: chunk, maxResident: maxResident, priority: priority,
            count: { [weak rows] in
                let walked = walk.count
                guard let listed = rows?.count, !walked.isExact else { return walked }
                return listed.isExact ? listed : .atLeast(max(listed.value, walked.value))
            },
            read: { range in try await walk.read(range) }, matches: matches
        )
    }
}
