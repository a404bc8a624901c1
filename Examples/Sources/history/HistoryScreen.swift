import Avenues
import Foundation
import GitHistory
import Synchronization
import TerminalUI

/// The full-screen log: one loop owns the screen state and redraws after each event.
struct HistoryScreen {
    enum Event: Sendable {
        case terminal(Terminal.Event)
        case rowsChanged
        case search(SearchProgress)
        /// git counted the commits.
        case counted
        case tick
    }

    /// How a search is going.
    enum SearchProgress: Sendable {
        case scanned(Int)
        case found(Int)
        case notFound
        case failed(String)
    }

    static let spinner: [String] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
    static let framePause = Duration.milliseconds(16)

    let rows: HistoryRows
    let log: GitLog
    let title: String

    private var columns = 80
    private var height = 24
    private var top = 0
    private var selected = 0
    private var frame = 0
    private var firstScreen: Duration?
    private let started = ContinuousClock.now
    /// The query being typed after `/`, or `nil`.
    private var typing: String?
    private var searching: (query: String, task: Task<Void, Never>, scanned: Int)?
    private var message: String?
    /// G was pressed before the commits were counted: go to the end once they are.
    private var wantsEnd = false
    private var counting: Task<Void, Never>?

    /// Where `show` calls are recorded (`--record-trace`), for `scroll-sim --trace`.
    let trace: TraceRecorder?

    init(rows: HistoryRows, log: GitLog, title: String, trace: TraceRecorder? = nil) {
        self.rows = rows
        self.log = log
        self.title = title
        self.trace = trace
    }

    /// The rows' count, or git's once it counted (the pages learn it only as they load).
    private var count: RowCount {
        let count = rows.commits.count
        if !count.isExact, let total = log.knownTotal { return .exact(total) }
        return count
    }
    private var pageRows: Int { max(1, height - 2) }

