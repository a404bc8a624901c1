/// Rows `range` of a cursor-paged source (one that can only go on from a page it was given), read by
/// walking its pages from the nearest place walked before: a cursor is kept at the start of every
/// `pageSize` rows, so a scan in order reads each page once, and a read behind it (a narrowing
/// re-check, the items of a match shown again) starts at most one page before its rows.
///
/// Memory: one cursor per page walked. Reads may run at once (each walks on its own; a source that
/// de-duplicates its fetches, as listings through `AsyncMedia` do, fetches a page once).
final class CursorWalk<Source: PageSource>: Sendable {
    let source: Source
    let pageSize: Int

    private struct State {
        /// `starts[k]`: the cursor of the page that starts at row `k * pageSize` (`nil` for `k` = 0).
        var starts: [Source.Cursor?] = [nil]
        /// The source's length, once a page said it ended.
        var end: Int?
        /// The rows walked past so far.
        var furthest = 0
    }

    private let state = Locked(State())

    init(source: Source, pageSize: Int) {
        precondition(pageSize >= 1, "a walk's pages hold at least one row")
        self.source = source
        self.pageSize = pageSize
    }

    /// How many rows the source has, as far as the walks went.
    var count: RowCount {
        state.withLock { state in state.end.map { .exact($0) } ?? .atLeast(state.furthest) }
    }

    /// Rows `range` (fewer at the source's end).
    func read(_ range: Range<Int>) async throws -> [Source.Item] {
        guard !range.isEmpty, range.lowerBound >= 0 else { return [] }
        // The page holding the range's first row, or the last page known to start before it.
        var (page, cursor) = state.withLock { state -> (Int, Source.Cursor?) in
            let page = min(range.lowerBound / pageSize, state.starts.count - 1)
            return (page, state.starts[page])
        }
        var items: [Source.Item] = []
        items.reserveCapacity(range.count)
        while true {
            try Task.checkCancellation()
            let start = page * pageSize
            let request = PageRequest(position: cursor.map { .after($0) } ?? .start, size: pageSize)
            let result = try await source.page(request)
            let rows = start ..< start + result.items.count
            // The page's rows in the range (none when the source ended before it).
            let first = max(rows.lowerBound, range.lowerBound), last = min(rows.upperBound, range.upperBound)
            if first < last { items += result.items[(first - start) ..< (last - start)] }
            // A short page ends the source, whatever cursor it gave.
            let next = result.items.count == pageSize ? result.cursorAfter : nil
            state.withLock { state in
                state.furthest = max(state.furthest, rows.upperBound)
                if let next {
                    if state.starts.count == page + 1 { state.starts.append(next) }
                    if let end = state.end, end <= rows.upperBound { state.end = nil }  // it grew
                } else {
                    state.end = rows.upperBound
                    // A source that grows (a log) goes on from this page's start, not from its end.
                    state.starts.removeSubrange(min(state.starts.count, page + 1)...)
                }
            }
            guard let next, rows.upperBound < range.upperBound else { return items }
            page += 1
            cursor = next
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
