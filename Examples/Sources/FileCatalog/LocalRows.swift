import Avenues
import Foundation
import Synchronization
import TerminalUI

/// How a file table is sorted (`s` goes to the next).
public enum SortOrder: String, Sendable, CaseIterable {
    case path, size, lines

    /// The order after this one.
    public var next: SortOrder {
        let all = Self.allCases
        return all[((all.firstIndex(of: self) ?? 0) + 1) % all.count]
    }
}

/// A local folder's files and folders as a full-screen list (`browse DIR`, `pages DIR`): a known list, summaries through a `RowPrefetcher`, sorted by
/// path, size (known at once) or lines (sorted as they load).
public final class LocalRows: ListModel {
    let table: FileTable
    let prefetcher: RowPrefetcher<FileRef, FileSummary>
    let title: String
    let tool: String
    private let sorting: Sorting

    /// The order of the rows, shared with the prefetcher's key function.
    private final class Sorting: Sendable {
        struct State {
            var sort = SortOrder.path
            /// Only the entries whose path matches, when set.
            var filter: TextQuery?
            /// Display row → entry index.
            var order: [Int]
            var showsWindow = false
            /// Summaries arrived since the last sort by lines.
            var resortDue = false
            var lastSort = ContinuousClock.now
        }

        let state: Mutex<State>

        init(count: Int) { state = Mutex(State(order: Array(0..<count))) }

        func entry(at row: Int) -> Int? {
            state.withLock { $0.order.indices.contains(row) ? $0.order[row] : nil }
        }
    }

    /// `ahead`: rows prefetched past the screen (`nil`: adaptive); `tool` names the program in
    /// the heading.
    public init(table: FileTable, title: String, tool: String = "browse", ahead: Int?) {
        self.table = table
        self.title = title
        self.tool = tool
        let sorting = Sorting(count: table.entries.count)
        self.sorting = sorting
        prefetcher = RowPrefetcher(avenue: table.avenue, ahead: ahead ?? 40, policy: ahead == nil ? .adaptive : .fixed) { [table] row in
            sorting.entry(at: row).flatMap(table.key)
        }
    }

    public var heading: String {
        let kinds = table.kinds
        let (sort, filter, shown) = sorting.state.withLock { ($0.sort, $0.filter, $0.order.count) }
        let matches = filter.map { "  ·  “\($0.text)”: \(shown) of \(table.entries.count)" } ?? ""
        return "\(tool)  \(title)  ·  \(counted(kinds.files, "file")), \(counted(kinds.folders, "folder"))" + matches + (sort == .path ? "" : "  ·  by \(sort.rawValue)")
    }

    public func columnHeader(width: Int, palette: Terminal.Palette) -> String? { TableLayout(width: width).header(palette: palette) }

    public var count: RowCount { .exact(sorting.state.withLock { $0.order.count }) }

    public func start(_ changed: @escaping @Sendable (Int?) -> Void) {
        table.avenue.onStateChange = { [weak self] row in
            self?.sorting.state.withLock { if $0.sort == .lines { $0.resortDue = true } }
            changed(row)
        }
    }

    public func show(_ rows: Range<Int>, resting: Bool) {
        if resting { resortIfDue() }
        // The end (G) is where a list is most often jumped to: its screen warms in the background.
        prefetcher.hint([max(0, count.value - rows.count)])
        prefetcher.show(rows)
    }

    public var hints: [Int] { prefetcher.hints }

    private func entry(at row: Int) -> Int? {
        sorting.entry(at: row)
    }

    /// What row `row` shows in its computed columns now.
    public func content(at row: Int) -> RowContent {
        guard let index = entry(at: row) else { return .pending }
        return RowContent(table.avenue, entry: table.entries[index], row: row)
    }

    public func line(at row: Int, width: Int, spinner: String, palette: Terminal.Palette) -> String? {
        guard let index = entry(at: row) else { return nil }
        let entry = table.entries[index]
        // A large file's summary says how far it has read.
        let placeholder = table.progress.bytesRead(of: entry.ref).map { spinner + " " + SummaryProgress.percent($0, of: entry.size) } ?? spinner
        return TableLayout(width: width).row(entry, content(at: row), placeholder: placeholder, palette: palette)
    }

    public func isPending(at row: Int) -> Bool { !content(at: row).isSettled }

