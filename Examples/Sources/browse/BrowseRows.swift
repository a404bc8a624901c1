import Avenues
import FileCatalog
import Foundation
import RemoteCatalog
import Synchronization

/// What the browse screen shows and drives: the files of a local folder, or of a remote one.
protocol BrowseRows: Sendable {
    /// How many rows there are (at least, while a remote listing goes on).
    var count: RowCount { get }
    /// Row `row`'s path and size (`nil` size: not known yet), or `nil` if not listed yet.
    func entry(at row: Int) -> (path: String, size: Int64?)?
    /// What row `row` shows in its computed columns.
    func content(at row: Int) -> RowContent
    /// What a pending row shows instead of the spinner (a download's progress), if anything.
    func placeholder(at row: Int) -> String?
    /// Calls `changed` with each row whose content changed, or `nil` when the list itself did.
    func start(_ changed: @escaping @Sendable (Int?) -> Void)
    /// The rows on screen.
    func show(_ rows: Range<Int>)
    /// The screen holds `pageRows` rows; `ahead` rows are prefetched (default: adaptive).
    func resize(pageRows: Int, ahead: Int?)
    /// Stops every load.
    func stop()
    /// The status line's counters.
    var statusFields: [String] { get }
    /// The prefetch window and the scroll rate, when the rows have a prefetcher that estimates them.
    var windowDescription: String? { get }
}

extension BrowseRows {
    var windowDescription: String? { nil }
}

/// A local folder's files: a known list, summaries through a `RowPrefetcher`.
final class LocalRows: BrowseRows {
    let table: FileTable
    let prefetcher: RowPrefetcher<FileRef, FileSummary>

    init(table: FileTable) {
        self.table = table
        // Adaptive: in the scroll simulation it shows fewer placeholders and wastes less work than
        // the fixed window on every workload (Benchmarks/README.md).
        prefetcher = RowPrefetcher(avenue: table.avenue, policy: .adaptive) { [table] in table.key($0) }
    }

    var windowDescription: String? { "window: " + prefetcher.estimates.description }

    var count: RowCount { .exact(table.entries.count) }

    func entry(at row: Int) -> (path: String, size: Int64?)? {
        table.entries.indices.contains(row) ? (table.entries[row].path, table.entries[row].size) : nil
    }

    func content(at row: Int) -> RowContent { RowContent(table.avenue, row: row) }
    func placeholder(at row: Int) -> String? { nil }

    func start(_ changed: @escaping @Sendable (Int?) -> Void) {
        table.avenue.onStateChange = { row in changed(row) }
    }

    func show(_ rows: Range<Int>) { prefetcher.show(rows) }

    /// `--ahead` fixes the window; without it the window adapts (and sizes itself by the screen).
    func resize(pageRows: Int, ahead: Int?) {
        prefetcher.policy = ahead == nil ? .adaptive : .fixed
        prefetcher.ahead = ahead ?? pageRows
        prefetcher.behind = max(2, pageRows / 4)
    }

    func stop() { prefetcher.stop() }

    var statusFields: [String] {
        let status = table.status
        return [
            "in flight \(status.running)", "queued \(status.queued)", "cancelled \(status.cancelled)",
            "cache hits \(status.memoryHits + status.diskHits) (disk \(status.diskHits))",
        ]
    }
}

/// A remote folder's files: listed a page at a time, each visible file downloaded and summarized.
final class RemoteRows: BrowseRows {
    let table: RemoteTable
    /// The change handler, and the rows last shown (whose downloads' progress is watched).
    private let state = Mutex<(changed: (@Sendable (Int?) -> Void)?, shown: Range<Int>)>((nil, 0..<0))

    init(table: RemoteTable) { self.table = table }

    var count: RowCount { table.files.count }

    func entry(at row: Int) -> (path: String, size: Int64?)? {
        // While a file downloads, its size is the one the server announced.
        table.files.item(at: row).map { ($0.path, table.size(at: row) ?? table.progress(at: row)?.expected) }
    }

    func content(at row: Int) -> RowContent { table.content(at: row) }

    func placeholder(at row: Int) -> String? {
        guard let progress = table.progress(at: row), !progress.isComplete, let fraction = progress.fractionCompleted else { return nil }
        return "\(Int(fraction * 100))%"
    }

    func start(_ changed: @escaping @Sendable (Int?) -> Void) {
        state.withLock { $0.changed = changed }
        table.files.onChange = { [weak self] _ in
            changed(nil)
            self?.watchProgress()  // rows just listed may be downloading
        }
        table.summaries.onStateChange = { row in changed(row) }
    }

    func show(_ rows: Range<Int>) {
        state.withLock { $0.shown = rows }
        table.files.show(rows)
        watchProgress()
    }

    private func watchProgress() {
        let (changed, shown) = state.withLock { ($0.changed, $0.shown) }
        table.watchProgress(of: shown) { changed?(nil) }
    }

    func resize(pageRows: Int, ahead: Int?) {}

    func stop() { table.stop() }

    var statusFields: [String] {
        let activity = table.media.activity
        let usage = table.media.usage
        var fields = [
            "downloading \(activity.running)", "queued \(activity.queued)",
            "cancelled \(table.summaries.statistics.loadsCancelled)",
            "cached \(usage.count) (\(TableLayout.formatSize(Int64(usage.size))))",
        ]
        if table.connection.serverReachable == false { fields.insert("server unreachable", at: 0) }
        return fields
    }
}
