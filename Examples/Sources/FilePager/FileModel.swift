import Avenues
import Foundation
import Synchronization
import TerminalUI

/// `pages FILE`: a file of any size as a list of numbered lines, paged through a ``LineFile``.
///
/// The file's lines are counted in the background from the moment it opens (the status line shows
/// how far); a page anywhere the count has passed is one seek from the nearest checkpoint, and one
/// past it extends the count first. G before the count is known shows the last lines at once
/// (``endPreview(rows:width:palette:)``), numbered when the count arrives. `/` searches the bytes
/// forward from the selected line (`n`/`N` for the next and previous hit), ←/→ scroll sideways, F
/// follows the end as the file grows. The file is watched: lines appended appear, a file truncated
/// or replaced is read anew, a deleted one stays readable as it was.
public final class FileModel: ListModel {
    /// The file.
    public let file: LineFile
    /// Its lines as rows, made when the model starts (``start(_:)``) or is first asked for them:
    /// making them was a tenth of the instructions before the first screen (callgrind, 2026-11-25).
    public var rows: PagedRows<LineFile> {
        if let rows = madeRows.withLock({ $0 }) { return rows }
        let made = PagedRows(source: file, configuration: Self.configuration)  // outside the lock
        return madeRows.withLock { rows in
            if let rows { return rows }  // made meanwhile by another caller: that one is kept
            rows = made
            return made
        }
    }
    private let madeRows = Mutex<PagedRows<LineFile>?>(nil)
    /// The rows once made; `nil` before.
    private var existingRows: PagedRows<LineFile>? { madeRows.withLock { $0 } }
    /// The file's first lines, read as it opens and shown until the rows have them, so the first
    /// screen waits for no page load; dropped when the file changes on disk.
    private let opening: Mutex<OpeningLines>
    /// The path as given.
    public let path: String
    /// The name the heading gives the file.
    public let shownAs: String
    /// Standard input, when that is what is paged (the file is its copy): read as the screen goes.
    public let input: InputSpool?
    /// How often the file is looked at for growth, truncation or deletion.
    let watchInterval: Duration
    private let state = Mutex(State())

    private struct State {
        /// The first column shown (←/→).
        var column = 0
        var query: String?
        var search: Task<Void, Never>?
        /// Which search is the running one: a search ends only its own, and a cancel ends the number.
        var searchID: UInt64 = 0
        /// Bytes the running search has reached.
        var searchedTo: Int64 = 0
        var found: ListAction?
        var scanning: Task<Void, Never>?
        var watching: Task<Void, Never>?
        /// What happened to the file on disk, for the status line.
        var notice: String?
        var changed: (@Sendable (Int?) -> Void)?
        var width = 80
        /// The line count when more of standard input was last asked for.
        var extendedAt = -1
    }

    /// Opens `path` for paging.
    ///
    /// - Parameters:
    ///   - watchInterval: how often the file is looked at for changes (200 ms by default).
    ///   - bytesKeptPerLine: how much of each line is kept (16 KiB by default: with at most 1,000
    ///     rows resident, a file of long lines holds 16 MiB of them).
    /// - Throws: ``LineFileError`` if it cannot be opened or is not a regular file.
    ///   - shownAs: the name the heading gives it (`path` by default).
    public convenience init(
        path: String, shownAs: String? = nil, watchInterval: Duration = .milliseconds(200), bytesKeptPerLine: Int = 16 * 1024
    ) throws(LineFileError) {
        try self.init(path: path, shownAs: shownAs ?? path, input: nil, watchInterval: watchInterval, bytesKeptPerLine: bytesKeptPerLine)
    }

    /// Pages standard input, as `input` copies it.
    public convenience init(input: InputSpool, shownAs: String = FileModel.standardInputName, watchInterval: Duration = .milliseconds(200)) throws(LineFileError) {
        try self.init(path: input.path, shownAs: shownAs, input: input, watchInterval: watchInterval, bytesKeptPerLine: 16 * 1024)
    }