    public var statusFields: [String] {
        let status = table.status
        var fields = [
            "in flight \(status.running)", "queued \(status.queued)", "cancelled \(status.cancelled)",
            "cache hits \(status.memoryHits + status.diskHits) (disk \(status.diskHits))",
        ]
        if sorting.state.withLock({ $0.showsWindow }) { fields.insert("window: " + prefetcher.estimates.description, at: 0) }
        return fields
    }

    public var keys: [(key: String, does: String)] {
        [("Enter", "open the file in a pager"), ("s", "sort by path, size, lines (as they load)"), ("w", "show the prefetch window")]
    }

    public var inputPrompt: String? { "filter paths as you type" }

    /// Every keystroke filters the paths (known before any row loads, so at once); only the rows
    /// shown load their summaries. Enter keeps the filter, Esc or an empty text clears it; the
    /// selected entry stays selected while it matches.
    public func input(_ text: String?, committed: Bool, selected: Int) -> ListAction {
        let keep = entry(at: selected)
        let query = text.flatMap { $0.isEmpty ? nil : TextQuery($0) }
        let changed = sorting.state.withLock { state -> Bool in
            defer { state.filter = query }
            return state.filter != query
        }
        if changed { resort() }
        let row = keep.flatMap { kept in sorting.state.withLock { $0.order.firstIndex(of: kept) } } ?? 0
        if query == nil { return .select(row, message: text == nil && changed ? "filter cleared" : nil) }
        return .select(row, message: committed ? "Enter kept the filter; / to change it, Esc to clear it" : nil)
    }

    public func handle(_ key: Key, selected: Int) -> ListAction {
        switch key {
        case .escape where sorting.state.withLock({ $0.filter != nil }):
            return input(nil, committed: false, selected: selected)
        case .enter:
            guard let index = entry(at: selected) else { return .none }
            let entry = table.entries[index]
            guard !entry.isFolder else { return .message("a folder: nothing to page") }
            return Pager.open(entry.ref.path)
        case .character("s"):
            let keep = entry(at: selected)
            let sort = sorting.state.withLock { state -> SortOrder in
                state.sort = state.sort.next
                return state.sort
            }
            resort()
            let row = keep.flatMap { kept in sorting.state.withLock { $0.order.firstIndex(of: kept) } } ?? 0
            return .select(row, message: "sorted by \(sort.rawValue)" + (sort == .lines ? " (as they load)" : ""))
        case .character("w"):
            sorting.state.withLock { $0.showsWindow.toggle() }
            return .none
        default:
            return .none
        }
    }

    /// Sorts the rows again by the current order: the prefetcher then prepares each row's new key.
    private func resort() {
        let (sort, filter) = sorting.state.withLock { ($0.sort, $0.filter) }
        let entries = table.entries
        var order = Array(entries.indices)
        if let filter { order = order.filter { filter.matches(entries[$0].path) } }
        switch sort {
        case .path:
            break
        case .size:
            order.sort { (entries[$0].isFolder ? -1 : entries[$0].size, $1) > (entries[$1].isFolder ? -1 : entries[$1].size, $0) }
        case .lines:
            // Rows whose lines are known first (most first), then the others in path order.
            let lines = entries.map { entry -> Int in
                guard !entry.isFolder, let summary = table.avenue.storage.value(for: entry.ref) else { return -1 }
                return summary.lines
            }
            order.sort { (lines[$0], $1) > (lines[$1], $0) }
        }
        sorting.state.withLock {
            $0.order = order
            $0.resortDue = false
            $0.lastSort = .now
        }
    }

    /// While sorted by lines, the rows loaded since are put in place — only when the list rests, at
    /// most four times a second, so rows do not move under a moving selection.
    private func resortIfDue() {
        let due = sorting.state.withLock { $0.resortDue && ContinuousClock.now - $0.lastSort >= .milliseconds(250) }
        if due { resort() }
    }

    public func stop() { prefetcher.stop() }
}

/// Opens a file in a pager: `$PAGER`, else `less`.
public enum Pager {
    /// The action that opens `path` in the pager.
    public static func open(_ path: String) -> ListAction {
        let environment = ProcessInfo.processInfo.environment
        let command = (environment["PAGER"].flatMap { $0.isEmpty ? nil : $0 } ?? "less").split(separator: " ").map(String.init)
        guard let name = command.first, let executable = find(name) else { return .message("no pager found: set PAGER") }
        return .run(executable, arguments: Array(command.dropFirst()) + [path])
    }

    static func find(_ name: String) -> URL? {
        if name.contains("/") { return URL(fileURLWithPath: name) }
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return folders.lazy.map { URL(fileURLWithPath: String($0)).appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}