    mutating func run() async {
        let (events, sink) = AsyncStream<Event>.makeStream()
        let terminal = Terminal.startInteractive(fullScreen: true)
        defer { Terminal.restore() }
        let pending = Atomic<Bool>(false)
        let wake: @Sendable (PagedRowsChange) -> Void = { _ in
            if !pending.exchange(true, ordering: .relaxed) { sink.yield(.rowsChanged) }
        }
        rows.commits.onChange = wake
        rows.stats.onStateChange = { _ in if !pending.exchange(true, ordering: .relaxed) { sink.yield(.rowsChanged) } }
        let forwarding = Task {
            for await event in terminal { sink.yield(.terminal(event)) }
            sink.finish()
        }
        let ticking = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(80))
                sink.yield(.tick)
            }
        }
        defer {
            forwarding.cancel()
            ticking.cancel()
            searching?.task.cancel()
            counting?.cancel()
            rows.commits.stop()
        }
        resize()
        show()
        draw()
        for await event in events {
            switch event {
            case .terminal(.key(let key)):
                guard handle(key, sink: sink) else { return }
                show()
                draw()
            case .terminal(.resize):
                resize()
                show()
                draw()
            case .rowsChanged:
                pending.store(false, ordering: .relaxed)
                draw()
                if firstScreen != nil { startCounting(sink: sink) }
            case .counted:
                if wantsEnd {
                    wantsEnd = false
                    message = nil
                    move(to: count.value - 1)
                    show()
                }
                draw()
            case .search(let progress):
                searchProgressed(progress)
                show()
                draw()
            case .tick:
                frame += 1
                draw()
            }
        }
    }

    private func show() {
        rows.commits.show(top ..< top + pageRows)
        trace?.record(top ..< top + pageRows, count: count.value)
    }

    private mutating func resize() {
        if let size = Terminal.size() { (columns, height) = size }
        move(to: selected)
    }

    /// Applies a key; `false` to quit.
    private mutating func handle(_ key: Key, sink: AsyncStream<Event>.Continuation) -> Bool {
        if typing != nil { return type(key, sink: sink) }
        if searching != nil, key == .escape {
            searching?.task.cancel()
            searching = nil
            message = "search cancelled"
            return true
        }
        message = nil
        wantsEnd = false
        if key == .character("/") {
            typing = ""
            return true
        }
        guard let command = ListCommand(key) else { return true }
        if let motion = command.motion(selected: selected, top: top, pageRows: pageRows) {
            top = motion.top
            move(to: motion.selected)
            return true
        }
        switch command {
        case .quit: return false
        case .last:
            if count.isExact {
                move(to: count.value - 1)
            } else {
                wantsEnd = true
                message = "counting commits…"
                startCounting(sink: sink)
            }
        default: break
        }
        return true
    }

    /// A key while the search query is typed.
    private mutating func type(_ key: Key, sink: AsyncStream<Event>.Continuation) -> Bool {
        switch key {
        case .escape, .control("c"): typing = nil
        case .backspace: if typing?.isEmpty == false { typing?.removeLast() }
        case .enter:
            if let query = typing, !query.isEmpty { startSearch(query, sink: sink) }
            typing = nil
        case .character(let character): typing?.append(character)
        case .space: typing?.append(" ")
        default: break
        }
        return true
    }

    /// Has git count the commits (once), and redraws when it has: after the first screen, so the
    /// count does not compete with it, or at once when G needs it.
    private mutating func startCounting(sink: AsyncStream<Event>.Continuation) {
        guard counting == nil else { return }
        let log = log
        counting = Task {
            _ = await log.total()
            sink.yield(.counted)
        }
    }

    /// Searches subjects from the row after the selection, reading the log in large pages straight
    /// from git (the screen's pages stay as they are), reporting progress; Esc cancels.
    private mutating func startSearch(_ query: String, sink: AsyncStream<Event>.Continuation) {
        searching?.task.cancel()
        let start = selected + 1
        let log = log
        let needle = query.lowercased()
        let task = Task {
            var offset = start
            let size = 2_000
            do {
                while !Task.isCancelled {
                    let page = try await log.page(at: offset, size: size)
                    if let index = page.items.firstIndex(where: { $0.subject.lowercased().contains(needle) }) {
                        sink.yield(.search(.found(offset + index)))
                        return
                    }
                    offset += page.items.count
                    sink.yield(.search(.scanned(offset)))
                    if page.cursorAfter == nil { break }
                }
                if !Task.isCancelled { sink.yield(.search(.notFound)) }
            } catch {
                if !Task.isCancelled { sink.yield(.search(.failed(String(describing: error)))) }
            }
        }
        searching = (query, task, start)
    }

    private mutating func searchProgressed(_ progress: SearchProgress) {
        guard let current = searching else { return }
        switch progress {
        case .scanned(let rows):
            searching?.scanned = rows
        case .found(let row):
            searching = nil
            message = "found “\(current.query)” at \(row + 1)"
            top = max(0, row - pageRows / 3)
            move(to: row)
        case .notFound:
            searching = nil
            message = "“\(current.query)” not found"
        case .failed(let error):
            searching = nil
            message = "search failed: \(error)"
        }
    }

    /// Selects `row` and scrolls just enough to show it.
    private mutating func move(to row: Int) {
        // While the count is "at least", rows past it may exist (a search hit, the next page).
        let count = count
        let last = count.isExact ? max(0, count.value - 1) : max(row, count.value - 1)
        selected = max(0, min(last, row))
        top = max(0, min(top, max(0, last + 1 - pageRows)))
        if selected < top { top = selected }
        if selected >= top + pageRows { top = selected - pageRows + 1 }
    }

    private mutating func draw() {
        var lines: [String] = []
        let heading = " history  \(title)  ·  \(count) commits"
        lines.append(Terminal.ANSI.inverse + TextWidth.fit(heading, columns) + Terminal.ANSI.reset)
        var pending = false
        let spinner = Self.spinner[frame % Self.spinner.count]
        let authorWidth = min(18, max(8, columns / 8))
        for row in top ..< top + pageRows {
            guard let commit = rows.commits.item(at: row) else {
                if count.isExact, row >= count.value {
                    lines.append(String(repeating: " ", count: columns))
                } else if let error = rows.commits.state(at: row).error {
                    lines.append(Terminal.ANSI.red + TextWidth.fit(" \(error)", columns) + Terminal.ANSI.reset)
                } else {
                    pending = true
                    lines.append(TextWidth.fit(" \(spinner)", columns))
                }
                continue
            }
            let stat: String
            switch rows.stats.state(at: row) {
            case .loaded, .stale: stat = rows.stats.item(at: row)?.description ?? ""
            case .failed: stat = "no stat"
            default: stat = spinner
            }
            let statWidth = 24
            let fixed = commit.shortHash + "  " + commit.date + "  " + TextWidth.fit(commit.author, authorWidth) + "  "
            let subjectWidth = max(10, columns - TextWidth.columns(fixed) - statWidth - 2)
            let text = TextWidth.fit(" " + fixed + TextWidth.fit(commit.subject, subjectWidth) + " " + TextWidth.fit(stat, statWidth, alignRight: true), columns)
            lines.append(row == selected ? Terminal.ANSI.inverse + text + Terminal.ANSI.reset : text)
        }
        if !pending, firstScreen == nil, count.value > 0 || count.isExact { firstScreen = ContinuousClock.now - started }
        lines.append(Terminal.ANSI.inverse + TextWidth.fit(statusLine(), columns) + Terminal.ANSI.reset)
        Terminal.write(Terminal.ANSI.home + lines.joined(separator: "\n"))
    }

    private func statusLine() -> String {
        if let typing { return " /" + typing + "▏  (Enter: search subjects, Esc: cancel)" }
        if let searching {
            return " searching “\(searching.query)”… \(searching.scanned) of \(count) commits │ Esc cancels"
        }
        let shown = count.value == 0 ? "no commits" : "\(top + 1)–\(min(count.value, top + pageRows)) of \(count)"
        let resident = rows.commits.resident
        var parts = [shown]
        if let message { parts.append(message) }  // before the figures: the width may cut the end
        parts += [
            "pages resident \(resident.pages)", "loads in flight \(rows.loadsInFlight)", "cache hits \(rows.cacheHits)",
        ]
        if let firstScreen { parts.append("first screen \(Int(firstScreen / .milliseconds(1))) ms") }
        var line = " " + parts.joined(separator: " │ ")
        for extra in ["/ search", "q quit"] where TextWidth.columns(line) + 3 + TextWidth.columns(extra) <= columns {
            line += " │ " + extra
        }
        return line
    }
}