    /// What the heading calls standard input.
    public static let standardInputName = "(standard input)"

    private init(path: String, shownAs: String, input: InputSpool?, watchInterval: Duration, bytesKeptPerLine: Int) throws(LineFileError) {
        self.path = path
        self.shownAs = shownAs
        self.input = input
        self.watchInterval = watchInterval
        file = try LineFile(path: path, checkpointInterval: 1_000, bytesKeptPerLine: bytesKeptPerLine)
        opening = Mutex(OpeningLines(path: path, bytesKeptPerLine: bytesKeptPerLine))
    }

    /// Pages of 100 lines, one page ahead, at most 1,000 lines in memory.
    static let configuration = PagingConfiguration(pageSize: 100, prefetchDistance: 100, initialLoadSize: 100, maxResident: 1_000)

    // MARK: ListModel

    public var heading: String {
        let size = file.progress.size
        return "pages  \(shownAs)  ·  \(ByteSize.text(size))"
    }

    public var count: RowCount {
        let progress = file.progress
        // Standard input not read to its end has more lines than the copy holds.
        if let status = input?.status, !status.ended || progress.size < status.copied { return .atLeast(progress.lines) }
        if progress.isComplete { return .exact(progress.lines) }
        let (opened, isWholeFile) = opening.withLock { ($0.count, $0.isWholeFile) }
        if isWholeFile { return .exact(opened) }
        return .atLeast(max(progress.lines, existingRows?.count.value ?? 0, opened))
    }

    public var rowName: String { "line" }

    public func start(_ changed: @escaping @Sendable (Int?) -> Void) {
        rows.onChange = { _ in changed(nil) }
        input?.onChange { changed(nil) }  // the status line says how much was read
        state.withLock { $0.changed = changed }
        startScan()
        let watching = Task(priority: .utility) { [weak self, watchInterval] in
            var lastLines = -1
            while !Task.isCancelled {
                try? await Task.sleep(for: watchInterval)
                guard let self else { return }
                await self.look()
                let lines = self.file.progress.lines
                if lines != lastLines {  // the count moved: the status line and G's follow move with it
                    lastLines = lines
                    changed(nil)
                }
            }
        }
        state.withLock { $0.watching = watching }
    }

    /// Counts the lines to the end of the file as it is now, in the background.
    private func startScan() {
        let task = Task(priority: .utility) { [file, weak self] in
            try? await file.scan()
            self?.state.withLock { $0.changed }?(nil)
        }
        // One look at the lock: two scans started at once each cancel what the other stored.
        let old = state.withLock { state -> Task<Void, Never>? in
            defer { state.scanning = task }
            return state.scanning
        }
        old?.cancel()
    }

    /// Looks at the file on disk and follows what happened to it.
    func look() async {
        let before = file.progress.lines
        let change = file.checkForChanges()
        if case .unchanged = change { return }
        opening.withLock { $0 = OpeningLines() }  // what the rows read from now on is the truth
        switch change {
        case .unchanged:
            return
        case .grew:
            // Counted first, so the pages loaded again know where the file ends now.
            try? await file.scan()
            rows.refresh(after: max(0, before - 1))
        case .replaced:
            state.withLock { $0.notice = "the file was replaced or truncated: read anew" }
            startScan()
            rows.refresh()
        case .deleted:
            state.withLock { $0.notice = "the file was deleted: showing what was read" }
        }
        state.withLock { $0.changed }?(nil)
    }

    public func show(_ rows: Range<Int>, resting: Bool) {
        self.rows.show(rows)
        // Near the end of what standard input gave so far: more of it (a screen's worth many
        // times over), not all of it — and again only once that brought lines: a frame asks
        // again each time the copy moves, and an input of one endless line would be read for ever.
        guard let input else { return }
        let lines = file.progress.lines
        let extend = rows.upperBound + Self.configuration.maxResident > lines && state.withLock { state in
            defer { state.extendedAt = lines }
            return state.extendedAt != lines
        }
        if extend { input.want(beyond: file.progress.size) }
    }

