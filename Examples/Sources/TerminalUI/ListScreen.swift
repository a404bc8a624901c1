import ArgumentParser
import Avenues
import Foundation
import Synchronization

/// What a full-screen list shows and drives: `browse`'s files, `history`'s commits, a commit's
/// lines, `pages`' rows. The screen owns the terminal, the keys every list shares, the help, the
/// input line and the status line; the model owns the rows.
///
/// Every method is called from the screen's loop (one at a time), except ``start(_:)``'s callback,
/// which the model calls from anywhere.
public protocol ListModel: AnyObject, Sendable {
    /// The heading: the tool and what it shows (cleaned by the screen before it is drawn).
    var heading: String { get }
    /// Column titles under the heading, if the list has columns.
    func columnHeader(width: Int, palette: Terminal.Palette) -> String?
    /// How many rows there are (at least, while the list is still being read).
    var count: RowCount { get }
    /// Calls `changed` with each row whose content changed, or `nil` when the list itself did.
    func start(_ changed: @escaping @Sendable (Int?) -> Void)
    /// The list shows `rows`; `resting` when it has not moved for a moment (details load then).
    /// Keys that wait behind each other (a paste) move the list without it: it is shown at most once
    /// a frame.
    func show(_ rows: Range<Int>, resting: Bool)
    /// Row `row` as a line `width` columns wide (the screen adds the selection), or `nil` when the
    /// row is not listed yet. `spinner` is the placeholder's frame.
    func line(at row: Int, width: Int, spinner: String, palette: Terminal.Palette) -> String?
    /// Whether row `row` still waits for something (the spinner turns while one on screen does).
    func isPending(at row: Int) -> Bool
    /// The status line's fields, after the position.
    var statusFields: [String] { get }
    /// The keys this list adds to the shared ones, for `?`.
    var keys: [(key: String, does: String)] { get }
    /// What `/` asks for ("filter", "search"), or `nil` if the list has no input line.
    var inputPrompt: String? { get }
    /// The input line changed: after each keystroke, or once a frame while more keys wait (a
    /// paste); `committed` when Enter was pressed, `nil` text when Esc cancelled it.
    func input(_ text: String?, committed: Bool, selected: Int) -> ListAction
    /// A key the shared ones do not use (Enter, `n`, `s`, ←/→…), with the selected row.
    func handle(_ key: Key, selected: Int) -> ListAction
    /// What work the model did meanwhile asks of the screen (a search that found a row); asked on
    /// every event.
    func poll() -> ListAction
    /// The screen is leaving: stop loading.
    func stop()
    /// The last `rows` lines, `width` columns wide, while the list's end is not known yet (G before
    /// the count is): drawn at once instead of waiting for the count; `nil` if the model cannot.
    func endPreview(rows: Int, width: Int, palette: Terminal.Palette) -> [String]?
    /// What a row is called in `:N`'s prompt and messages ("line", "row").
    var rowName: String { get }
    /// The first rows of the screens the model hinted it expects the list to show soon
    /// (``Avenues/RowPrefetcher/hint(_:)``), for `--record-trace`; empty by default.
    var hints: [Int] { get }
}

/// What a model asks the screen to do after a key or an input.
public enum ListAction: Sendable {
    /// Nothing more (redraw).
    case none
    /// Show `message` on the status line.
    case message(String)
    /// Select `row` (a search hit, the same item after a sort).
    case select(Int, message: String? = nil)
    /// Hand the terminal to a program (a pager), then take it back.
    case run(URL, arguments: [String])
    /// Open another list over this one (a commit's lines); `q` comes back.
    case push(any ListModel)
    /// Keep the last row selected as rows are added (less's F), until the next key.
    case follow
    /// Leave the program.
    case quit
}

