import Avenues
import Synchronization

/// A row prefetcher for a screen's details (a diff stat, a download) that moves only where the list
/// rests: while the list moves — a key held down, G following a list that still grows — the loads
/// under way are left alone, none starting for rows that fly past and none cancelled (the rows a
/// PgDn reaches were mostly the window ahead; cancelling them to ask again a moment later does the
/// work twice); where the list rests, the window moves there and what is outside it is cancelled.
///
/// Held PgDn on `history` over git/git started a git process per screen and starved the screen
/// (83 % of the CPU in git, the screen 12,000 rows behind after 400 presses).
public final class RestingPrefetcher<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let prefetcher: RowPrefetcher<Key, Value>
    /// The rows last shown, and whether the list rested there.
    private let shown = Mutex<(rows: Range<Int>, resting: Bool)?>(nil)

    /// Details of `avenue`'s rows, `ahead` rows past the screen in the scroll direction; `key` says
    /// what a row needs loaded (`nil`: nothing, or not listed yet).
    public init(avenue: Avenue<Int, Key, Value>, ahead: Int, key: @escaping @Sendable (Int) -> Key?) {
        prefetcher = RowPrefetcher(avenue: avenue, ahead: ahead, behind: 0, key: key)
    }

    /// The list shows `rows`; their details load if it rests there.
    public func show(_ rows: Range<Int>, resting: Bool) {
        shown.withLock { $0 = (rows, resting) }
        refresh()
    }

    /// Shows the rows last shown again, if the list rests there: rows listed since may have keys.
    public func refresh() {
        guard let (rows, resting) = shown.withLock({ $0 }), resting else { return }
        prefetcher.show(rows)
    }

    /// The screens (their first rows) the list expects to show soon: their details warm at
    /// background priority (``Avenues/RowPrefetcher/hint(_:)``), wherever the list is.
    public func hint(_ tops: [Int]) {
        prefetcher.hint(tops)
    }

    /// The screens hinted.
    public var hints: [Int] { prefetcher.hints }

    /// Cancels every load and forgets the rows.
    public func stop() {
        shown.withLock { $0 = nil }
        prefetcher.stop()
    }
}
