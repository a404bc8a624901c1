import Avenues
import Foundation
import GitHistory
import Synchronization
import TerminalUI

/// `history`'s log as a list: each commit's hash, date, author, refs, subject and diff stat; `/`
/// filters every commit as you type (matches shown as they are found, while git still reads), `n`/`N`
/// jump between matches in the whole log, Enter opens a commit.
final class HistoryModel: ListModel {
    let rows: HistoryRows
    let title: String
    let spoolFolder: URL
    /// The visible rows' diff stats, loaded where the list rests.
    let stats: RestingPrefetcher<String, DiffStat>
    /// The same for the filter's matches, by their row among the matches.
    let matchStats: RestingPrefetcher<String, DiffStat>
    /// The commits that match the filter, over the whole log.
    let filtered: FilteredRows<Commit>
    private let state = Mutex(State())

    private struct State {
        /// The filter's text while the list shows only its matches.
        var filter: String?
        /// The commit (its row in the whole log) to keep selected when the matches change.
        var anchor: Int?
        var listening: Task<Void, Never>?
        var query: String?
        var search: Task<Void, Never>?
        /// Which search is the running one: a search ends only its own, and a cancel ends the number.
        var searchID: UInt64 = 0
        /// How far the search got, and its outcome for the screen.
        var scanned = 0
        var found: ListAction?
        var lastCount: RowCount?
        var watching: Task<Void, Never>?
        /// Rows on screen at the last `show`.
        var screen = 0
        /// The last search hit, and the one before it (`N` goes back there).
        var hit: Int?
        var previousHit: Int?
        /// The next match after `hit`, looked for as soon as `hit` was found: `n` goes there at once,
        /// and its screen's diff stats warm meanwhile.
        var next: (query: String, after: Int, hit: Int?)?
        var lookAhead: Task<Void, Never>?
    }

    init(rows: HistoryRows, title: String, spoolFolder: URL) {
        self.rows = rows
        self.title = title
        self.spoolFolder = spoolFolder
        stats = RestingPrefetcher(avenue: rows.stats, ahead: 0) { [rows] row in rows.statKey(at: row) }
        let filtered = rows.filter()
        self.filtered = filtered
        matchStats = RestingPrefetcher(avenue: rows.matchStats, ahead: 0) { row in filtered.item(at: row)?.hash }
    }

    var heading: String {
        let paths = rows.log.paths.isEmpty ? "" : " -- " + rows.log.paths.joined(separator: " ")
        if isFiltering { return "history  \(title)\(paths)  ·  \(filtered.count) of \(counted(rows.count, "commit"))" }
        return "history  \(title)\(paths)  ·  \(counted(count, "commit"))"
    }

    var count: RowCount { isFiltering ? filtered.count : rows.count }

    private var isFiltering: Bool { state.withLock { $0.filter != nil } }