extension ListModel {
    public func columnHeader(width: Int, palette: Terminal.Palette) -> String? { nil }
    public var inputPrompt: String? { nil }
    public func input(_ text: String?, committed: Bool, selected: Int) -> ListAction { .none }
    public func handle(_ key: Key, selected: Int) -> ListAction { .none }
    public var keys: [(key: String, does: String)] { [] }
    public var hints: [Int] { [] }
    public func poll() -> ListAction { .none }
    public func endPreview(rows: Int, width: Int, palette: Terminal.Palette) -> [String]? { nil }
    public var rowName: String { "row" }
}

/// A full-screen list over a ``ListModel``: one loop owns the screen state and redraws it after each
/// event. Moves (`↑`/`↓`/`j`/`k`, `PgUp`/`PgDn`/`b`/`space`, `g`/`G`/`Home`/`End`, `:N` to row N),
/// `?` for the keys, `/` for the model's input line, `q` to leave (or to go back from a list opened
/// over another).
public struct ListScreen: Sendable {
    /// What reaches the loop.
    public enum Event: Sendable {
        case terminal(Terminal.Event)
        /// Some rows changed; which ones are in the changed rows set.
        case rowsChanged
        case tick
    }

    /// How the screen ended: back to the screen that opened it, or out of the program — by a key
    /// that quits, or by ^C, after which the program exits with status 130 as shells expect of an
    /// interrupted command (less, fzf).
    public enum Exit: Sendable { case back, quit, interrupted }

    /// Rows changed since the loop last looked. Loads can finish thousands of times a second; they
    /// are gathered here and announced by at most one pending event, so a key press never waits
    /// behind a queue of row changes.
    public final class ChangedRows: Sendable {
        private let rows = Mutex((pending: Set<Int>(), announced: false))

        public init() {}

        /// Records `row` (`-1`: the list itself); `true` if the loop must be woken.
        public func add(_ row: Int) -> Bool {
            rows.withLock { state in
                state.pending.insert(row)
                defer { state.announced = true }
                return !state.announced
            }
        }

        /// Every row changed since the last call.
        public func take() -> Set<Int> {
            rows.withLock { state in
                defer { state = ([], false) }
                return state.pending
            }
        }
    }

    /// Keys read from the terminal that the loop has not handled yet. While more wait, a key's frame
    /// is skipped (the last key of the burst, or the next tick, draws it): on a slow or busy machine a
    /// held key then costs a move each, not a frame each, and the screen never falls behind the keys.
    final class KeyBacklog: Sendable {
        private let count = Atomic<Int>(0)

        func add() { count.add(1, ordering: .relaxed) }

        /// A key was taken from the queue; `true` while more keys wait behind it.
        func take() -> Bool { count.subtract(1, ordering: .relaxed).newValue > 0 }
    }

    static let spinner: [String] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
    /// At most one frame per this long when rows arrive quickly.
    static let framePause = Duration.milliseconds(16)
    static let spinnerPause = Duration.milliseconds(80)

    let model: any ListModel
    let palette: Terminal.Palette
    let trace: TraceRecorder?
    let nested: Bool
    let backlog: KeyBacklog

    private var columns = 80
    private var height = 24
    private var top = 0
    private var selected = 0
    private var frame = 0
    private var message: String?
    private var showsHelp = false
    /// The first line of the keys shown, when they do not fit the screen and are scrolled.
    private var helpTop = 0
    /// The input line's text while it is typed.
    private var typing: String?
    /// Whether the input line is `:N` (go to a row) rather than the model's.
    private var typingRow = false
    /// G pressed while the count is only "at least": the selection follows the end as it is found.
    private var followsEnd = false
    /// The model asked to follow the end (F): it stays followed after the count is exact, until a key.
    private var following = false
    private var firstScreen: Duration?
    private let started = ContinuousClock.now
    private var lastDraw = ContinuousClock.now
    private var lastMove = ContinuousClock.now
    private var dirty = true
    /// Whether the model was last told the list rests.
    private var toldResting = false
    /// Whether the input line's text changed since the model was last given it. A paste of
    /// thousands of characters gives it the text once a frame, not once a character (each is a
    /// search or a filter of the whole list).
    private var typedUnseen = false
    /// Whether the last frame drawn showed rows still loading.
    private var drawnPending = false
    /// Whether the first screen was drawn before the model started; `nil` before it was tried.
    private var drawnEarly: Bool?

