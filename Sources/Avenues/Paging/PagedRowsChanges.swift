/// The changes of a ``PagedRows``, as an async sequence of page-sized row ranges; see
/// ``PagedRows/subscribe()``. A reader that falls behind holds at most one event per page.
public struct PagedRowsChanges: AsyncSequence, Sendable {
    /// Rows whose page changed, with the count then.
    public typealias Element = PagedRowsChange
    /// The sequence never throws.
    public typealias Failure = Never

    let pages: AvenueChanges<Int>
    let pageSize: Int
    let count: @Sendable () -> RowCount

    /// An iterator over this subscription's changes. The changes are buffered per subscription, so
    /// a second iterator shares (and splits) them: subscribe once per reader.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(pages: pages.makeAsyncIterator(), pageSize: pageSize, count: count)
    }

    /// Reads the changes one by one, suspending while none is waiting; ends when the rows are gone.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var pages: AvenueChanges<Int>.AsyncIterator
        let pageSize: Int
        let count: @Sendable () -> RowCount

        /// The next change, or `nil` when the rows are gone or the task is cancelled.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async -> PagedRowsChange? {
            guard let event = await pages.next(isolation: actor) else { return nil }
            // Saturating: the last page of a list as long as the integers ends past them.
            let start = Saturating.multiply(event.index, pageSize)
            return PagedRowsChange(rows: start ..< Saturating.add(start, pageSize), count: count())
        }

        /// The next change, or `nil` when the rows are gone or the task is cancelled.
        public mutating func next() async -> PagedRowsChange? {
            await next(isolation: nil)
        }
    }
}

extension PagedRows {
    /// A new subscription to the rows' changes — a page loaded, failed or was cancelled, or the
    /// count changed — as an async sequence of the page's rows, from this call on; it ends when the
    /// rows are released. Subscribe before showing rows, so no change is missed.
    public func subscribe() -> PagedRowsChanges {
        let buffer = ChangeSubscription<Int> { _, _ in true }  // pages are told whether shown or not
        let id = listeners.withLock { $0.list.add(.subscription(buffer)) }
        let subscription = AvenueChanges<Int>.Subscription(buffer: buffer) { [weak self] in
            _ = self?.listeners.withLock { $0.list.remove(id) }
        }
        return PagedRowsChanges(pages: AvenueChanges(subscription: subscription), pageSize: configuration.pageSize) { [weak self] in
            self?.count ?? .atLeast(0)
        }
    }
}