    /// How much more of standard input G, F and a search ask for each time: at the end, a frame
    /// asks again for as long as it stays there.
    static let readAtTheEnd: Int64 = 64 << 20

    public func line(at row: Int, width: Int, spinner: String, palette: Terminal.Palette) -> String? {
        guard let line = item(at: row) else {
            if let error = existingRows?.state(at: row).error { return palette.paint(TextWidth.fit(" \(error)", width), palette.failure) }
            return nil
        }
        return render(line, number: String(line.number + 1), width: width, palette: palette)
    }

    /// A line with its number in the gutter.
    private func render(_ line: Line, number: String, width: Int, palette: Terminal.Palette) -> String {
        let gutter = max(4, String(max(1, count.value)).count) + 1
        let (column, query) = state.withLock { state in
            state.width = width
            return (state.column, state.query)
        }
        let textWidth = max(1, width - gutter - 1)
        var text = LineText.visible(line, from: column, width: textWidth)
        if let query, palette.isOn, let range = SearchText(query).range(in: text) {
            text = String(text[..<range.lowerBound]) + palette.paint(String(text[range]), palette.match) + String(text[range.upperBound...])
        }
        return palette.paint(TextWidth.fit(number, gutter, alignRight: true), palette.size) + " " + text
    }

    public func endPreview(rows: Int, width: Int, palette: Terminal.Palette) -> [String]? {
        // G: the end of standard input is read on while the screen shows it (each frame asks).
        input?.want(beyond: file.progress.size, by: Self.readAtTheEnd)
        // Drawn on the keys' thread at every frame: a last line longer than this is not looked for
        // (a file that is one 100 GB line was read back whole each frame, and q waited for it).
        guard let (lines, first) = try? file.lastLines(rows, searchingBackAtMost: Self.endPreviewReach) else { return nil }
        return lines.enumerated().map { index, line in
            render(line, number: first.map { String($0 + index + 1) } ?? "·", width: width, palette: palette)
        }
    }

    /// How far back from the end G's first screen looks for the last lines before the count is
    /// known: lines that start farther back wait for the scan.
    static let endPreviewReach: Int64 = 4 << 20

    public func isPending(at row: Int) -> Bool { item(at: row) == nil }

    /// Line `row` as the rows have it, else as it was read when the file opened.
    private func item(at row: Int) -> Line? {
        if let line = existingRows?.item(at: row) { return line }
        return opening.withLock { $0.line(row) }
    }

    public var statusFields: [String] {
        var fields: [String] = []
        let progress = file.progress
        if !progress.isComplete { fields.append("counting lines: \(Int(progress.fraction * 100)) %") }
        let (column, query, searching, searchedTo, notice) = state.withLock { ($0.column, $0.query, $0.search != nil, $0.searchedTo, $0.notice) }
        if let query, searching {
            let share = progress.size > 0 ? Int(min(1, Double(searchedTo) / Double(progress.size)) * 100) : 100
            fields.append("searching “\(query)”… \(share) %")
        }
        if column > 0 { fields.append("column \(column + 1)") }
        if let notice { fields.append(notice) }
        if let input {
            let status = input.status
            if let problem = status.problem {
                fields.append(problem)
            } else if !status.ended {
                fields.append("\(input.name): \(ByteSize.text(status.copied)) read, more as you go (G: all)")
            }
        }
        fields.append("pages resident \(existingRows?.resident.pages ?? 0)")
        return fields
    }

    public var keys: [(key: String, does: String)] {
        [("← →", "scroll sideways"), ("n  N", "the next or the previous match of the search"), ("F", "follow the end as the file grows (any key stops)")]
    }

    public var inputPrompt: String? { "search the lines (case-insensitive unless the text has capitals)" }

    public func input(_ text: String?, committed: Bool, selected: Int) -> ListAction {
        guard committed else { return .none }
        guard let text, !text.isEmpty else {
            cancelSearch()
            state.withLock { $0.query = nil }
            return .message("search cleared")
        }
        state.withLock { $0.query = text }
        search(from: selected + 1, forward: true)
        return .none
    }

