import Avenues
import FileCatalog
import Synchronization
import TerminalUI

/// The interactive table: one loop owns the screen state and redraws it after each event.
struct BrowseScreen {
    enum Event: Sendable {
        case terminal(Terminal.Event)
        /// Some rows changed; which ones are in ``ChangedRows``.
        case rowsChanged
        case tick
    }

    /// Rows changed since the loop last looked. Loads can finish thousands of times a second; they
    /// are gathered here and announced by at most one pending event, so a key press never waits
    /// behind a queue of row changes.
    final class ChangedRows: Sendable {
        private let rows = Mutex((pending: Set<Int>(), announced: false))

        /// Records `row`; `true` if the loop must be woken (no wake-up is pending yet).
        func add(_ row: Int) -> Bool {
            rows.withLock { state in
                state.pending.insert(row)
                defer { state.announced = true }
                return !state.announced
            }
        }

        /// Every row changed since the last call.
        func take() -> Set<Int> {
            rows.withLock { state in
                defer { state = ([], false) }
                return state.pending
            }
        }
    }

    static let spinner: [String] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

    let table: any BrowseRows
    let title: String
    let ahead: Int?

    private var columns = 80
    private var rows = 24
    private var top = 0
    private var selected = 0
    private var frame = 0
    private var loaded = Set<Int>()
    private var dirty = true
    private var firstScreen: Duration?
    /// G pressed while the count is only "at least": the selection follows the end as it is found.
    private var followsEnd = false
    private let started = ContinuousClock.now
    private var lastDraw = ContinuousClock.now
    /// At most one frame per this long when rows arrive quickly.
    static let framePause = Duration.milliseconds(16)
    /// How long each spinner frame shows.
    static let spinnerPause = Duration.milliseconds(80)

    /// Where `show` calls are recorded (`--record-trace`), for `scroll-sim --trace`.
    let trace: TraceRecorder?
    /// Whether the status line shows the prefetch window and the scroll rate (the `w` key).
    private var showsWindow = false
    /// When the rows shown last changed: for a while after, every frame shows them again, so the
    /// adaptive prefetcher sees the list come to rest.
    private var lastMove = ContinuousClock.now

    init(table: any BrowseRows, title: String, ahead: Int?, trace: TraceRecorder? = nil) {
        self.table = table
        self.title = title
        self.ahead = ahead
        self.trace = trace
    }

    /// Tells the rows what the screen shows now.
    private mutating func showRows() {
        let rows = top..<top + pageRows
        table.show(rows)
        trace?.record(rows, count: count)
    }

    private var count: Int { table.count.value }
    /// Table rows on screen: everything but the title, the column header and the status line.
    private var pageRows: Int { max(1, rows - 3) }