    func start(_ changed: @escaping @Sendable (Int?) -> Void) {
        rows.commits.onChange = { [stats] _ in
            stats.refresh()  // the rows of a page just read have commits to ask stats for
            changed(nil)
        }
        rows.stats.onStateChange = { row in changed(row) }
        rows.matchStats.onStateChange = { row in changed(row) }
        // git's progress moves the count: the heading follows it while git reads.
        let watching = Task { [rows] in
            var watch = LogProgressWatch()
            while !Task.isCancelled {
                let progress = rows.log.progress
                // Also when git finishes with the count unchanged: the heading's "≥" and the
                // status line's "reading git log" stayed on the screen until a key was pressed.
                if watch.changes(progress) { changed(nil) }
                if progress.finished { return }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        // The filter's matches and progress: the screen follows them, and the selection stays on
        // the same commit when it still matches.
        let listening = Task { [weak self, filtered] in
            for await _ in filtered.subscribe() {
                guard let self else { return }
                self.keepAnchor()
                self.matchStats.refresh()  // the rows shown may hold other matches now, or their first
                changed(nil)
            }
        }
        state.withLock {
            $0.watching = watching
            $0.listening = listening
        }
    }

    /// Selects the anchored commit once the filter has found it.
    private func keepAnchor() {
        guard let anchor = state.withLock({ $0.filter != nil ? $0.anchor : nil }), let index = filtered.index(ofRow: anchor) else { return }
        state.withLock { state in
            state.anchor = nil
            state.found = .select(index)
        }
    }

    func show(_ rows: Range<Int>, resting: Bool) {
        if isFiltering {
            filtered.show(rows)
            matchStats.show(rows, resting: resting)
            return
        }
        self.rows.commits.show(rows)
        state.withLock { $0.screen = rows.count }
        stats.hint(wantedHints())
        stats.show(rows, resting: resting)
    }

    /// The screens `n`, `N` and G would show: the next and the previous search match (placed a third
    /// down the screen, as the screen places a selected hit), and the last page once git has
    /// finished. Their diff stats warm at background priority.
    private func wantedHints() -> [Int] {
        let count = rows.count
        return state.withLock { state in
            var tops: [Int] = []
            if state.query != nil, let next = state.next?.hit { tops.append(max(0, next - state.screen / 3)) }
            if state.query != nil, let previous = state.previousHit { tops.append(max(0, previous - state.screen / 3)) }
            if count.isExact, state.screen > 0 { tops.append(max(0, count.value - state.screen)) }
            var seen = Set<Int>()
            return tops.filter { seen.insert($0).inserted }  // N's look-ahead finds the hit it came from
        }
    }

    var hints: [Int] { stats.hints }

    func line(at row: Int, width: Int, spinner: String, palette: Terminal.Palette) -> String? {
        if isFiltering {
            guard let commit = filtered.item(at: row) else { return nil }
            // Until the row is moved to this match (the filter changed a moment ago), it shows
            // another: the whole log's row may have the stat meanwhile.
            let stat = rows.matchStats.key(at: row) == commit.hash ? stat(rows.matchStats, at: row, spinner: spinner)
                : filtered.row(at: row).flatMap { rows.stats.item(at: $0)?.description } ?? spinner
            return line(commit, stat: stat, width: width, palette: palette)
        }
        guard let commit = rows.commits.item(at: row) else {
            guard let error = rows.commits.state(at: row).error else { return nil }
            // Said once, on the first row that failed: the rows below failed with it.
            if row > 0, rows.commits.item(at: row - 1) == nil, rows.commits.state(at: row - 1).error != nil { return "" }
            return palette.paint(TextWidth.fit(" \(error)", width), palette.failure)
        }
        return line(commit, stat: stat(rows.stats, at: row, spinner: spinner), width: width, palette: palette)
    }

    /// Row `row`'s diff stat as its column shows it.
    private func stat(_ stats: Avenue<Int, String, DiffStat>, at row: Int, spinner: String) -> String {
        switch stats.state(at: row) {
        case .loaded, .stale: stats.item(at: row)?.description ?? ""
        case .failed: "no stat"
        default: spinner
        }
    }

    /// A commit's row, `width` columns wide: hash, date, author, refs, subject and stat. On a narrow
    /// terminal the date goes first, then the author, then the stat, while the subject would get
    /// fewer than ``narrowestSubject`` columns: hash and subject stay.
    private func line(_ commit: Commit, stat: String, width: Int, palette: Terminal.Palette) -> String {
        let authorWidth = min(18, max(8, width / 8))
        let statWidth = min(24, max(0, width / 5))
        let refs = commit.refs.isEmpty ? "" : "(" + commit.refs.joined(separator: ", ") + ") "
        // A date is `YYYY-MM-DD` (a year past 9999 is longer); what is not a date (``GitDate``
        // shows it as it is) is cut and cleaned like any text from outside.
        let (hashWidth, dateWidth) = (TextWidth.columns(commit.shortHash), min(16, TextWidth.columns(commit.date)))
        var (showsDate, showsAuthor, showsStat) = (true, true, true)
        func room() -> Int {
            width - (1 + hashWidth + 2) - (showsDate ? dateWidth + 2 : 0) - (showsAuthor ? authorWidth + 2 : 0) - (showsStat ? 1 + statWidth : 0)
        }
        if room() < Self.narrowestSubject { showsDate = false }
        if room() < Self.narrowestSubject { showsAuthor = false }
        if room() < Self.narrowestSubject { showsStat = false }
        let refsWidth = min(TextWidth.columns(refs), max(0, (room() - (showsStat ? 0 : statWidth)) / 3))
        let subjectWidth = max(0, room() - refsWidth)
        let query = state.withLock { $0.filter ?? $0.query }
        let subject = TextWidth.fit(commit.subject, subjectWidth)
        let shownSubject = query.map { highlight(subject, $0, palette) } ?? subject
        var line = " " + palette.paint(commit.shortHash, palette.hash) + "  "
        if showsDate { line += palette.paint(TextWidth.fit(commit.date, dateWidth), palette.date) + "  " }
        if showsAuthor { line += palette.paint(TextWidth.fit(commit.author, authorWidth), palette.author) + "  " }
        // Cut, the refs keep their space before the subject ("(HEAD -> ma… subject", not "ma…subject").
        let shownRefs = refsWidth >= TextWidth.columns(refs) ? refs : TextWidth.fit(String(refs.dropLast()), refsWidth - 1) + " "
        if refsWidth > 0 { line += palette.paint(shownRefs, palette.ref) }
        line += shownSubject
        if showsStat { line += " " + TextWidth.fit(stat, statWidth, alignRight: true) }
        return line
    }

    /// The fewest columns the subject gets before other columns make room for it.
    static let narrowestSubject = 20

    /// `text` with the first match of `query` (as the search matches it) painted.
    private func highlight(_ text: String, _ query: String, _ palette: Terminal.Palette) -> String {
        guard palette.isOn, let range = SearchQuery(query).range(in: text) else { return text }
        return String(text[..<range.lowerBound]) + palette.paint(String(text[range]), palette.match) + String(text[range.upperBound...])
    }

    func isPending(at row: Int) -> Bool {
        if isFiltering {
            guard let commit = filtered.item(at: row) else { return true }
            return rows.matchStats.key(at: row) != commit.hash || Self.isLoading(rows.matchStats.state(at: row))
        }
        return rows.commits.item(at: row) == nil || Self.isLoading(rows.stats.state(at: row))
    }

    private static func isLoading(_ state: ItemState) -> Bool {
        !state.hasValue && state.error == nil
    }

    var statusFields: [String] {
        var fields: [String] = []
        let progress = rows.log.progress
        if let failure = rows.log.failure {
            fields.append("\(failure)")
        } else if !progress.finished {
            fields.append("reading git log: \(progress.read) commits")
        }
        let (query, searching, scanned, filter) = state.withLock { ($0.query, $0.search != nil, $0.scanned, $0.filter) }
        if let filter {
            let progress = filtered.progress
            var field = "“\(filter)”: \(filtered.count) matches"
            if !progress.isComplete { field += " · \(progress.scanned) of \(progress.total) scanned" }
            fields.append(field)
        }
        if let query, searching { fields.append("searching “\(query)”… \(scanned) of \(rows.count)") }
        let resident = rows.commits.resident
        fields += ["pages resident \(resident.pages)", "loads in flight \(rows.loadsInFlight)", "cache hits \(rows.cacheHits)"]
        return fields
    }

    var keys: [(key: String, does: String)] {
        [("Enter", "open the commit: its message, stat and diff"), ("n  N", "the next or the previous match in the whole log (after / and Esc)")]
    }

    var inputPrompt: String? { "filter subjects, authors and hashes as you type" }

    /// Every keystroke filters anew (a longer text re-checks only the last matches); Enter keeps the
    /// filter, Esc (or an empty text) shows the whole log again at the selected commit.
    func input(_ text: String?, committed: Bool, selected: Int) -> ListAction {
        let sourceRow = sourceRow(of: selected)
        guard let text, !text.isEmpty else {
            filtered.filter(nil)
            matchStats.stop()  // the matches' rows are gone; their stats stay in memory
            let wasFiltering = state.withLock { state -> Bool in
                defer { state.filter = nil; state.anchor = nil }
                return state.filter != nil
            }
            guard wasFiltering else { return .none }
            return .select(sourceRow, message: text == nil ? "filter cleared (n/N: its matches in the whole log)" : nil)
        }
        state.withLock { state in
            // The commit selected when the filter began stays the one to return to while typing.
            if state.filter == nil || state.anchor == nil { state.anchor = sourceRow }
            state.filter = text
            if state.query != text { (state.hit, state.previousHit, state.next) = (nil, nil, nil) }
            state.query = text  // n/N after the filter is cleared
        }
        filtered.filter(TextQuery(text))
        keepAnchor()
        if committed { return .message("“\(text)”: Enter kept the filter; / to change it, Esc to clear it") }
        return .none
    }

    /// The row of the whole log that list row `row` shows.
    private func sourceRow(of row: Int) -> Int {
        isFiltering ? (filtered.row(at: row) ?? 0) : row
    }

    func handle(_ key: Key, selected: Int) -> ListAction {
        switch key {
        case .enter:
            guard let commit = isFiltering ? filtered.item(at: selected) : rows.commits.item(at: selected) else { return .message("not loaded yet") }
            do {
                let show = try CommitShow(hash: commit.hash, repository: rows.log.repository, folder: spoolFolder)
                return .push(CommitModel(show: show, commit: commit))
            } catch {
                return .message("cannot show \(commit.shortHash): \(error)")
            }
        case .character("n"), .character("N"):
            if isFiltering {  // the list is the matches: the next is the row below
                let next = key == .character("n") ? selected + 1 : selected - 1
                return .select(max(0, next))
            }
            guard let text = state.withLock({ $0.query }) else { return .message("no search: press / first") }
            let forward = key == .character("n")
            // The match after this one was looked for ahead: go there at once.
            let known = state.withLock { state -> Int? in
                guard forward, let next = state.next, next.query == text, next.after == selected, let hit = next.hit else { return nil }
                return hit
            }
            if let known {
                cancelSearch()
                found(known, query: text)
                return .select(known, message: "“\(text)” at \(known + 1)")
            }
            search(from: forward ? selected + 1 : selected - 1, forward: forward)
            return .none
        case .escape:
            if isFiltering { return input(nil, committed: false, selected: selected) }
            if cancelSearch() { return .message("search cancelled") }
            return .none
        default:
            return .none
        }
    }

    func poll() -> ListAction {
        state.withLock { state in
            defer { state.found = nil }
            return state.found ?? .none
        }
    }

    /// Searches the spooled log from `row`, forward or backward, for the current query; the hit is
    /// handed to the screen through ``poll()``.
    private func search(from row: Int, forward: Bool) {
        cancelSearch()
        guard let text = state.withLock({ $0.query }) else { return }
        let query = SearchQuery(text)
        let log = rows.log
        // Made and recorded under the lock: a search that ends at once finds itself recorded
        // (one that ended first stayed recorded, shown as running until the next).
        state.withLock { state in
            state.searchID &+= 1
            let id = state.searchID
            state.scanned = row
            state.search = Task { [weak self] in
                var hit: Int?
                do {
                    if forward {
                        try await log.scan(from: row) { number, commit in
                            if query.matches(commit) {
                                hit = number
                                return false
                            }
                            if number.isMultiple(of: 5_000) { self?.state.withLock { if $0.searchID == id { $0.scanned = number } } }
                            return true
                        }
                    } else {
                        // Backwards: the rows before `row`, newest match nearest to it.
                        try await log.scan(from: 0) { number, commit in
                            guard number <= row else { return false }
                            if query.matches(commit) { hit = number }
                            return true
                        }
                    }
                } catch {
                    self?.finishSearch(id, .message("search failed: \(error)"))
                    return
                }
                guard !Task.isCancelled else { return }
                if let hit {
                    // Only the current search moves the hits n/N go from.
                    guard self?.state.withLock({ $0.searchID == id }) == true else { return }
                    self?.found(hit, query: text)
                    self?.finishSearch(id, .select(hit, message: "“\(text)” at \(hit + 1)"))
                } else {
                    self?.finishSearch(id, .message("“\(text)” not found " + (forward ? "after" : "before") + " this row"))
                }
            }
        }
    }

    /// A search landed on `hit`: it becomes the previous hit for the next one, and the match after
    /// it is looked for at once (its screen is hinted when found).
    private func found(_ hit: Int, query text: String) {
        let query = SearchQuery(text)
        let log = rows.log
        let task = Task { [weak self] in
            var next: Int?
            do {
                try await log.scan(from: hit + 1) { number, commit in
                    guard query.matches(commit) else { return true }
                    next = number
                    return false
                }
            } catch {
                return
            }
            guard !Task.isCancelled, let self else { return }
            self.state.withLock { state in
                guard state.query == text, state.hit == hit else { return }
                state.next = (text, hit, next)
            }
            self.stats.hint(self.wantedHints())
        }
        let old = state.withLock { state -> Task<Void, Never>? in
            if state.hit != hit { state.previousHit = state.hit }
            state.hit = hit
            state.next = nil
            defer { state.lookAhead = task }
            return state.lookAhead
        }
        old?.cancel()
        stats.hint(wantedHints())
    }

    /// Search `id` ended with `outcome`, unless it was cancelled or replaced meanwhile.
    private func finishSearch(_ id: UInt64, _ outcome: ListAction) {
        state.withLock { state in
            guard state.searchID == id else { return }
            state.search = nil
            state.found = outcome
        }
    }

    @discardableResult
    private func cancelSearch() -> Bool {
        // The number moves on too: a cancelled search past its last look at cancellation ends no
        // record, and posts no outcome after Esc said it was cancelled.
        let task = state.withLock { state -> Task<Void, Never>? in
            defer {
                state.search = nil
                state.searchID &+= 1
            }
            return state.search
        }
        task?.cancel()
        return task != nil
    }

    func stop() {
        cancelSearch()
        state.withLock { $0.lookAhead }?.cancel()
        filtered.stop()
        matchStats.stop()
        state.withLock { $0.listening }?.cancel()
        state.withLock { $0.watching }?.cancel()
        stats.stop()
        rows.commits.stop()
    }
}

/// What a search matches: the subject, the author or the hash's start — without regard to case
/// unless the query has a capital letter (as fzf does).
struct SearchQuery: Sendable {
    let text: String
    let caseSensitive: Bool

    init(_ text: String) {
        self.text = text
        caseSensitive = text.contains { $0.isUppercase }
    }

    func matches(_ commit: Commit) -> Bool {
        range(in: commit.subject) != nil || range(in: commit.author) != nil || commit.hash.hasPrefix(text.lowercased())
    }

    func range(in field: String) -> Range<String.Index>? {
        field.range(of: text, options: caseSensitive ? [] : [.caseInsensitive])
    }
}

/// A commit's message, stat and diff, opened over the log: paged by the same machinery.
final class CommitModel: ListModel {
    let show: CommitShow
    let commit: Commit
    let lines: PagedRows<CommitShow>

    init(show: CommitShow, commit: Commit) {
        self.show = show
        self.commit = commit
        lines = PagedRows(source: show, configuration: PagingConfiguration(pageSize: 200, maxResident: 4_000))
    }

    var heading: String { "history  commit \(commit.shortHash)  ·  \(commit.subject)" }

    var count: RowCount { lines.count }

    func start(_ changed: @escaping @Sendable (Int?) -> Void) {
        lines.onChange = { _ in changed(nil) }
    }

    func show(_ rows: Range<Int>, resting: Bool) { lines.show(rows) }

    func line(at row: Int, width: Int, spinner: String, palette: Terminal.Palette) -> String? {
        guard let line = lines.item(at: row) else { return nil }
        let text = line.text
        let fitted = TextWidth.fit(text, width)
        let color: String
        if text.hasPrefix("+++") || text.hasPrefix("---") || text.hasPrefix("diff --git") || text.hasPrefix("index ") {
            color = palette.header
        } else if text.hasPrefix("+") {
            color = palette.added
        } else if text.hasPrefix("-") {
            color = palette.removed
        } else if text.hasPrefix("@@") {
            color = palette.size
        } else if text.hasPrefix("commit ") {
            color = palette.hash
        } else if text.hasPrefix("Author:") || text.hasPrefix("Commit:") {
            color = palette.author
        } else if text.hasPrefix("AuthorDate:") || text.hasPrefix("CommitDate:") {
            color = palette.date
        } else {
            color = ""
        }
        return palette.paint(fitted, color)
    }

    func isPending(at row: Int) -> Bool { lines.item(at: row) == nil }

    var statusFields: [String] { show.isFinished ? [] : ["git show…"] }

    func stop() { lines.stop() }
}