    public func handle(_ key: Key, selected: Int) -> ListAction {
        switch key {
        case .left, .right, .character("<"), .character(">"):
            let step = max(8, state.withLock { $0.width } / 2)
            let right = key == .right || key == .character(">")
            // Only what a Line keeps can be shown: no further than that, and a step that would
            // pass it says so (the screen past a long line's kept start is blank, its … still there).
            let farthest = file.bytesKeptPerLine
            let stopped = state.withLock { state -> Bool in
                let stopped = right && state.column + step > farthest
                state.column = max(0, right ? min(farthest, state.column + step) : state.column - step)
                return stopped
            }
            return stopped ? .message("a line is shown to its first \(ByteSize.text(Int64(farthest))): no further right") : .none
        case .character("F"):
            input?.want(beyond: file.progress.size, by: Self.readAtTheEnd)
            return .follow
        case .character("n"), .character("N"):
            guard state.withLock({ $0.query }) != nil else { return .message("no search: press / first") }
            let forward = key == .character("n")
            search(from: forward ? selected + 1 : selected, forward: forward)
            return .none
        case .escape:
            if cancelSearch() { return .message("search cancelled") }
            return .none
        default:
            return .none
        }
    }

    public func poll() -> ListAction {
        state.withLock { state in
            defer { state.found = nil }
            return state.found ?? .none
        }
    }

    public func stop() {
        input?.remove()
        cancelSearch()
        let (scanning, watching) = state.withLock { ($0.scanning, $0.watching) }
        scanning?.cancel()
        watching?.cancel()
        existingRows?.stop()
    }

    // MARK: Search

    /// Searches from `row` (forward: at or after it; backward: before it); the hit reaches the screen
    /// through ``poll()``.
    private func search(from row: Int, forward: Bool) {
        cancelSearch()
        if forward { input?.want(beyond: file.progress.size, by: Self.readAtTheEnd) }  // it reads on, as less's does
        guard let text = state.withLock({ $0.query }) else { return }
        let query = SearchText(text)
        let file = file
        // Made and recorded under the lock: a search that ends at once (from the last line) finds
        // itself recorded, and ends the record (it ended first, and stayed shown as running).
        state.withLock { state in
            state.searchID &+= 1
            let id = state.searchID
            state.searchedTo = 0
            state.search = Task(priority: .userInitiated) { [weak self] in
                let hit: Int?
                do {
                    if forward {
                        let progress: @Sendable (Int64) -> Void = { [weak self] offset in
                            let changed = self?.state.withLock { state -> (@Sendable (Int?) -> Void)? in
                                guard state.searchID == id else { return nil }
                                state.searchedTo = offset
                                return state.changed
                            }
                            changed?(nil)
                        }
                        hit = try await file.firstLine(containing: Array(query.text.utf8), from: row, ignoringCase: !query.caseSensitive, progress: progress)
                    } else {
                        hit = try await file.lastLine(containing: Array(query.text.utf8), before: row, ignoringCase: !query.caseSensitive)
                    }
                } catch is CancellationError {
                    return
                } catch {
                    self?.finishSearch(id, .message("search failed: \(error)"))
                    return
                }
                guard !Task.isCancelled else { return }
                if let hit {
                    self?.finishSearch(id, .select(hit, message: "“\(text)” at line \(hit + 1)"))
                } else {
                    let unread = self?.input.flatMap { $0.status.ended ? nil : $0.name }
                    self?.finishSearch(id, .message("“\(text)” not found " + (forward ? "after" : "before") + " this line" + (unread.map { " in what \($0) gave so far" } ?? "")))
                }
            }
        }
    }

    /// Search `id` ended with `outcome`, unless it was cancelled or replaced meanwhile.
    private func finishSearch(_ id: UInt64, _ outcome: ListAction) {
        let changed = state.withLock { state -> (@Sendable (Int?) -> Void)? in
            guard state.searchID == id else { return nil }
            state.search = nil
            state.found = outcome
            return state.changed
        }
        changed?(nil)  // wakes the screen, which polls the hit
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
}

/// What `/` looks for: the text, without regard to ASCII case unless it has a capital (as less's
/// `-i` and fzf do).
struct SearchText {
    let text: String
    let caseSensitive: Bool

