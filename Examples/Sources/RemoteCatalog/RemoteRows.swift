import Avenues
import FileCatalog
import Foundation
import Synchronization
import TerminalUI

/// A remote folder's files and folders: listed a page at a time, each shown file downloaded and
/// summarized — only where the list rests, never while G follows a crawl that is still growing.
/// `/` filters by path over the whole tree as you type: the filter walks the listings ahead of the
/// list, and only the matches shown download.
public final class RemoteRows: ListModel {
    /// The rows.
    public let table: RemoteTable
    private let state = Mutex(State())

    private struct State {
        /// The change handler.
        var changed: (@Sendable (Int?) -> Void)?
        /// The rows last shown (whose downloads' progress is watched).
        var shown: Range<Int> = 0 ..< 0
        /// The filter's text while the rows are its matches.
        var filter: String?
        /// The file (its row in the whole tree) to keep selected until the filter finds it.
        var anchor: Int?
        /// A row for the screen to select (the anchor, found).
        var found: ListAction?
        var listening: Task<Void, Never>?
    }

    /// The rows of `table`.
    public init(table: RemoteTable) { self.table = table }

    public var heading: String {
        let count = table.files.count
        let rows = "browse  \(RemoteTable.shown(table.root))  ·  \(counted(count, "row"))" + (count.isExact ? "" : " (listing…)")
        guard let filter = state.withLock({ $0.filter }) else { return rows }
        return "browse  \(RemoteTable.shown(table.root))  ·  “\(filter)”: \(table.filtered.count) of \(table.filtered.progress.total)"
    }

    public func columnHeader(width: Int, palette: Terminal.Palette) -> String? { TableLayout(width: width).header(palette: palette) }

    public var count: RowCount { table.count }

    public func line(at row: Int, width: Int, spinner: String, palette: Terminal.Palette) -> String? {
        guard let file = table.file(at: row) else { return nil }
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

    public func isPending(at row: Int) -> Bool { table.file(at: row) == nil || !table.content(at: row).isSettled }

    public func start(_ changed: @escaping @Sendable (Int?) -> Void) {
        state.withLock { $0.changed = changed }
        table.files.onChange = { [weak self] _ in
            changed(nil)
            self?.table.refreshDetails()  // rows just listed may have files to load
            self?.watchProgress()
        }
        table.summaries.onStateChange = { row in changed(row) }
        // The filter's matches and progress: matches shown may have files to load, and the
        // selection stays on the same file when it matches.
        let listening = Task { [weak self, filtered = table.filtered] in
            for await _ in filtered.subscribe() {
                guard let self else { return }
                self.keepAnchor()
                self.table.refreshDetails()
                self.watchProgress()
                changed(nil)
            }
        }
        state.withLock { $0.listening = listening }
    }

    /// Selects the anchored file once the filter has found it.
    private func keepAnchor() {
        guard let anchor = state.withLock({ $0.filter != nil ? $0.anchor : nil }), let index = table.filtered.index(ofRow: anchor) else { return }
        state.withLock { state in
            state.anchor = nil
            state.found = .select(index)
        }
    }

    public func poll() -> ListAction {
        state.withLock { state in
            defer { state.found = nil }
            return state.found ?? .none
        }
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
            "cached \(usage.count) (\(ByteSize.text(Int64(usage.size))))",
        ]
        if !table.files.count.isExact { fields.insert("folders listed \(table.foldersListed)", at: 0) }
        if let filter = state.withLock({ $0.filter }) {
            let progress = table.filtered.progress
            var field = "“\(filter)”: \(table.filtered.count) matches"
            if !progress.isComplete { field += " · \(progress.scanned) of \(progress.total) listed" }
            if let error = table.filtered.error { field += " · stopped: \(RemoteTree.message(for: error))" }
            fields.insert(field, at: 0)
        }
        if let limit = table.crawlLimit { fields.insert("listing stopped at \(limit)", at: 0) }
        if table.connection.serverReachable == false { fields.insert("server unreachable", at: 0) }
        return fields
    }

    public var keys: [(key: String, does: String)] { [("Enter", "open the downloaded file in a pager")] }

    public var inputPrompt: String? { "filter paths as you type" }

    /// Every keystroke filters anew over the whole tree (a longer text re-checks only the last
    /// matches, then lists on); Enter keeps the filter, Esc (or an empty text) shows every row again
    /// at the selected file.
    public func input(_ text: String?, committed: Bool, selected: Int) -> ListAction {
        let sourceRow = table.isFiltering ? (table.filtered.row(at: selected) ?? 0) : selected
        guard let text, !text.isEmpty else {
            let wasFiltering = state.withLock { state -> Bool in
                defer { state.filter = nil; state.anchor = nil }
                return state.filter != nil
            }
            table.filter(nil)
            guard wasFiltering else { return .none }
            return .select(sourceRow, message: text == nil ? "filter cleared" : nil)
        }
        state.withLock { state in
            // The file selected when the filter began stays the one to return to while typing.
            if state.filter == nil || state.anchor == nil { state.anchor = sourceRow }
            state.filter = text
        }
        table.filter(TextQuery(text))
        keepAnchor()
        if committed { return .message("“\(text)”: Enter kept the filter; / to change it, Esc to clear it") }
        return .select(0)
    }

    public func handle(_ key: Key, selected: Int) -> ListAction {
        if key == .escape, table.isFiltering { return input(nil, committed: false, selected: selected) }
        guard key == .enter else {
            if key == .character("s") { return .message("sorting needs the whole listing on disk: browse a local folder to sort") }
            return .none
        }
        guard let file = table.file(at: selected), !file.isFolder else { return .message("a folder: nothing to page") }
        guard let local = table.localFile(at: selected) else { return .message("not downloaded yet: wait for its row") }
        return Pager.open(local.path)
    }

    public func stop() {
        state.withLock { $0.listening }?.cancel()
        table.stop()
    }
}