    /// A screen over `model`; `nested` when it is opened over another (then `q` goes back); keys
    /// are counted into `backlog` as they are read (``run(_:trace:)``).
    init(model: any ListModel, palette: Terminal.Palette, trace: TraceRecorder?, nested: Bool, backlog: KeyBacklog) {
        self.model = model
        self.palette = palette
        self.trace = trace
        self.nested = nested
        self.backlog = backlog
        hasColumnHeader = model.columnHeader(width: columns, palette: palette) != nil
    }

    /// A screen that has taken the terminal and drawn what its model could show before it starts
    /// (``open(_:trace:)``); ``run(_:)`` runs it.
    public struct Opened: Sendable {
        fileprivate let screen: ListScreen
        fileprivate let isTerminal: Bool
    }

    /// Takes the terminal, runs `model`'s list until it quits, and gives the terminal back.
    /// - Throws: `ExitCode(130)` when ^C ended it, for the tool's `run()` to pass on.
    public static func run(_ model: any ListModel, trace: TraceRecorder? = nil) async throws {
        try await run(open(model, trace: trace))
    }

    /// The first half of ``run(_:trace:)``, synchronous: takes the terminal and draws `model`'s first
    /// screen if it can show it before it starts. Called on the thread the program starts on, the
    /// screen is up before any thread is made: under load (a terminal multiplexer busy beside it),
    /// each thread started first delayed the first screen by milliseconds.
    public static func open(_ model: any ListModel, trace: TraceRecorder? = nil) -> Opened {
        let isTerminal = Terminal.takeOver(fullScreen: true)
        var screen = ListScreen(model: model, palette: .current, trace: trace, nested: false, backlog: KeyBacklog())
        screen.drawBeforeStart()
        return Opened(screen: screen, isTerminal: isTerminal)
    }

    /// Runs an opened screen's list until it quits, and gives the terminal back.
    /// - Throws: `ExitCode(130)` when ^C ended it, for the tool's `run()` to pass on.
    public static func run(_ opened: Opened) async throws {
        if await runUntilExit(opened) == .interrupted { throw ExitCode(130) }
    }