    init(_ text: String) {
        self.text = text
        caseSensitive = text.contains { $0.isUppercase }
    }

    /// The first match in `line` as drawn.
    func range(in line: String) -> Range<String.Index>? {
        line.range(of: text, options: caseSensitive ? [] : [.caseInsensitive])
    }
}

/// The first lines of a file, from one read of its first bytes as it opens: what the first screen
/// shows before any page loads. Only whole lines count (a line cut by the end of the read is left
/// to the rows), each made on demand as the ``Line`` that ``LineFile`` reads.
struct OpeningLines: Sendable {
    /// The bytes read: a screen of lines of ordinary length, and no more however long they are.
    static let bytesRead = 64 * 1024
    /// The most lines found: more than any screen is high.
    static let linesKept = 256

    private var bytes: [UInt8] = []
    /// Where each line's bytes start and end in `bytes` (its line break excluded): two arrays of
    /// `Int`, not one of `Range<Int>`, whose type the runtime would make on first use by looking up
    /// `Int: Comparable` among every conformance in the program (0.24 M instructions, callgrind).
    private var starts: [Int] = []
    private var ends: [Int] = []
    private var keep = 1
    /// Whether the read reached the end of the file with every line of it found.
    private(set) var isWholeFile = false

    /// No lines.
    init() {}

    /// The first lines of the file at `path`; none if it cannot be read.
    init(path: String, bytesKeptPerLine: Int) {
        // One byte more than is kept: whether the file ends within the read.
        var bytes = [UInt8](repeating: 0, count: Self.bytesRead + 1)
        // Not blocking, and only a regular file is read: the path may name something else by now
        // (a FIFO put in its place would block an open or a read for good).
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        var info = stat()
        let regular = descriptor >= 0 && fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        let count = regular ? bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) } : -1
        if descriptor >= 0 { close(descriptor) }
        guard count >= 0 else {
            self.init()
            return
        }
        bytes.removeLast(bytes.count - min(count, Self.bytesRead))
        self.init(bytes, atEnd: count <= Self.bytesRead, bytesKeptPerLine: bytesKeptPerLine)
    }

    /// The lines of `bytes`, a file's first bytes (all of it when `atEnd`).
    init(_ bytes: [UInt8], atEnd: Bool, bytesKeptPerLine: Int) {
        self.bytes = bytes
        keep = max(1, bytesKeptPerLine)
        starts.reserveCapacity(Self.linesKept)
        ends.reserveCapacity(Self.linesKept)
        var start = 0
        while starts.count < Self.linesKept, start < bytes.count {
            let found: Int? = bytes[start...].withUnsafeBytes { rest in
                guard let base = rest.baseAddress, let hit = memchr(base, 0x0A, rest.count) else { return nil }
                return UnsafeRawPointer(hit) - base
            }
            guard let found else {
                // A last line without a line break is whole only at the end of the file; one read
                // past what a row keeps shows as it will (cut), though its end is not known: a
                // file that is one 100 GB line showed nothing until its end was found.
                if atEnd || bytes.count - start > keep { append(start, bytes.count) }
                start = bytes.count
                break
            }
            append(start, start + found)
            start += found + 1
        }
        isWholeFile = atEnd && start >= bytes.count
    }

    private mutating func append(_ start: Int, _ end: Int) {
        starts.append(start)
        ends.append(end)
    }

    /// How many lines were found.
    var count: Int { starts.count }

    /// Line `row` (0-based), if it was found.
    func line(_ row: Int) -> Line? {
        guard row >= 0, row < starts.count else { return nil }
        let (start, end) = (starts[row], ends[row])
        return Line(number: row, offset: Int64(start), length: Int64(end - start), bytes: Array(bytes[start ..< start + min(end - start, keep)]))
    }
}