    mutating func run() async {
        let (events, sink) = AsyncStream<Event>.makeStream()
        let terminal = Terminal.startInteractive(fullScreen: true)
        defer { Terminal.restore() }
        let changed = ChangedRows()
        table.start { row in
            if changed.add(row ?? -1) { sink.yield(.rowsChanged) }
        }
        let forwarding = Task {
            for await event in terminal { sink.yield(.terminal(event)) }
            sink.finish()
        }
        let ticking = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.framePause)
                sink.yield(.tick)
            }
        }
        defer {
            forwarding.cancel()
            ticking.cancel()
        }

        resize()
        showRows()
        draw()

        for await event in events {
            switch event {
            case .terminal(.key(let key)):
                guard handle(key) else {
                    table.stop()
                    return
                }
                lastMove = .now
                showRows()
                draw()
            case .terminal(.resize):
                resize()
                showRows()
                draw()
            case .rowsChanged:
                let rows = changed.take()
                for row in rows where row >= 0 && table.content(at: row).isLoaded { loaded.insert(row) }
                dirty = true  // the status line's counters changed, even for rows off screen
                if table.count.isExact, selected >= count || top > max(0, count - pageRows) {
                    move(to: selected)  // the listing ended before the rows the screen had moved to
                    showRows()
                }
                if followsEnd, selected != count - 1 {
                    move(to: count - 1)
                    followsEnd = !table.count.isExact
                    showRows()
                }
                let visible = top..<top + pageRows
                // -1: the list itself changed (rows listed, the count).
                if rows.contains(where: { $0 < 0 || visible.contains($0) }), ContinuousClock.now - lastDraw >= Self.framePause { draw() }
            case .tick:
                if ContinuousClock.now - lastMove < .seconds(1) { showRows() }
                let spinnerFrame = Int((ContinuousClock.now - started) / Self.spinnerPause)
                let spin = spinnerFrame != frame && visibleRowsPending
                frame = spinnerFrame
                if dirty || spin { draw() }
            }
        }
    }

    /// Applies a key; `false` to quit.
    private mutating func handle(_ key: Key) -> Bool {
        followsEnd = false
        if key == .character("w") {
            showsWindow.toggle()
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
            move(to: count - 1)
            followsEnd = !table.count.isExact
        default: break
        }
        return true
    }

    /// Selects `row` and scrolls just enough to show it.
    /// While the count is only "at least" (a remote listing goes on), the selection may go past the
    /// rows listed so far: PgDn moves a whole page, and the rows fill in as they are listed.
    private mutating func move(to row: Int) {
        let exact = table.count.isExact
        selected = max(0, exact ? min(count - 1, row) : row)
        if exact { top = max(0, min(top, max(0, count - pageRows))) }
        if selected < top { top = selected }
        if selected >= top + pageRows { top = selected - pageRows + 1 }
    }

    /// Takes the new window size; the prefetch window follows the page size (one page ahead by default).
    private mutating func resize() {
        if let size = Terminal.size() { (columns, rows) = size }
        table.resize(pageRows: pageRows, ahead: ahead)
        move(to: selected)
    }

    private var visibleRowsPending: Bool {
        (top..<min(count, top + pageRows)).contains { !table.content(at: $0).isSettled }
    }

    private mutating func draw() {
        dirty = false
        lastDraw = .now
        let layout = TableLayout(width: columns)
        var lines: [String] = []
        let heading = " browse  \(title)  ·  \(table.count) files"
        lines.append(Terminal.ANSI.inverse + TextWidth.fit(heading, columns) + Terminal.ANSI.reset)
        lines.append(Terminal.ANSI.bold + TextWidth.fit(layout.header, columns) + Terminal.ANSI.reset)
        var pending = false
        let spinner = Self.spinner[frame % Self.spinner.count]
        for row in top..<top + pageRows {
            guard row < count, let entry = table.entry(at: row) else {
                let listing = table.count.isExact ? "" : " \(spinner) listing…"
                lines.append(row == selected ? Terminal.ANSI.inverse + TextWidth.fit(listing, columns) + Terminal.ANSI.reset : TextWidth.fit(listing, columns))
                continue
            }
            let content = table.content(at: row)
            switch content {
            case .pending: pending = true
            case .loaded: loaded.insert(row)  // also rows found in memory, which send no event
            case .failed: break
            }
            let text = TextWidth.fit(layout.row(path: entry.path, size: entry.size, content, placeholder: table.placeholder(at: row) ?? spinner), columns)
            switch (row == selected, content) {
            case (true, _): lines.append(Terminal.ANSI.inverse + text + Terminal.ANSI.reset)
            case (false, .failed): lines.append(Terminal.ANSI.red + text + Terminal.ANSI.reset)
            default: lines.append(text)
            }
        }
        if !pending, firstScreen == nil, count > 0 { firstScreen = ContinuousClock.now - started }
        lines.append(Terminal.ANSI.inverse + TextWidth.fit(statusLine(), columns) + Terminal.ANSI.reset)
        Terminal.write(Terminal.ANSI.home + lines.joined(separator: "\n"))
    }

    /// The counters, then what fits of the extras (first-screen time, the quit key).
    private func statusLine() -> String {
        let shown = count == 0 ? (table.count.isExact ? "no files" : "listing…") : "\(top + 1)–\(min(count, top + pageRows)) of \(table.count)"
        var fields = [shown, "loaded \(loaded.count)"] + table.statusFields
        if showsWindow, let window = table.windowDescription { fields.insert(window, at: 1) }
        var line = " " + fields.joined(separator: " │ ")
        var extras: [String] = []
        if let firstScreen { extras.append("first screen \(Int(firstScreen / .milliseconds(1))) ms") }
        extras.append("q quit")
        for extra in extras where TextWidth.columns(line) + 3 + TextWidth.columns(extra) <= columns {
            line += " │ " + extra
        }
        return line
    }
}