    /// ``run(_:)``'s work: how the screen ended, once the terminal is given back.
    static func runUntilExit(_ opened: Opened) async -> Exit {
        defer { Terminal.restore() }
        var screen = opened.screen
        let backlog = screen.backlog
        let (events, sink) = AsyncStream<Event>.makeStream()
        let terminal = opened.isTerminal ? Terminal.events() : AsyncStream { $0.finish() }
        let forwarding = Task {
            for await event in terminal {
                if case .key = event { backlog.add() }
                sink.yield(.terminal(event))
            }
            sink.finish()
        }
        let ticking = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: framePause)
                sink.yield(.tick)
            }
        }
        defer {
            forwarding.cancel()
            ticking.cancel()
        }
        var iterator = events.makeAsyncIterator()
        return await screen.loop(&iterator, sink: sink)
    }

    /// The screen's loop, on events shared with the screens it opens.
    mutating func loop(_ events: inout AsyncStream<Event>.Iterator, sink: AsyncStream<Event>.Continuation) async -> Exit {
        let changed = ChangedRows()
        if drawnEarly == nil { drawBeforeStart() }
        model.start { row in
            if changed.add(row ?? -1) { sink.yield(.rowsChanged) }
        }
        defer { model.stop() }
        showRows()
        if drawnEarly == true { dirty = true } else { draw() }
        while let event = await events.next() {
            let polled = model.poll()
            if case .none = polled {} else {
                apply(polled)
                showRows()
                dirty = true
            }
            switch event {
            case .terminal(.key(let key)):
                lastMove = .now
                let more = backlog.take()
                if let exit = await handle(key, events: &events, sink: sink) { return exit }
                // Keys that wait behind this one (a paste, a held key on a slow machine) are applied
                // before the rows are shown and drawn, at most once a frame: each show plans the
                // prefetch anew, and rows passed over between two frames are never seen.
                if more, ContinuousClock.now - lastDraw < Self.framePause {
                    dirty = true
                } else {
                    showTyped()
                    showRows()
                    draw()
                }
            case .terminal(.resize):
                resize()
                showRows()
                draw()
            case .rowsChanged:
                let rows = changed.take()
                dirty = true  // the status line's counters changed, even for rows off screen
                let count = model.count
                if count.isExact, selected >= count.value || top > max(0, count.value - pageRows) {
                    move(to: selected)  // the list ended before the rows the screen had moved to
                    showRows()
                }
                if followsEnd, selected != count.value - 1, count.value > 0 {
                    move(to: count.value - 1)
                    showRows()
                }
                if followsEnd, count.isExact, !following { followsEnd = false }
                let visible = top ..< top + pageRows
                // At most a frame per pause while rows stream in, but a screen drawn with
                // placeholders is drawn again at once (the first screen does not wait a frame).
                if rows.contains(where: { $0 < 0 || visible.contains($0) }), drawnPending || ContinuousClock.now - lastDraw >= Self.framePause { draw() }
            case .tick:
                // For a moment after a move, the rows are shown again on every frame: the model
                // sees the list come to rest (details load, the adaptive window shrinks).
                // Until the model has been told the list rests (G's follow may end long after the
                // last key), it is told again on every frame.
                let sinceMove = ContinuousClock.now - lastMove
                // The last key of a paste gives the model the text; should it not have, a frame does.
                if typedUnseen {
                    showTyped()
                    dirty = true
                }
                if sinceMove < .seconds(1) || !toldResting { showRows() }
                trace?.record(hints: model.hints)  // a hint found while the list rests (the next match)
                let spinnerFrame = Int((ContinuousClock.now - started) / Self.spinnerPause)
                let pending = visibleRowsPending
                let spin = spinnerFrame != frame && pending
                frame = spinnerFrame
                // A row whose value was stored loads inside `show` without a change callback (G
                // and back: its details were kept), so a frame drawn with spinners is drawn again.
                if dirty || spin || drawnPending != pending { draw() }
            }
        }
        return .quit
    }

    /// Takes the terminal's size and, if the model can show its first screen before it starts (a
    /// file's opening lines), draws it: loading starts behind a screen that is already up, as less
    /// draws before it reads on.
    mutating func drawBeforeStart() {
        resize()
        drawnEarly = !visibleRowsPending
        if drawnEarly == true { draw() }
    }

    /// Whether the model draws a column header, taken at each resize: the header is a whole
    /// formatted line, and the page's height is asked for at every key.
    private var hasColumnHeader = false

    private var pageRows: Int { max(1, height - (hasColumnHeader ? 3 : 2)) }

    private var resting: Bool { ContinuousClock.now - lastMove >= .milliseconds(150) && !followsEnd }

    /// Tells the model what the screen shows now.
    private mutating func showRows() {
        let rows = top ..< top + pageRows
        toldResting = resting
        model.show(rows, resting: toldResting)
        let count = model.count
        trace?.record(rows, count: count.isExact ? count.value : 0, hints: model.hints)
    }

    /// Applies a key; an exit when the screen ends.
    private mutating func handle(_ key: Key, events: inout AsyncStream<Event>.Iterator, sink: AsyncStream<Event>.Continuation) async -> Exit? {
        if typing != nil { return type(key) }
        if showsHelp {
            // Keys that do not fit the screen scroll with the keys that move; any other key closes.
            if let top = Self.helpScroll(key, top: helpTop, lines: keyLines().count, rows: pageRows) {
                helpTop = top
                return nil
            }
            showsHelp = false
            if key == .escape || key == .character("?") || key == .character("q") { return nil }
        }
        followsEnd = false
        let wasFollowing = following
        following = false
        message = nil
        switch key {
        case .character("?"):
            showsHelp = true
            helpTop = 0
            return nil
        case .character("/") where model.inputPrompt != nil:
            typing = ""
            typingRow = false
            return nil
        case .character(":"):
            typing = ""
            typingRow = true
            return nil
        case .control("c") where wasFollowing:
            return nil  // stops following, as any key does (less's ^C in F): quitting lost the place
        case .control("c"):
            return .interrupted
        case .character("q"), .control("d"):
            return nested ? .back : .quit
        case .escape where nested:
            return .back
        default:
            break
        }
        if let command = ListCommand(key) {
            if let motion = command.motion(selected: selected, top: top, pageRows: pageRows) {
                top = motion.top
                move(to: motion.selected)
                return nil
            }
            if command == .last {
                let count = model.count
                move(to: max(0, count.value - 1))
                followsEnd = !count.isExact
                return nil
            }
        }
        return await perform(model.handle(key, selected: selected), events: &events, sink: sink)
    }

    /// A key while the input line is typed.
    private mutating func type(_ key: Key) -> Exit? {
        if typingRow {
            typeRow(key)
            return nil
        }
        var action = ListAction.none
        switch key {
        case .escape, .control("c"):
            typing = nil
            typedUnseen = false
            action = model.input(nil, committed: false, selected: selected)
        case .backspace:
            if typing?.isEmpty == false {
                typing?.removeLast()
                typedUnseen = true
            }
        case .enter:
            let text = typing
            typing = nil
            typedUnseen = false
            action = model.input(text, committed: true, selected: selected)
        case .character(let character):
            typing?.append(character)
            typedUnseen = true
        case .space:
            typing?.append(" ")
            typedUnseen = true
        case .up, .down, .pageUp, .pageDown:
            // Moving through the matches while typing (as fzf does); letters stay the text's.
            if let motion = ListCommand(key)?.motion(selected: selected, top: top, pageRows: pageRows) {
                top = motion.top
                move(to: motion.selected)
            }
        default:
            break
        }
        apply(action)
        return nil
    }

    /// Gives the model the input line's text as it is now, if it changed since it last did.
    private mutating func showTyped() {
        guard typedUnseen else { return }
        typedUnseen = false
        apply(model.input(typing, committed: false, selected: selected))
    }

    /// A key while `:N` is typed: digits, Backspace, Enter goes, Esc cancels.
    private mutating func typeRow(_ key: Key) {
        switch key {
        case .escape, .control("c"):
            typing = nil
        case .backspace:
            if typing?.isEmpty == false { typing?.removeLast() }
        case .enter:
            let text = typing ?? ""
            typing = nil
            // Only digits are typed: a number past Int.max is as far as any, not "not a number".
            guard let number = Int(text) ?? (text.isEmpty ? nil : Int.max), number >= 1 else {
                if !text.isEmpty { message = "“\(text)” is not a \(model.rowName) number" }
                return
            }
            let count = model.count
            if count.isExact, number > count.value { message = "there are \(count.value) \(model.rowName)s" }
            move(to: number - 1)
            // The row at the top, as less's `Ng` (as far as the rows after it fill the screen).
            top = count.isExact ? max(0, min(number - 1, count.value - pageRows)) : number - 1
        case .character(let character) where character.isASCII && character.isNumber:
            if (typing?.count ?? 0) < 19 { typing?.append(character) }  // no more digits than an Int has
        default:
            break
        }
    }

    /// Carries out a model's action.
    private mutating func perform(_ action: ListAction, events: inout AsyncStream<Event>.Iterator, sink: AsyncStream<Event>.Continuation) async -> Exit? {
        switch action {
        case .quit:
            return .quit
        case .run(let executable, let arguments):
            if Terminal.runInForeground(executable, arguments: arguments) == nil {
                message = "could not run \(executable.lastPathComponent)"
            }
            resize()
        case .push(let other):
            var screen = ListScreen(model: other, palette: palette, trace: nil, nested: true, backlog: backlog)
            let exit = await screen.loop(&events, sink: sink)
            if exit != .back { return exit }
            resize()
            // The screens share one event stream: a `.rowsChanged` this screen's rows announced while
            // the other was open was taken by the other's loop, and this screen's `ChangedRows` stays
            // "announced" for good — every later change of its rows went unannounced (history: after
            // Enter and q, a filter's matches never moved the screen to them). Announce again.
            sink.yield(.rowsChanged)
        default:
            apply(action)
        }
        return nil
    }

    private mutating func apply(_ action: ListAction) {
        switch action {
        case .message(let text): message = text
        case .select(let row, let text):
            top = max(0, row - pageRows / 3)
            move(to: row)
            message = text
        case .follow:
            following = true
            followsEnd = true
            move(to: max(0, model.count.value - 1))
        default: break
        }
    }

    /// Selects `row` and scrolls just enough to show it. While the count is only "at least", the
    /// selection may go past the rows known so far (PgDn moves a whole page; rows fill in).
    private mutating func move(to row: Int) {
        let count = model.count
        let last = count.isExact ? max(0, count.value - 1) : max(row, count.value - 1)
        selected = max(0, min(last, row))
        top = max(0, min(top, max(0, last + 1 - pageRows)))
        if selected < top { top = selected }
        if selected >= top + pageRows { top = selected - pageRows + 1 }
    }

    private mutating func resize() {
        if let size = Terminal.size() { (columns, height) = size }
        hasColumnHeader = model.columnHeader(width: columns, palette: palette) != nil
        move(to: selected)
    }

    private var visibleRowsPending: Bool {
        let count = model.count.value
        guard top < count else { return !model.count.isExact }
        return (top ..< min(count, top + pageRows)).contains { model.isPending(at: $0) }
    }

    // MARK: Drawing

    private mutating func draw() {
        dirty = false
        lastDraw = .now
        drawnPending = visibleRowsPending
        var lines: [String] = []
        let count = model.count
        let heading = " " + model.heading
        lines.append(Terminal.ANSI.inverse + TextWidth.fit(heading, columns) + Terminal.ANSI.reset)
        if let header = model.columnHeader(width: columns, palette: palette) {
            lines.append(Terminal.ANSI.bold + header + Terminal.ANSI.reset)
        }
        let spinner = Self.spinner[frame % Self.spinner.count]
        var pending = false
        if showsHelp {
            lines += helpLines()
        } else if followsEnd, !count.isExact || visibleRowsPending, let preview = model.endPreview(rows: pageRows, width: columns, palette: palette) {
            // The end before the count (or before its rows loaded, while following a growing
            // list): the last lines at once, numbered when the count is known.
            let blank = max(0, pageRows - preview.count)
            lines += Array(repeating: TextWidth.fit("", columns), count: blank)
            for (index, line) in preview.suffix(pageRows).enumerated() {
                lines.append(index == preview.suffix(pageRows).count - 1 ? Terminal.ANSI.inverse + Self.stripped(line) + Terminal.ANSI.reset : line)
            }
        } else {
            for row in top ..< top + pageRows {
                guard row < count.value || !count.isExact, let text = model.line(at: row, width: columns, spinner: spinner, palette: palette) else {
                    let exists = row < count.value || (!count.isExact && row <= count.value + pageRows)
                    let filler = exists ? " \(spinner) …" : ""
                    if exists { pending = true }
                    lines.append(row == selected ? Terminal.ANSI.inverse + TextWidth.fit(filler, columns) + Terminal.ANSI.reset : TextWidth.fit(filler, columns))
                    continue
                }
                if model.isPending(at: row) { pending = true }
                // The selection shows in inverse video; colours inside it are dropped.
                lines.append(row == selected ? Terminal.ANSI.inverse + Self.stripped(text) + Terminal.ANSI.reset : text)
            }
        }
        if !pending, firstScreen == nil, count.value > 0 || count.isExact { firstScreen = ContinuousClock.now - started }
        lines.append(Terminal.ANSI.inverse + TextWidth.fit(statusLine(), columns) + Terminal.ANSI.reset)
        // A terminal shorter than the heading, the column titles, a row and the status line: a
        // line more than it holds would scroll the whole screen up at every frame. The heading
        // goes first, then the titles, then the row: the status line stays.
        var chrome = hasColumnHeader ? 2 : 1
        while lines.count > max(1, height) {
            lines.remove(at: chrome > 0 ? 0 : lines.count - 2)
            chrome -= 1
        }
        var output = Terminal.ANSI.home
        output.reserveCapacity(lines.reduce(output.utf8.count) { $0 + $1.utf8.count + 8 })
        for (index, line) in lines.enumerated() {
            if index > 0 { output += "\n" + Terminal.ANSI.clearLine }
            // Whatever drew it (a list's row, the keys, a preview): a line wider than the terminal
            // would wrap onto the next row and push the screen up.
            output += TextWidth.clip(line, columns)
        }
        Terminal.write(output)
    }

    /// The keys as many rows as `pageRows` holds: all of them, or those from ``helpTop`` with a
    /// last line that says how to see the rest (on a short terminal the last keys, quit among them,
    /// were cut with no sign that there were more).
    private func helpLines() -> [String] {
        var lines = keyLines()
        if lines.count <= pageRows {
            while lines.count < pageRows { lines.append(TextWidth.fit("", columns)) }
            return lines
        }
        guard pageRows > 1 else { return [Self.moreKeysLine(top: 0, shown: 0, of: lines.count, columns: columns)] }
        let top = min(helpTop, lines.count - (pageRows - 1))
        return Array(lines[top ..< top + pageRows - 1]) + [Self.moreKeysLine(top: top, shown: pageRows - 1, of: lines.count, columns: columns)]
    }

    /// The help's last row when the keys do not fit: which lines show and how to see the others.
    static func moreKeysLine(top: Int, shown: Int, of total: Int, columns: Int) -> String {
        // A terminal one row tall shows no key (it said "keys 1–0 of 14 lines").
        guard shown > 0 else { return TextWidth.fit("  \(total) lines of keys: the terminal is too short to show them; any key closes", columns) }
        return TextWidth.fit("  keys \(span(top + 1, top + shown)) of \(total) lines: ↑ ↓ PgUp PgDn for more, any other key closes", columns)
    }

    /// Rows `first` to `last` as a status line says them: "3–9", or "3" for one row ("1–1 of 16"
    /// read oddly on a terminal one row tall).
    static func span(_ first: Int, _ last: Int) -> String {
        first == last ? "\(first)" : "\(first)–\(last)"
    }

    /// Where the keys start after `key`, when they take `lines` lines and `rows` rows show them
    /// (one is the line that says there are more); `nil` when the key closes the help (every key
    /// does when they fit).
    static func helpScroll(_ key: Key, top: Int, lines: Int, rows: Int) -> Int? {
        let shown = rows - 1
        guard lines > rows, shown > 0 else { return nil }
        let last = lines - shown
        let top = min(top, last)
        switch key {
        case .down, .character("j"): return min(top + 1, last)
        case .up, .character("k"): return max(top - 1, 0)
        case .pageDown, .space: return min(top + shown, last)
        case .pageUp, .character("b"): return max(top - shown, 0)
        case .home, .character("g"): return 0
        case .end, .character("G"): return last
        default: return nil
        }
    }

    /// Every line of the keys, the two that head them included.
    private func keyLines() -> [String] {
        var keys: [(key: String, does: String)] = [
            ("↑ ↓  j k", "move one row"), ("PgUp PgDn  b space", "move one screen"), ("g G  Home End", "the first or the last row"),
        ]
        keys.append((":N", "go to \(model.rowName) N"))
        keys += model.keys
        if let prompt = model.inputPrompt { keys.append(("/", prompt + " (↑ ↓ PgUp PgDn move meanwhile; Enter keeps it, Esc clears it)")) }
        keys += [("?", "these keys (any key closes)"), (nested ? "q  Esc" : "q  Ctrl-C", nested ? "back" : "quit")]
        var lines = [TextWidth.fit("", columns), TextWidth.fit("  Keys", columns)]
        for (key, does) in keys {
            // A long description goes on below its key (it was cut: "search the lines (… (↑ ↓ PgU…"),
            // unless the terminal is too narrow for that to read as text (a word a line): then cut.
            let room = columns - 26
            for (index, part) in (room >= 20 ? TextWidth.wrap(does, room) : [does]).enumerated() {
                let key = index == 0 ? TextWidth.fit("    " + key, 26) : TextWidth.spaces(26)
                lines.append(palette.paint(key, palette.header) + TextWidth.fit(part, max(0, room)))
            }
        }
        return lines
    }

    /// What was typed, its end kept when it is wider than `width` columns: the caret and the last
    /// keys stay in sight (a long text showed its start, and what was being typed was cut off).
    /// The status line gives it its width less 4: the prompt's two columns, the caret and the `…`
    /// that cuts the hint after it.
    static func typed(_ text: String, _ width: Int) -> String {
        TextWidth.columns(text) > width ? TextWidth.fit(text, max(1, width), keepEnd: true) : text
    }

    /// The position, the model's fields, a message, then what fits of the extras.
    private func statusLine() -> String {
        if let typing, typingRow { return " :" + Self.typed(typing, columns - 4) + "▏  (go to \(model.rowName) N; Enter goes, Esc cancels)" }
        if let typing, let prompt = model.inputPrompt { return " /" + Self.typed(typing, columns - 4) + "▏  (\(prompt); Enter keeps it, Esc clears it)" }
        let count = model.count
        // A window past the rows known so far (`:50` in a file whose first line is still being
        // read) shows its own rows, pending: it said "50–1 of ≥ 1".
        let last = count.isExact || top < count.value ? min(count.value, top + pageRows) : top + pageRows
        let shown = count.value == 0 ? (count.isExact ? "nothing" : "listing…") : "\(Self.span(top + 1, last)) of \(count)"
        var fields = [shown]
        if following { fields.append("following the end (any key stops)") } else if followsEnd, !count.isExact { fields.append("the end · counting…") }
        if let message { fields.append(message) }  // before the figures: the width may cut the end
        fields += model.statusFields
        var line = " "
        for (index, field) in fields.enumerated() { line += index == 0 ? field : " │ " + field }
        var extras: [String] = []
        if let firstScreen { extras.append("first screen \(Int(firstScreen / .milliseconds(1))) ms") }
        extras += ["? keys", nested ? "q back" : "q quit"]
        for extra in extras where TextWidth.columns(line) + 3 + TextWidth.columns(extra) <= columns {
            line += " │ " + extra
        }
        return line
    }

    /// `text` without colour sequences (the selection is drawn in inverse video).
    static func stripped(_ text: String) -> String {
        guard text.contains("\u{1B}") else { return text }
        var result = ""
        var inEscape = false
        for scalar in text.unicodeScalars {
            if inEscape {
                if (0x40...0x7E).contains(scalar.value), scalar != "[" { inEscape = false }
                continue
            }
            if scalar == "\u{1B}" {
                inEscape = true
                continue
            }
            result.unicodeScalars.append(scalar)
        }
        return result
    }
}
