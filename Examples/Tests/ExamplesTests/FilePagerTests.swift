import Avenues
@testable import FilePager
import Foundation
import Testing
import TerminalUI

@Suite("A line as the pager draws it")
struct LineTextTests {
    func line(_ bytes: [UInt8], length: Int64? = nil) -> Line {
        Line(number: 0, offset: 0, length: length ?? Int64(bytes.count), bytes: bytes)
    }

    func visible(_ text: String, from column: Int = 0, width: Int) -> String {
        LineText.visible(line(Array(text.utf8)), from: column, width: width)
    }

    @Test func tabsCRLFAndControlCharacters() {
        #expect(visible("a\tb", width: 12) == "a       b   ")
        #expect(visible("abc\r", width: 5) == "abc  ")  // a CRLF file's \r is not drawn
        #expect(visible("\u{1B}[2Jx\u{7}", width: 6) == "?[2Jx?")  // nothing reaches the terminal as a command
        #expect(LineText.visible(line([0x61, 0xFF, 0x62]), from: 0, width: 4) == "a\u{FFFD}b ")
        #expect(visible("", width: 3) == "   ")
    }

    @Test func wideCharactersAndEdges() {
        #expect(visible("日本語", width: 6) == "日本語")
        #expect(visible("日本語", from: 1, width: 5) == " 本語")  // a wide character cut by the left edge is a space
        #expect(visible("日本語", width: 5) == "日本…")
        #expect(visible("abcdef", from: 2, width: 3) == "cd…")
        #expect(visible("abcdef", from: 2, width: 4) == "cdef")
        #expect(visible("abc", from: 10, width: 4) == "    ")
        #expect(visible("abc", width: 0) == "")
    }

    @Test func theASCIIFastPathDrawsWhatTheCharacterPathDraws() {
        var random = SplitMix64(seed: 5)
        let alphabet: [UInt8] = Array(0x20 ..< 0x7F) + [0x09, 0x0D, 0x1B, 0xC3, 0xA9]
        for _ in 0 ..< 5_000 {
            let printable = Bool.random(using: &random)
            let count = Int.random(in: 0 ... 60, using: &random)
            var bytes = (0 ..< count).map { _ in printable ? UInt8.random(in: 0x20 ..< 0x7F, using: &random) : alphabet.randomElement(using: &random) ?? 0x41 }
            if Int.random(in: 0 ..< 4, using: &random) == 0 { bytes.append(0x0D) }  // a CRLF line
            let length = Bool.random(using: &random) ? Int64(bytes.count) : Int64(bytes.count + 100)  // cut, or whole
            let line = line(bytes, length: length)
            let column = Int.random(in: 0 ... 70, using: &random), width = Int.random(in: 0 ... 70, using: &random)
            let fast = LineText.visible(line, from: column, width: width, asciiFastPath: true)
            let slow = LineText.visible(line, from: column, width: width, asciiFastPath: false)
            #expect(fast == slow, "\(bytes) length \(length) from \(column) width \(width)")
            #expect(TextWidth.columns(fast) == width)
        }
    }

    @Test func aMarkWithNothingToSitOnIsShownOnADottedCircle() {
        // At the start of a line, or after a tab or a control, a mark would join the gutter's last
        // cell (or a tab's space) on the screen; on U+25CC it is seen and takes its column.
        #expect(visible("\u{301}abc", width: 6) == "\u{25CC}\u{301}abc  ")
        #expect(visible("a\t\u{301}b", width: 12) == "a       \u{25CC}\u{301}b  ")
        #expect(visible("\u{7}\u{200D}x", width: 4) == "?\u{25CC}\u{200D}x ")
        #expect(visible("e\u{301}", width: 2) == "e\u{301} ")  // a mark on its own base stays there
        for text in ["\u{301}", "\u{200D}x", "\u{93F}y", "\u{1F3FE}z", "\t\u{300}", "\u{1B}\u{20DD}"] {
            let shown = visible(text, width: 10)
            #expect(TextWidth.columns(shown) == 10, "\(text.debugDescription)")
            #expect(("│" + shown).count == 1 + shown.count, "\(text.debugDescription) joins the gutter: \(shown.debugDescription)")
        }
    }

