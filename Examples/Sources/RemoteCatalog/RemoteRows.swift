import Avenues
import FileCatalog
import Foundation
import Synchronization
import TerminalUI

/// A remote folder's files and folders: listed a page at a time, each shown file downloaded and
/// summarized — only where the list rests, never while G follows a crawl that is still growing.
public final class RemoteRows: ListModel {
    /// The rows.
    public let table: RemoteTable
    /// The change handler, and the rows last shown (whose downloads' progress is watched).
    private let state = Mutex<(changed: (@Sendable (Int?) -> Void)?, shown: Range<Int>)>((nil, 0..<0))

    /// The rows of `table`.
    public init(table: RemoteTable) { self.table = table }

    public var heading: String {
        let count = table.files.count
        return "browse  \(table.root.absoluteString)  ·  \(count) rows" + (count.isExact ? "" : " (listing…)")
    }

    public func columnHeader(width: Int, palette: Terminal.Palette) -> String? { TableLayout(width: width).header(palette: palette) }

    public var count: RowCount { table.files.count }

    public func line(at row: Int, width: Int, spinner: String, palette: Terminal.Palette) -> String? {
        guard let file = table.files.item(at: row) else { return nil }
        let content = table.content(at: row)
        let placeholder: String
        if let progress = table.progress(at: row), !progress.isComplete, let fraction = progress.fractionCompleted {
            placeholder = "\(Int(fraction * 100))%"
        } else {
            placeholder = spinner
        }
        let size = file.isFolder ? nil : (table.size(at: row) ?? table.progress(at: row)?.expected)
        return TableLayout(width: width).row(path: file.path, size: size, content, placeholder: placeholder, palette: palette)
    }

    public func isPending(at row: Int) -> Bool { table.files.item(at: row) == nil || !table.content(at: row).isSettled }

    public func start(_ changed: @escaping @Sendable (Int?) -> Void) {
        state.withLock { $0.changed = changed }
        table.files.onChange = { [weak self] _ in
            changed(nil)
            self?.table.refreshDetails()  // rows just listed may have files to load
            self?.watchProgress()
        }
        table.summaries.onStateChange = { row in changed(row) }
    }

    public func show(_ rows: Range<Int>, resting: Bool) {
        state.withLock { $0.shown = rows }
        // Following a growing list's end (G) or moving fast: list, but download only where it rests.
        table.show(rows, details: resting)
        watchProgress()
    }

    private func watchProgress() {
        let (changed, shown) = state.withLock { ($0.changed, $0.shown) }
        table.watchProgress(of: shown) { changed?(nil) }
    }

    public var statusFields: [String] {
        let activity = table.media.activity
        let usage = table.media.usage
        var fields = [
            "downloading \(activity.running)", "queued \(activity.queued)",
            "cancelled \(table.summaries.statistics.loadsCancelled)",
            "cached \(usage.count) (\(TableLayout.formatSize(Int64(usage.size))))",
        ]
        if !table.files.count.isExact { fields.insert("folders listed \(table.foldersListed)", at: 0) }
        if let limit = table.crawlLimit { fields.insert("listing stopped at \(limit)", at: 0) }
        if table.connection.serverReachable == false { fields.insert("server unreachable", at: 0) }
        return fields
    }

    public var keys: [(key: String, does: String)] { [("Enter", "open the downloaded file in a pager")] }

    public func handle(_ key: Key, selected: Int) -> ListAction {
        guard key == .enter else {
            if key == .character("s") { return .message("sorting needs the whole listing on disk: browse a local folder to sort") }
            return .none
        }
        guard let file = table.files.item(at: selected), !file.isFolder else { return .message("a folder: nothing to page") }
        guard let local = table.localFile(at: selected) else { return .message("not downloaded yet: wait for its row") }
        return Pager.open(local.path)
    }

    public func stop() { table.stop() }
}