    @Test func anyTextTakesExactlyItsWidthAndJoinsNothingBeforeIt() {
        var random = SplitMix64(seed: 6)
        let alphabet: [String] = [
            "a", "Z", " ", "\t", "\r", "\u{1B}", "\u{7F}", "é", "e\u{301}", "\u{301}", "\u{200D}", "\u{FE0F}", "\u{93F}",
            "日", "ｱ", "🦊", "👍🏾", "\u{1F3FE}", "🇫", "🇷", "\u{202E}", "\u{2066}", "\u{200B}", "\u{AD}", "\u{FFFD}", "\u{600}", "\u{1100}", "\u{1161}", "\u{11A8}",
        ]
        for _ in 0 ..< 3_000 {
            let text = (0 ..< Int.random(in: 0 ... 24, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" }.joined()
            let bytes = Array(text.utf8)
            let line = line(bytes, length: Bool.random(using: &random) ? Int64(bytes.count) : Int64(bytes.count + 100))
            let column = Int.random(in: 0 ... 30, using: &random), width = Int.random(in: 0 ... 40, using: &random)
            let shown = LineText.visible(line, from: column, width: width)
            #expect(TextWidth.columns(shown) == width, "\(text.debugDescription) from \(column) width \(width): \(shown.debugDescription)")
            #expect(("│" + shown).count == 1 + shown.count, "\(text.debugDescription) from \(column): \(shown.debugDescription) joins the gutter")
        }
    }

    /// Seen 2026-11-29: "a" and 100,000 combining marks drew as "á́́…" and a replacement character:
    /// the bytes read for a screen's width ended inside a mark.
    @Test func bytesReadForTheScreenEndOnAWholeCharacter() {
        let zalgo = "a" + String(repeating: "\u{301}", count: 100_000) + "b"
        #expect(!visible(zalgo, width: 75).contains("\u{FFFD}"))
        #expect(visible(zalgo, width: 75).hasSuffix("…"))
        for tail in ["中", "😀", "é"] {
            let kept = Array((String(repeating: "\u{301}", count: 40) + tail).utf8).dropLast()  // cut inside `tail`
            let shown = LineText.visible(line(Array(kept), length: 1_000), from: 0, width: 10)
            #expect(!shown.contains("\u{FFFD}"), "\(tail)")
        }
    }

    @Test func aLineCutToWhatIsKeptSaysSo() {
        // 100 MB long, 16 bytes kept: the last column says more follows, wherever the view is.
        let cut = line(Array("0123456789abcdef".utf8), length: 100 << 20)
        #expect(LineText.visible(cut, from: 0, width: 8) == "0123456…")
        #expect(LineText.visible(cut, from: 10, width: 8) == "abcdef …")
        // Only what can reach the screen is decoded: a 16 KiB line costs a screen's width.
        let long = line([UInt8](repeating: 0x78, count: 16 << 10))
        #expect(LineText.visible(long, from: 0, width: 10) == "xxxxxxxxx…")
    }
}

@Suite("pages FILE --filter, piped")
struct LineFilterTests {
    /// The model: split into lines, keep those that contain the query, a line break after each.
    static func model(_ bytes: [UInt8], _ query: TextQuery) -> [UInt8] {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        if bytes.last == 0x0A || bytes.isEmpty { lines.removeLast() }
        return lines.filter { line in Array(line).withUnsafeBytes { query.matches(bytes: $0) } }.flatMap { Array($0) + [0x0A] }
    }

    static func filtered(_ bytes: [UInt8], _ query: TextQuery?, chunks: [Int]) -> [UInt8] {
        var filter = LineFilter(query)
        var out = Data()
        var position = 0
        var index = 0
        while position < bytes.count {
            let size = chunks.isEmpty ? bytes.count : max(1, chunks[index % chunks.count])
            let end = min(bytes.count, position + size)
            out += filter.take(Data(bytes[position ..< end]))
            position = end
            index += 1
        }
        out += filter.finish()
        return Array(out)
    }

    @Test func randomStreamsAndChunksMatchTheModel() {
        var random = SplitMix64(seed: 7)
        let alphabet = Array("abAB\n\n\n x".utf8) + [0xC3, 0xA9, 0x00]
        let queries = ["a", "ab", "AB", "aB", "b a", "x\nx", "é", "aaaa"]
        for _ in 0 ..< 3_000 {
            let long = Int.random(in: 0 ..< 10, using: &random) == 0
            let bytes = (0 ..< Int.random(in: 0 ... (long ? 3_000 : 60), using: &random)).map { _ in
                long && Bool.random(using: &random) ? UInt8(ascii: "a") : alphabet.randomElement(using: &random) ?? 0x61
            }
            let query = TextQuery(queries.randomElement(using: &random) ?? "a")
            let chunks = (0 ..< Int.random(in: 1 ... 4, using: &random)).map { _ in Int.random(in: 1 ... 9, using: &random) }
            #expect(Self.filtered(bytes, query, chunks: chunks) == Self.model(bytes, query), "\(bytes) \(query.text.debugDescription) \(chunks)")
        }
        #expect(Self.filtered(Array("a\nb".utf8), nil, chunks: [1]) == Array("a\nb".utf8))  // no query: the bytes as they are
    }

    /// A 100 MB line took 7 s (each chunk copied and searched the line so far again): linear now.
    @Test(.timeLimit(.minutes(1))) func aLineOfAHundredMegabytesIsReadOnce() {
        var filter = LineFilter(TextQuery("needle"))
        let chunk = Data(repeating: 0x78, count: 1 << 20)
        var out = Data()
        for _ in 0 ..< 100 { out += filter.take(chunk) }
        out += filter.take(Data("needle".utf8))
        out += filter.finish()
        #expect(out.count == 100 << 20 + 7)
    }
}

@Suite("pages FILE", .timeLimit(.minutes(2)))
struct FileModelTests {
    /// The folder of this process's test files, removed when it exits (a struct suite has no
    /// `deinit`: each test's folder was left behind).
    static let parent: URL = {
        atexit { try? FileManager.default.removeItem(at: FileModelTests.parent) }
        return FileManager.default.temporaryDirectory.appendingPathComponent("file-pager-\(getpid())-\(UUID().uuidString)")
    }()

    let folder: URL = {
        let url = FileModelTests.parent.appendingPathComponent(UUID().uuidString)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    func write(_ bytes: [UInt8], name: String = "file.txt") -> String {
        let path = folder.appendingPathComponent(name).path
        let created = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        precondition(created, "could not write \(path)")
        return path
    }

    /// A model started, and its change callbacks as events.
    func started(_ model: FileModel) -> AsyncStream<Void> {
        let (events, sink) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        model.start { _ in sink.yield() }
        return events
    }

    /// Waits, change by change, until `condition` holds (the suite's time limit ends a wait that never does).
    func until(_ events: AsyncStream<Void>, _ condition: () -> Bool) async {
        if condition() { return }
        for await _ in events where condition() { return }
    }

    let off = Terminal.Palette(on: false)

    @Test func linesAreNumberedAndTheCountIsExactOnceCounted() async throws {
        let path = write(Array("one\n\ttabbed\r\nesc \u{1B}]0;title\u{7}\n".utf8) + [0xC3, 0x28] + Array("\nno final break".utf8))
        let model = try FileModel(path: path)
        defer { model.stop() }
        let events = started(model)
        model.show(0 ..< 10, resting: true)
        await until(events) { model.count == .exact(5) && model.line(at: 4, width: 30, spinner: "", palette: off) != nil }
        let drawn = (0 ..< 5).map { model.line(at: $0, width: 30, spinner: "", palette: off) }
        #expect(drawn == [
            "    1 one                     ", "    2         tabbed          ", "    3 esc ?]0;title?          ",
            "    4 \u{FFFD}(                      ", "    5 no final break          ",
        ])
        #expect(model.line(at: 5, width: 30, spinner: "", palette: off) == nil)
    }

    @Test func theFirstScreenIsThereBeforeTheModelStarts() async throws {
        let long = try FileModel(path: write(Array((1 ... 1_000).map { "line \($0)\n" }.joined().utf8), name: "long.txt"))
        defer { long.stop() }
        // Not started, nothing counted: the opening lines are shown, and the count is at least them.
        #expect((0 ..< 40).allSatisfy { !long.isPending(at: $0) })
        #expect(long.line(at: 0, width: 20, spinner: "", palette: off) == "    1 line 1        ")
        #expect(long.count == .atLeast(256))
        let short = try FileModel(path: write(Array("a\nb\nc".utf8), name: "short.txt"))
        defer { short.stop() }
        #expect(short.count == .exact(3))  // read to its end: no placeholder rows below it
        #expect(short.isPending(at: 3))

        // Replaced before the rows read it: what was read at the open is not shown again.
        let path = write(Array("old first line\nsecond\n".utf8), name: "replaced.txt")
        let replaced = try FileModel(path: path)
        defer { replaced.stop() }
        #expect(replaced.line(at: 0, width: 20, spinner: "", palette: off) == "    1 old first line")
        try FileManager.default.removeItem(atPath: path)
        _ = write(Array("new\n".utf8), name: "replaced.txt")
        await replaced.look()
        let events = started(replaced)
        replaced.show(0 ..< 10, resting: true)
        await until(events) { replaced.count == .exact(1) && !replaced.isPending(at: 0) }
        #expect(replaced.line(at: 0, width: 20, spinner: "", palette: off) == "    1 new           ")
    }

    /// Whatever the path names by the time the opening lines are read, nothing blocks: a FIFO with
    /// no writer (which a plain open would wait on for good) or a folder gives no lines.
    @Test func openingLinesOfSomethingElseAreNone() throws {
        let fifo = folder.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(OpeningLines(path: fifo, bytesKeptPerLine: 100).count == 0)
        #expect(OpeningLines(path: folder.path, bytesKeptPerLine: 100).count == 0)
        #expect(OpeningLines(path: folder.appendingPathComponent("missing").path, bytesKeptPerLine: 100).count == 0)
    }

    /// The lines read as a file opens are those ``LineFile`` reads: bytes, offsets, lengths, what
    /// is kept of a long line, a CRLF, no final break, a line cut by the end of the read.
    @Test func openingLinesAreTheLinesTheFileReads() async throws {
        var random = SplitMix64(seed: 8)
        let alphabet: [UInt8] = [0x61, 0x62, 0x0A, 0x0A, 0x0D, 0xFF, 0x20]
        for round in 0 ..< 60 {
            let size = round % 4 == 0 ? OpeningLines.bytesRead + Int.random(in: -3 ... 3, using: &random) : Int.random(in: 0 ... 3_000, using: &random)
            let bytes = (0 ..< max(0, size)).map { _ in alphabet.randomElement(using: &random) ?? 0x61 }
            let path = write(bytes, name: "opening-\(round).txt")
            let keep = Int.random(in: 1 ... 40, using: &random)
            let opening = OpeningLines(path: path, bytesKeptPerLine: keep)
            let file = try LineFile(path: path, bytesKeptPerLine: keep)
            let lines = try file.lines(0 ..< opening.count)
            // A line the read cut, shown because it runs past what a row keeps, is known only up to
            // the read's end: the same bytes and start, cut, and no shorter than that.
            func seen(_ line: Line) -> [Int64] { [Int64(line.number), line.offset, line.isCut ? 1 : 0] }
            #expect((0 ..< opening.count).compactMap { opening.line($0).map(seen) } == lines.map(seen), "round \(round)")
            #expect((0 ..< opening.count).map { opening.line($0)?.bytes } == lines.map(\.bytes), "round \(round)")
            for (row, line) in lines.enumerated() {
                guard let shown = opening.line(row) else { continue }
                let readWhole = line.offset + line.length < Int64(OpeningLines.bytesRead)
                #expect(readWhole ? shown.length == line.length : shown.length <= line.length && shown.length > Int64(keep), "round \(round), row \(row)")
            }
            try await file.scan()
            let total = file.lineCount ?? -1
            #expect(opening.isWholeFile == (opening.count == total && size <= OpeningLines.bytesRead), "round \(round): \(opening.count) of \(total)")
            #expect(opening.count <= min(total, OpeningLines.linesKept))
        }
    }

    /// Probe of 2026-11-28: a file that is one 100 GB line (`truncate -s 100G`) showed a screen of
    /// spinners — its one line is whole only at its end — and G read it back whole at every frame
    /// on the keys' thread, so q never quit. Now its first row shows at once, cut, and G's screen
    /// looks back only ``FileModel/endPreviewReach`` bytes.
    @Test func aFileOfOneHugeLineShowsItsStartAndGDoesNotReadItBack() throws {
        let bytes = [UInt8](repeating: 0x61, count: 3 * OpeningLines.bytesRead)
        let opening = OpeningLines(bytes.prefix(OpeningLines.bytesRead).map { $0 }, atEnd: false, bytesKeptPerLine: 100)
        #expect(opening.count == 1 && opening.line(0)?.bytes.count == 100 && opening.line(0)?.isCut == true)
        // A partial line no longer than a row keeps is not shown: its visible part may not be whole.
        #expect(OpeningLines(Array("whole\npart".utf8), atEnd: false, bytesKeptPerLine: 100).count == 1)
        let path = write([], name: "one-huge-line.txt")
        #expect(truncate(path, off_t(FileModel.endPreviewReach) * 3) == 0)  // sparse: zeros, no line break
        let model = try FileModel(path: path, bytesKeptPerLine: 100)
        defer { model.stop() }
        #expect(model.count == .atLeast(1))
        // NUL bytes show as `?`; the row is drawn, not pending.
        #expect(!model.isPending(at: 0) && model.line(at: 0, width: 20, spinner: "*", palette: off)?.contains("?") == true)
        #expect(model.endPreview(rows: 5, width: 20, palette: off) == [])
        // Lines near the end are still found.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data("\nlast one\n".utf8))
        try handle.close()
        _ = model.file.checkForChanges()
        #expect(model.endPreview(rows: 5, width: 20, palette: off) == ["    · last one      "])
    }

    @Test func anEmptyFileHasNoLines() async throws {
        let model = try FileModel(path: write([]))
        defer { model.stop() }
        let events = started(model)
        model.show(0 ..< 10, resting: true)
        await until(events) { model.count == .exact(0) }
        #expect(model.endPreview(rows: 5, width: 20, palette: off) == [])
    }

    @Test func theEndShowsBeforeTheCountAndIsNumberedOnceItIsKnown() async throws {
        let lines = (1 ... 5_000).map { "line \($0)" }
        let model = try FileModel(path: write(Array((lines.joined(separator: "\n") + "\n").utf8)))
        defer { model.stop() }
        // Not started: nothing counted yet, and the last lines are there anyway, unnumbered.
        #expect(!model.count.isExact)
        #expect(model.endPreview(rows: 2, width: 20, palette: off) == ["    · line 4999     ", "    · line 5000     "])
        try await model.file.scan()
        #expect(model.count == .exact(5_000))
        #expect(model.endPreview(rows: 2, width: 20, palette: off) == [" 4999 line 4999     ", " 5000 line 5000     "])
    }

    /// A search that ends at once (nothing after the last line) could end before its task was
    /// recorded as the running search: the record then stayed, and the status line said
    /// "searching “zzz”… 0 %" beside "not found" until the next search (seen on `pages <(seq …)`).
    @Test func aSearchThatEndsAtOnceLeavesNoSearchRunning() async throws {
        let model = try FileModel(path: write(Array("a\nb\n".utf8)))
        defer { model.stop() }
        let events = started(model)
        await until(events) { model.count == .exact(2) }
        await expectSearchesEndingAtOnceLeaveNoneRunning(model, rounds: 300, selected: 1, outcome: "“zzz” not found after this line") {
            _ = model.input("zzz", committed: true, selected: 1)
        }
    }

    @Test func searchFindsTheNextAndThePreviousLineInEitherCase() async throws {
        var lines = (0 ..< 30_000).map { "row \($0)" }
        lines[12_345] = "the Needle here"
        lines[23_456] = "another needle"
        let model = try FileModel(path: write(Array((lines.joined(separator: "\n")).utf8)))
        defer { model.stop() }
        let events = started(model)
        func outcome() async -> String {
            var result = ""
            await until(events) {
                switch model.poll() {
                case .select(let row, let message): result = "\(row): \(message ?? "")"
                case .message(let message): result = message
                default: return false
                }
                return true
            }
            return result
        }
        _ = model.input("needle", committed: true, selected: 0)  // lower case: either case matches
        #expect(await outcome() == "12345: “needle” at line 12346")
        _ = model.handle(.character("n"), selected: 12_345)
        #expect(await outcome() == "23456: “needle” at line 23457")
        _ = model.handle(.character("n"), selected: 23_456)
        #expect(await outcome() == "“needle” not found after this line")
        _ = model.handle(.character("N"), selected: 23_456)
        #expect(await outcome() == "12345: “needle” at line 12346")
        _ = model.input("Needle", committed: true, selected: 12_345)  // a capital: exactly
        #expect(await outcome() == "“Needle” not found after this line")
        guard case .message("search cleared") = model.input("", committed: true, selected: 0) else {
            Issue.record("an empty search does not say it cleared the search")
            return
        }
    }

    @Test func aGrowingFileIsFollowedAndOneReplacedOrDeletedIsNoticed() async throws {
        let path = write(Array((1 ... 100).map { "\($0)\n" }.joined().utf8))
        let model = try FileModel(path: path, watchInterval: .milliseconds(5))
        defer { model.stop() }
        let events = started(model)
        model.show(0 ..< 40, resting: true)
        await until(events) { model.count == .exact(100) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((101 ... 250).map { "\($0)\n" }.joined().utf8))
        try handle.close()
        model.show(210 ..< 250, resting: true)
        await until(events) { model.count == .exact(250) && model.line(at: 249, width: 12, spinner: "", palette: off) == "  250 250   " }

        // Replaced by a shorter file: read anew.
        let replacement = write(Array("a\nb\n".utf8), name: "new.txt")
        #expect(rename(replacement, path) == 0)
        model.show(0 ..< 40, resting: true)
        await until(events) { model.count == .exact(2) && model.line(at: 1, width: 12, spinner: "", palette: off) == "    2 b     " }
        #expect(model.statusFields.contains("the file was replaced or truncated: read anew"))

        // Deleted: what was read stays.
        #expect(unlink(path) == 0)
        await until(events) { model.statusFields.contains("the file was deleted: showing what was read") }
        #expect(model.line(at: 0, width: 12, spinner: "", palette: off) == "    1 a     ")
    }

    @Test func aHugeLineIsKeptToItsStartAndScrolledSideways() async throws {
        var bytes = Array("short\n".utf8)
        bytes += [UInt8](repeating: 0x41, count: 20 << 20)  // a 20 MB line
        bytes += Array("\nafter\n".utf8)
        let model = try FileModel(path: write(bytes))
        defer { model.stop() }
        let events = started(model)
        model.show(0 ..< 10, resting: true)
        await until(events) { model.count == .exact(3) && model.line(at: 2, width: 12, spinner: "", palette: off) != nil }
        #expect(model.rows.item(at: 1)?.bytes.count == 16 * 1024)  // not 20 MB in memory
        #expect(model.line(at: 1, width: 12, spinner: "", palette: off) == "    2 AAAAA…")
        #expect(model.line(at: 2, width: 12, spinner: "", palette: off) == "    3 after ")
        _ = model.handle(.right, selected: 0)  // half a screen to the right
        #expect(model.line(at: 0, width: 12, spinner: "", palette: off) == "    1       ")
        #expect(model.statusFields.contains("column 9"))
        for _ in 0 ..< 2_047 {
            if case .message(let text) = model.handle(.right, selected: 0) { Issue.record("a message before the end: \(text)") }
        }
        #expect(model.statusFields.contains("column \(16 * 1024 + 1)"))
        // No further than what is kept, and a step that would pass it says why nothing more shows.
        guard case .message(let why) = model.handle(.right, selected: 0) else { Issue.record("no message at the end of what is kept"); return }
        #expect(why == "a line is shown to its first 16.0 KiB: no further right")
        #expect(model.statusFields.contains("column \(16 * 1024 + 1)"))
        _ = model.handle(.left, selected: 0)
        _ = model.handle(.character("<"), selected: 0)
        #expect(model.statusFields.contains("column \(16 * 1024 + 1 - 16)"))
    }
}

@Suite("cmd | pages: standard input kept as it is read", .timeLimit(.minutes(1)))
struct InputSpoolTests {
    /// Waits, change by change, until `condition` holds (the suite's time limit ends a wait that never does).
    func until(_ spool: InputSpool, _ condition: () -> Bool) async {
        let (events, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        spool.onChange { continuation.yield() }
        continuation.yield()
        for await _ in events where condition() { return }
    }

    /// A pipe whose other end gets `bytes` (from a thread of its own, then closed).
    func pipe(feeding bytes: [UInt8]) -> Int32 {
        var ends: [Int32] = [0, 0]
        #expect(Glibc.pipe(&ends) == 0)
        let writer = ends[1]
        Thread.detachNewThread {
            // A reader that stops early closes its end: the write fails with EPIPE instead of a
            // SIGPIPE that would end the test process (the signal stays pending on this thread).
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            var done = 0
            while done < bytes.count {
                let wrote = bytes.withUnsafeBytes { write(writer, $0.baseAddress! + done, bytes.count - done) }
                if wrote <= 0 { break }  // the reader closed its end
                done += wrote
            }
            close(writer)
        }
        return ends[0]
    }

    @Test func anEndlessInputIsReadOnlyAsFarAsItIsAskedFor() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("input-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = (0 ..< 200_000).flatMap { Array("line \($0) of the input\n".utf8) }  // 5 MB
        let spool = try InputSpool(source: pipe(feeding: bytes), folder: folder)
        // It copies what it reads ahead, then waits: the writer is not read to its end.
        await until(spool) { spool.isWaitingForDemand }
        #expect(spool.status.copied == InputSpool.readAhead && !spool.status.ended)
        #expect(try Data(contentsOf: URL(fileURLWithPath: spool.path)) == Data(bytes.prefix(Int(InputSpool.readAhead))))
        #expect(FileManager.default.isReadableFile(atPath: spool.path))
        let mode = try FileManager.default.attributesOfItem(atPath: spool.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Asked for more: it copies on to the end, exactly the bytes written.
        spool.want(beyond: spool.status.copied, by: .max)
        await until(spool) { spool.status.ended }
        #expect(spool.status.copied == Int64(bytes.count) && spool.status.problem == nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: spool.path)) == Data(bytes))
        spool.remove()
        #expect(!FileManager.default.fileExists(atPath: spool.path))
    }

    /// Two spools of one process in one folder keep their own files, and removing one ends its
    /// copy: asked for more afterwards, it reads nothing.
    @Test func spoolsOfOneProcessAreApartAndRemovingOneEndsItsCopy() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("input-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = [UInt8](repeating: 0x62, count: 6 << 20)
        let first = try InputSpool(source: pipe(feeding: bytes), folder: folder)
        let second = try InputSpool(source: pipe(feeding: Array("second\n".utf8)), folder: folder)
        #expect(first.path != second.path)
        await until(first) { first.isWaitingForDemand }
        await until(second) { second.status.ended }
        #expect(FileManager.default.fileExists(atPath: first.path) && FileManager.default.fileExists(atPath: second.path))
        first.remove()
        #expect(!FileManager.default.fileExists(atPath: first.path) && FileManager.default.fileExists(atPath: second.path))
        await until(first) { first.copyHasEnded }  // the copy saw the removal and ended
        first.want(beyond: 0, by: .max)
        #expect(first.status.copied == InputSpool.readAhead && first.copyHasEnded)
        second.remove()
    }

    @Test func aDiskWithoutRoomStopsTheCopyAndSaysSo() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("input-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let spool = try InputSpool(source: pipe(feeding: Array(repeating: 0x61, count: 100_000)), folder: folder, keptFree: .max)
        await until(spool) { spool.status.ended }
        #expect(spool.status.copied == 0)
        #expect(spool.status.problem?.hasPrefix("stopped reading standard input: ") == true)
        #expect(spool.status.problem?.hasSuffix(" left on the disk that keeps it") == true)
        spool.remove()
    }

    @Test func theSpoolOfAPagerThatWasKilledIsRemovedByTheNext() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("input-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A process that has ended: its PID names nobody.
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let abandoned = folder.appendingPathComponent("pages-input.\(ended.processIdentifier).\(UUID().uuidString)").path
        let alive = folder.appendingPathComponent("pages-input.1.\(UUID().uuidString)").path  // init: always running
        let other = folder.appendingPathComponent("pages-input.notes").path
        for path in [abandoned, alive, other] { #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8))) }
        let spool = try InputSpool(source: pipe(feeding: Array("a\n".utf8)), folder: folder)
        await until(spool) { spool.status.ended }
        #expect(!FileManager.default.fileExists(atPath: abandoned))
        #expect(FileManager.default.fileExists(atPath: alive) && FileManager.default.fileExists(atPath: other))
        spool.remove()
    }

    /// Probe of 2026-11-27: `cat /dev/zero | pages` read on for ever: each frame near the end asked
    /// for 4 MiB more, and one endless line never moved the end away from the screen.
    @Test func framesOnOneEndlessLineDoNotReadOnForEver() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("input-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let spool = try InputSpool(source: pipe(feeding: [UInt8](repeating: 0x61, count: 40 << 20)), folder: folder)
        // The first frame asks for a read-ahead past the size the file had when it was opened, and
        // the copy may be under way by then: 9.125 MiB were read once under load, against a limit
        // that took the size to be 0. The pager is opened after the copy started, as it was then.
        await until(spool) { spool.status.copied > 0 }
        let model = try FileModel(input: spool)
        let openedAt = model.file.progress.size
        for _ in 0 ..< 10 {  // ten frames of the first screen, each after the copy moved and was counted
            model.show(0 ..< 40, resting: true)
            await until(spool) { spool.isWaitingForDemand }
            try await model.file.scan()
        }
        #expect(spool.status.copied <= openedAt + 2 * InputSpool.readAhead, "\(spool.status.copied) bytes read for one line on the screen (\(openedAt) when opened)")
        #expect(model.count == .atLeast(1))
        // G asks for more each frame it is at the end: the line is read on while the screen stays there.
        _ = model.endPreview(rows: 5, width: 40, palette: Terminal.Palette(on: false))
        await until(spool) { spool.status.copied > 2 * InputSpool.readAhead }
        model.stop()
    }

    @Test func aFileModelOfStandardInputCountsAtLeastUntilItEnds() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("input-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let lines = (1 ... 300_000).flatMap { Array("\($0)\n".utf8) }  // 2 MB: within the first read-ahead
        let spool = try InputSpool(source: pipe(feeding: lines), folder: folder)
        let model = try FileModel(input: spool, watchInterval: .milliseconds(10))
        #expect(model.heading.hasPrefix("pages  (standard input)  ·  "))
        await until(spool) { spool.status.ended }
        try await model.file.scan()
        #expect(model.count == .exact(300_000))
        model.stop()
        #expect(!FileManager.default.fileExists(atPath: spool.path), "stopping the pager deletes the copy")
    }
}

