import Avenues
import AvenuesSQLite
@testable import FileCatalog
import Foundation
import Synchronization
import Testing
@testable import TerminalUI

@Suite("Key decoding")
struct KeyDecoderTests {
    @Test func arrowsPagesHomeEndAndLetters() {
        var decoder = KeyDecoder()
        let bytes: [UInt8] = Array("\u{1B}[A\u{1B}[B\u{1B}[5~\u{1B}[6~\u{1B}[H\u{1B}[F\u{1B}[1~\u{1B}[4~\u{1B}OA jkgGq\r\u{03}".utf8)
        #expect(decoder.decode(bytes) == [
            .up, .down, .pageUp, .pageDown, .home, .end, .home, .end, .up, .space,
            .character("j"), .character("k"), .character("g"), .character("G"), .character("q"), .enter, .control("c"),
        ])
    }

    @Test func aSequenceSplitAcrossReadsIsDecodedWhenComplete() {
        var decoder = KeyDecoder()
        #expect(decoder.decode([0x1B]) == [])
        #expect(decoder.decode(Array("[".utf8)) == [])
        #expect(decoder.decode(Array("6".utf8)) == [])
        #expect(decoder.decode(Array("~x".utf8)) == [.pageDown, .character("x")])
        #expect(decoder.decode([0xC3]) == [])
        #expect(decoder.decode([0xA9]) == [.character("é")])
    }

    /// Found by ScreenTextFuzzer: a byte that starts a UTF-8 character swallowed the two or three
    /// bytes after it, typed keys and escape sequences included.
    @Test func aByteThatIsNotUTF8IsOneUnknownKeyAndTheKeysAfterItAreKept() {
        var decoder = KeyDecoder()
        #expect(decoder.decode([0xE2] + Array("jk".utf8)) == [.unknown, .character("j"), .character("k")])
        #expect(decoder.decode([0xF0, 0x9F] + Array("\u{1B}[B".utf8)) == [.unknown, .unknown, .down])
        #expect(decoder.decode([0xFF, 0x80, 0xC0, 0xAF, 0xED, 0xA0, 0x80]) == Array(repeating: .unknown, count: 7))
        #expect(decoder.decode([0xF0, 0x9F, 0x98]) == [])  // the rest may still come
        #expect(decoder.decode([0x80, 0xE2, 0x82, 0xAC]) == [.character("😀"), .character("€")])
    }

    @Test func modifiedArrowsAndUnknownSequencesDoNotDerailDecoding() {
        var decoder = KeyDecoder()
        #expect(decoder.decode(Array("\u{1B}[1;5A\u{1B}[99~q".utf8)) == [.up, .unknown, .character("q")])
    }

    /// A control sequence that never ends (a paste of `ESC [` and a megabyte of digits) was kept
    /// whole and scanned again at every 256-byte read: memory without bound and quadratic time, the
    /// screen frozen meanwhile. Now it is one unknown key at its 64th byte, dropped up to its final byte.
    @Test func anOverLongEscapeSequenceIsOneUnknownKeyAndNothingIsKeptOfIt() {
        var decoder = KeyDecoder()
        let head = Array("\u{1B}[".utf8) + Array(repeating: UInt8(ascii: "1"), count: KeyDecoder.longestSequence - 3)
        #expect(decoder.decode(head) == [])  // still a key's length: wait
        #expect(decoder.decode(Array("2".utf8)) == [.unknown])
        var pendingAtMost = 0
        for _ in 0..<4_096 {  // a mebibyte of parameters, as a terminal delivers it
            #expect(decoder.decode(Array(repeating: UInt8(ascii: "3"), count: 256)) == [])
            pendingAtMost = max(pendingAtMost, decoder.pendingCount)
        }
        #expect(pendingAtMost == 0)
        #expect(decoder.isWaiting)
        #expect(decoder.decode(Array("A".utf8) + Array("j\u{1B}[B".utf8)) == [.character("j"), .down])  // its final byte ends it
        #expect(!decoder.isWaiting)

        // All in one read, or cut by a pause: the same key, and the keys after it are kept.
        var whole = KeyDecoder()
        let long = Array("\u{1B}[".utf8) + Array(repeating: UInt8(ascii: ";"), count: 200) + Array("~q".utf8)
        #expect(whole.decode(long) == [.unknown, .character("q")])
        var cut = KeyDecoder()
        #expect(cut.decode(long.prefix(100)) == [.unknown])
        #expect(cut.flush() == [])
        #expect(cut.decode(Array("k".utf8)) == [.character("k")])

        // The longest sequence still read as a key: 64 bytes with its final byte last.
        var longest = KeyDecoder()
        let modified = Array("\u{1B}[1".utf8) + Array(repeating: UInt8(ascii: ";"), count: KeyDecoder.longestSequence - 5) + Array("5Ax".utf8)
        #expect(longest.decode(modified) == [.up, .character("x")])
    }

    @Test func listKeysMoveTheSelectionAndPagesMoveTheViewToo() {
        let motion = { (key: Key) in ListCommand(key)?.motion(selected: 10, top: 5, pageRows: 20).map { [$0.top, $0.selected] } }
        #expect(motion(.character("j")) == [5, 11])
        #expect(motion(.up) == [5, 9])
        #expect(motion(.space) == [25, 30])
        #expect(motion(.pageUp) == [-15, -10])   // the screen clamps
        #expect(motion(.character("g")) == [5, 0])
        #expect(motion(.character("G")) == nil)  // the last row: each screen's own
        #expect(motion(.character("q")) == nil)
        #expect(ListCommand(.character("x")) == nil)
    }
}

@Suite("Text width")
struct TextWidthTests {
    @Test func wideAndZeroWidthCharactersAreMeasured() {
        #expect(TextWidth.columns("abc") == 3)
        #expect(TextWidth.columns("日本") == 4)
        #expect(TextWidth.columns("e\u{301}") == 1)
        #expect(TextWidth.columns("🦊") == 2)
    }

    @Test func fitCutsWithAnEllipsisAndPadsToExactlyTheWidth() {
        #expect(TextWidth.fit("hello", 8) == "hello   ")
        #expect(TextWidth.fit("hello world", 8) == "hello w…")
        #expect(TextWidth.fit("42", 5, alignRight: true) == "   42")
        #expect(TextWidth.fit("Sources/Terminal/Keys.swift", 12, keepEnd: true) == "…/Keys.swift")
        #expect(TextWidth.columns(TextWidth.fit("日本語のファイル名", 7)) == 7)
    }

    /// A long text typed at `/` showed its start, and the caret and the last keys were cut off.
    @Test func aLongTypedTextKeepsItsEndInSight() {
        let typed = String(repeating: "abcdefghij", count: 30) + "END"
        let shown = ListScreen.typed(typed, 40)
        #expect(TextWidth.columns(shown) == 40 && shown.hasPrefix("…") && shown.hasSuffix("hijEND"))
        #expect(ListScreen.typed("short", 40) == "short")
        #expect(ListScreen.typed("日本語の検索", 5) == "…検索")  // 1 + 2 + 2 columns
    }

    /// Seen 2026-11-29: on a 9-row terminal `?` showed 5 of the 13 keys, quit not among them, and
    /// nothing said there were more. Keys that do not fit scroll, and their last row says so.
    @Test func keysThatDoNotFitScrollAndSaySo() {
        // 14 lines in 6 rows: 5 show, the sixth says there are more.
        #expect(ListScreen.helpScroll(.down, top: 0, lines: 14, rows: 6) == 1)
        #expect(ListScreen.helpScroll(.character("j"), top: 9, lines: 14, rows: 6) == 9)  // the last 5 show
        #expect(ListScreen.helpScroll(.space, top: 0, lines: 14, rows: 6) == 5)
        #expect(ListScreen.helpScroll(.pageDown, top: 5, lines: 14, rows: 6) == 9)
        #expect(ListScreen.helpScroll(.up, top: 0, lines: 14, rows: 6) == 0)
        #expect(ListScreen.helpScroll(.character("b"), top: 9, lines: 14, rows: 6) == 4)
        #expect(ListScreen.helpScroll(.end, top: 0, lines: 14, rows: 6) == 9)
        #expect(ListScreen.helpScroll(.home, top: 7, lines: 14, rows: 6) == 0)
        // Any other key closes; every key closes keys that fit, and a screen of one row.
        #expect(ListScreen.helpScroll(.character("x"), top: 0, lines: 14, rows: 6) == nil)
        #expect(ListScreen.helpScroll(.escape, top: 0, lines: 14, rows: 6) == nil)
        #expect(ListScreen.helpScroll(.down, top: 0, lines: 14, rows: 14) == nil)
        #expect(ListScreen.helpScroll(.down, top: 0, lines: 14, rows: 1) == nil)
        let line = ListScreen.moreKeysLine(top: 5, shown: 5, of: 14, columns: 80)
        #expect(TextWidth.columns(line) == 80 && line.contains("6–10 of 14"))
        // Seen 2026-11-29 on a terminal one row tall: "keys 1–0 of 14 lines", and "1–1 of 16".
        #expect(ListScreen.moreKeysLine(top: 0, shown: 1, of: 14, columns: 80).contains("keys 1 of 14 lines"))
        let none = ListScreen.moreKeysLine(top: 0, shown: 0, of: 14, columns: 80)
        #expect(none.contains("14 lines of keys: the terminal is too short") && !none.contains("1–0"))
        #expect(ListScreen.span(1, 1) == "1" && ListScreen.span(1, 16) == "1–16")
    }

    /// What the tools print off the terminal goes out in order, 4 KiB at a time, a large piece at
    /// once; what is left when the tool ends is written by the flush (which ends the tool with a
    /// message when a write fails: test_output_errors.py).
    @Test func printedOutputIsBufferedAndKeepsItsOrder() {
        let written = Mutex<[[UInt8]]>([])
        StandardOutput.sink.withLock { $0 = { bytes in written.withLock { $0.append(Array(bytes)) }; return 0 } }
        defer { StandardOutput.sink.withLock { $0 = nil } }
        StandardOutput.line("first")
        StandardOutput.write(Array("second\n".utf8))
        #expect(written.withLock { $0.isEmpty })  // kept: under 4 KiB
        let large = [UInt8](repeating: UInt8(ascii: "x"), count: 10_000)
        StandardOutput.write(large)
        #expect(written.withLock { $0.map(\.count) } == [13, 10_000])  // what was kept, then the piece
        StandardOutput.write(Data("last\n".utf8))
        StandardOutput.flush()
        let all: [UInt8] = written.withLock { Array($0.joined()) }
        var expected: [UInt8] = Array("first\nsecond\n".utf8)
        expected += large
        expected += Array("last\n".utf8)
        #expect(all == expected)
    }

    @Test func wrapBreaksAtSpacesIntoLinesOfTheWidth() {
        #expect(TextWidth.wrap("search the lines (case-insensitive)", 20) == ["search the lines", "(case-insensitive)"])
        #expect(TextWidth.wrap("a b c", 3) == ["a b", "c"])
        #expect(TextWidth.wrap("日本 語", 4) == ["日本", "語"])
        #expect(TextWidth.wrap("averyveryverylongword x", 5) == ["averyveryverylongword", "x"])  // cut later by fit
        #expect(TextWidth.wrap("", 10) == [""])
        #expect(TextWidth.wrap("  spaced   out  ", 40) == ["spaced out"])
        #expect(TextWidth.wrap("a b", 0) == ["a", "b"])
    }

    /// Found by ScreenTextFuzzer: a character's columns were its first scalar's, so a row padded
    /// after a prepended mark (U+0605 joins the space after it), or a `?` shown for a control
    /// before a spacing mark (U+093E joins it), took one column less than its width.
    @Test func aFittedTextTakesItsWidthWhateverJoinsAtItsSeamsAndMarks() {
        #expect(TextWidth.columns("\u{605} ") == 1)
        #expect(TextWidth.columns("?\u{93E}") == 2)
        #expect(TextWidth.columns("\u{1100}\u{1161}\u{11A8}") == 2)  // Hangul jamo: one syllable
        for (text, width) in [("ab\u{605}", 6), ("\u{2}\u{93E}[B~4@Oq", 5), ("\u{1F1EB}\u{202E}\u{1F1F7}x", 4), ("x\u{605}", 1)] {
            for alignRight in [false, true] {
                for keepEnd in [false, true] {
                    let fitted = TextWidth.fit(text, width, alignRight: alignRight, keepEnd: keepEnd)
                    #expect(TextWidth.columns(fitted) == width, "\(text.debugDescription) right \(alignRight) end \(keepEnd): \(fitted.debugDescription)")
                }
            }
            #expect(TextWidth.columns(TextWidth.fitPath(text, width)) == width)
        }
    }

    /// Found by ScreenTextFuzzer: a text that starts with a mark (here an emoji skin-tone modifier,
    /// U+1F3FE) has nothing to sit on, so right-aligned it joined the padding before it into one
    /// character and the row took 62 columns of 63. Such a character is shown on a dotted circle
    /// (U+25CC, Unicode's base for a mark shown alone), which joins nothing before it.
    @Test func aTextThatStartsWithAMarkIsShownOnADottedCircleAndTakesItsWidth() {
        let fuzzed = String(decoding: [0xF0, 0x9F, 0x8F, 0xBE, 0x9F, 0x31, 0xCC, 0xAE, 0x9F, 0x31, 0xB8, 0x3E] as [UInt8], as: UTF8.self)
        for text in [fuzzed, "\u{301}abc", "\u{1F3FE}\u{1F3FE}x", "\u{200D}\u{1F355}", "\u{93E}ab", "a\u{1}\u{301}b", "a\u{202E}\u{301}b"] {
            for width in [1, 2, 3, 5, 63] {
                for alignRight in [false, true] {
                    for keepEnd in [false, true] {
                        let fitted = TextWidth.fit(text, width, alignRight: alignRight, keepEnd: keepEnd)
                        #expect(TextWidth.columns(fitted) == width, "\(text.debugDescription) in \(width), right \(alignRight), end \(keepEnd): \(fitted.debugDescription)")
                        // Whatever comes before it on the screen, it is a character of its own.
                        #expect(("x" + fitted).count == 1 + fitted.count, "\(fitted.debugDescription) joins what is before it")
                    }
                }
            }
        }
        #expect(TextWidth.fit("\u{301}abc", 5) == "\u{25CC}\u{301}abc ")
        #expect(TextWidth.fit("a\u{202E}\u{301}b", 5) == "a?\u{25CC}\u{301}b ")
        #expect(TextWidth.fit("e\u{301}", 2, alignRight: true) == " e\u{301}")
        // A modifier on a base that is no emoji is drawn as a swatch of its own (tmux 3.3: the
        // cursor ends 3 columns after "◌🏾"); on an emoji, the two are one picture.
        #expect(TextWidth.columns("\u{25CC}\u{1F3FE}") == 3)
        #expect(TextWidth.columns("1\u{1F3FE}") == 3)
        #expect(TextWidth.columns("\u{1F44D}\u{1F3FE}") == 2)
        #expect(TextWidth.columns("\u{1F1EB}\u{1F1F7}") == 2)
        #expect(TextWidth.columns("\u{1F3FE}") == 2)
        #expect(TextWidth.fit("\u{1F3FE}ab", 6) == "\u{25CC}\u{1F3FE}ab ")
    }

    /// The ASCII and simple-scalar paths against the character path, on text that mixes what they
    /// take with what they must leave to it: marks that join the character before, a prepended
    /// mark that joins the one after, emoji, bidirectional and other controls, wide characters.
    @Test func theFastPathsFitWhatTheCharacterPathFits() {
        var random = SplitMix64(seed: 1)
        let simple = ["a", "Z", " ", "~", "│", "–", "·", "…", "≥", "⠋", "é", "\u{A0}", "→", "█"]
        let other = [
            "\u{301}", "\u{20D0}", "\u{200D}", "🦊", "⌚", "\u{25FD}", "\u{600}", "\u{202E}", "\u{200E}", "\u{1B}", "\t", "\r\n",
            "日", "\u{AD}", "\u{FE0F}", "\u{1F1EB}", "\u{2028}",
        ]
        for _ in 0 ..< 20_000 {
            let mixed = Int.random(in: 0 ..< 3, using: &random) == 0
            let pieces = (0 ..< Int.random(in: 0 ... 24, using: &random)).map { _ in
                mixed && Int.random(in: 0 ..< 6, using: &random) == 0 ? other.randomElement(using: &random) ?? "" : simple.randomElement(using: &random) ?? ""
            }
            let text = pieces.joined()
            let width = Int.random(in: 0 ... 26, using: &random)
            let alignRight = Bool.random(using: &random), keepEnd = Bool.random(using: &random)
            let expected = TextWidth.fitCharacters(text, width, alignRight: alignRight, keepEnd: keepEnd)
            #expect(TextWidth.fit(text, width, alignRight: alignRight, keepEnd: keepEnd) == expected, "\(text.debugDescription) in \(width), right \(alignRight), end \(keepEnd)")
            #expect(TextWidth.fit(text.dropFirst(0), width, alignRight: alignRight, keepEnd: keepEnd) == expected)
            #expect(TextWidth.columns(text) == text.reduce(0) { $0 + TextWidth.columns($1) }, "\(text.debugDescription)")
        }
    }
}

@Suite("File summaries")
struct FileSummaryTests {
    @Test func crc32MatchesTheStandardCheckValue() {
        var crc = CRC32()
        Array("123456789".utf8).withUnsafeBytes { crc.update($0) }
        #expect(crc.value == 0xCBF4_3926)
    }

    /// The CRC folded with carry-less multiplication (C, PCLMULQDQ) and the newlines counted with
    /// SSE2 agree with the Swift loops for every length from 0 to 1,100 bytes at each of 16
    /// alignments, and for random megabytes cut at random places.
    @Test func theVectorScansAgreeWithTheSwiftLoops() {
        #if arch(x86_64)
        #expect(CRC32.folds, "an x86-64 processor without PCLMULQDQ: the folding path went untested")
        #endif
        var generator = SplitMix64(seed: 2)
        let buffer = (0 ..< 1_200).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
        let withNewlines = buffer.enumerated().map { $0.offset % 5 == 0 ? 0x0A : $0.element }
        for bytes in [buffer, withNewlines] {
            bytes.withUnsafeBytes { all in
                for alignment in 0 ..< 16 {
                    for length in 0 ... 1_100 {
                        let slice = UnsafeRawBufferPointer(rebasing: all[alignment ..< alignment + length])
                        var vector = CRC32()
                        vector.update(slice)
                        var sliced = CRC32()
                        sliced.updateBySlicing(slice)
                        guard vector.value == sliced.value else {
                            Issue.record("CRC of \(length) bytes at alignment \(alignment): \(vector.value) against \(sliced.value)")
                            return
                        }
                        guard FileSummarizer.Summarizing.countBreaks(slice) == FileSummarizer.Summarizing.countBreaksBySWAR(slice) else {
                            Issue.record("newlines of \(length) bytes at alignment \(alignment)")
                            return
                        }
                    }
                }
            }
        }
        for _ in 0 ..< 8 {
            let count = Int.random(in: 1 << 20 ... 3 << 20, using: &generator)
            let big = (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
            var vector = CRC32()
            var sliced = CRC32()
            var start = 0
            big.withUnsafeBytes { all in
                while start < count {
                    let end = min(count, start + Int.random(in: 1 ... 200_000, using: &generator))
                    vector.update(UnsafeRawBufferPointer(rebasing: all[start ..< end]))
                    start = end
                }
                sliced.updateBySlicing(all)
                #expect(FileSummarizer.Summarizing.countBreaks(all) == FileSummarizer.Summarizing.countBreaksBySWAR(all))
            }
            #expect(vector.value == sliced.value)
        }
        // Lines of 255 × 16 newlines and more: the byte lanes' counts wrap at 256.
        let newlines = [UInt8](repeating: 0x0A, count: 70_001)
        newlines.withUnsafeBytes { #expect(FileSummarizer.Summarizing.countBreaks($0) == 70_001) }
    }

    /// The summary's loops are written for speed (eight bytes a step); they must count what a
    /// byte-at-a-time reading counts, however the file is cut into reads. Random files (text,
    /// binary, all newlines, long lines) cut at random places, against a plain model.
    @Test func theFastSummaryMatchesAByteAtATimeModel() {
        var generator = SplitMix64(seed: 3)
        for round in 0 ..< 300 {
            let count = round < 20 ? round : Int.random(in: 0 ..< 20_000, using: &generator)
            let alphabet: [UInt8] = switch round % 4 {
            case 0: Array(0 ... 255)
            case 1: Array("ab\n".utf8)
            case 2: [0x0A]
            default: Array("abcdefghijklmnopqrstuvwxyz é中".utf8) + [0x0A]
            }
            let bytes = (0 ..< count).map { _ in alphabet.randomElement(using: &generator) ?? 0 }
            // The model.
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0 ..< 8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
            }
            crc ^= 0xFFFF_FFFF
            var histogram = [Int](repeating: 0, count: 16)
            for byte in bytes { histogram[Int(byte >> 4)] += 1 }
            let firstLine = Array(bytes.prefix { $0 != 0x0A }.prefix(FileSummarizer.previewLimit))
            // Summarized in reads of random sizes.
            var summary = FileSummarizer.Summarizing()
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + Int.random(in: 1 ... 300, using: &generator))
                bytes[start ..< end].withUnsafeBytes { summary.add($0) }
                start = end
            }
            #expect(summary.crc.value == crc, "round \(round)")
            #expect(summary.lines == bytes.count { $0 == 0x0A }, "round \(round)")
            // Kept for a binary file, whose preview it is.
            if summary.isBinary { #expect(summary.histogram == histogram, "round \(round)") }
            #expect(summary.result == FileSummary(
                lines: bytes.count { $0 == 0x0A }, crc32: crc, isBinary: summary.isBinary,
                preview: summary.isBinary ? Sparkline.render(histogram) : summary.result.preview
            ), "round \(round)")
            #expect(summary.firstLine == firstLine, "round \(round)")
            #expect(summary.firstLineDone == bytes.contains(0x0A), "round \(round)")
        }
    }

    /// Seen 2026-11-29: a 1 TiB file's row spun for hours with no sign of how far it was (and the
    /// summary read 120 MB/s; it now reads about 650). A large file's row says how much is read.
    @Test func aLargeFilesRowSaysHowFarItsSummaryHasRead() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("progress-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("large.bin")
        try Data(count: 1 << 20).write(to: file)
        // Reported after each 64 KiB read, rising, to the whole file; then nothing is left
        // recorded. A small file is not reported.
        let table = FileTable(entries: try FileListing.list(folder.path), cacheFolder: nil)
        let entry = try #require(table.entries.first { $0.path.hasSuffix("large.bin") })
        let reported = Recorded()
        let progress = SummaryProgress(smallestReported: 1 << 20, reportEvery: 64 << 10) { _, read in reported.values.withLock { $0.append(read) } }
        #expect(try await FileSummarizer(progress: progress).process(entry.ref) == FileSummarizer.summarize(Data(count: 1 << 20)))
        #expect(reported.values.withLock { $0 } == (1 ... 16).map { Int64($0) << 16 } + [nil])
        #expect(progress.bytesRead(of: entry.ref) == nil)
        let smaller = SummaryProgress(smallestReported: (1 << 20) + 1, reportEvery: 64 << 10) { _, read in reported.values.withLock { $0.append(read) } }
        reported.values.withLock { $0 = [] }
        _ = try await FileSummarizer(progress: smaller).process(entry.ref)
        #expect(reported.values.withLock { $0 }.isEmpty)
        // While it reads, its row shows the spinner and the share read.
        let rows = LocalRows(table: table, title: "t", ahead: 1)
        table.progress.set(entry.ref, 387 << 10)
        let row = try #require(table.entries.firstIndex(of: entry))
        let line = try #require(rows.line(at: row, width: 100, spinner: "⠋", palette: Terminal.Palette(on: false)))
        #expect(line.contains("⠋ 37%"), "\(line)")
        table.progress.set(entry.ref, nil)
        let done = try #require(rows.line(at: row, width: 100, spinner: "⠋", palette: Terminal.Palette(on: false)))
        #expect(!done.contains("%"))
    }

    /// Seen 2026-11-29: `browse` of two large files on two cores froze — no frame, no key, not
    /// even `q` — until one summary ended: each held a thread of the shared pool for seconds. On a
    /// pool of one thread, other work now runs before a 4 MiB summary ends.
    @Test func aSummaryGivesOtherWorkATurnWhileItReads() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("turns-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(count: 4 << 20).write(to: file)
        let ref = FileRef(path: file.path, size: 4 << 20, modified: 0)
        let executor = OneThreadExecutor()
        let order = Recorded()
        let summary = Task(executorPreference: executor) {
            _ = try await FileSummarizer().process(ref)
            order.values.withLock { $0.append(1) }
        }
        let other = Task(executorPreference: executor) { order.values.withLock { $0.append(2) } }
        try await summary.value
        await other.value
        #expect(order.values.withLock { $0 } == [2, 1])
    }

    @Test func aShareReadIsAWholePercentUnder100WhateverTheSizes() {
        #expect(SummaryProgress.percent(0, of: 100) == "0%")
        #expect(SummaryProgress.percent(50, of: 100) == "50%")
        #expect(SummaryProgress.percent(100, of: 100) == "99%")
        #expect(SummaryProgress.percent(300, of: 100) == "99%")  // it grew while read
        #expect(SummaryProgress.percent(5, of: 0) == "0%")
        #expect(SummaryProgress.percent(5, of: -1) == "0%")
        #expect(SummaryProgress.percent(-5, of: 10) == "0%")
        #expect(SummaryProgress.percent(.max, of: .max) == "99%")
        #expect(SummaryProgress.percent(.max / 2, of: .max) == "50%")
        #expect(SummaryProgress.percent(1 << 39, of: 1 << 40) == "50%")
        #expect(SummaryProgress.percent(1, of: .max) == "0%")
    }

    @Test func textFilesShowTheirFirstLineAndLineCount() {
        let summary = FileSummarizer.summarize(Data("\tfirst line\r\nsecond\nthird".utf8))
        #expect(summary.lines == 2)  // newline characters, as wc -l counts them
        #expect(!summary.isBinary)
        #expect(summary.preview == "first line")
    }

    /// Seen 2026-11-29: a first line longer than the preview keeps, cut inside a character, showed
    /// a replacement character at the cut.
    @Test func aPreviewCutInsideACharacterEndsBeforeIt() {
        // Each first line's 400th byte is inside a character.
        for (start, character, count) in [("xx", "中", 134), ("x", "é", 200), ("x", "\u{301}", 250), ("x", "😀", 100)] {
            let summary = FileSummarizer.summarize(Data((start + String(repeating: character, count: count) + "\n").utf8))
            #expect(!summary.preview.contains("\u{FFFD}"), "\(character.debugDescription)")
            #expect(summary.preview.utf8.count >= FileSummarizer.previewLimit - 3)
        }
        // A byte that is not UTF-8 before the cut is still shown as one.
        let bees = String(repeating: "b", count: 40)
        #expect(FileSummarizer.summarize(Data([0x61, 0xFF] + Array(bees.utf8) + [0x0A])).preview == "a\u{FFFD}" + bees)
    }

    @Test func binaryFilesShowAByteHistogramSparkline() {
        let bytes = Data((0..<4_096).map { UInt8(truncatingIfNeeded: $0 % 64) })
        let summary = FileSummarizer.summarize(bytes)
        #expect(summary.isBinary)
        #expect(summary.preview.count == 16)
        #expect(summary.preview.hasPrefix("████"))
        #expect(summary.preview.hasSuffix("    "))
        // No NUL, but bytes that are not text (seen 2026-11-23 previewed as replacement characters).
        let noNulBytes: [UInt8] = (0..<872).map { (index: Int) -> UInt8 in
            let byte = UInt8((572 * 7 + index * index) % 256)
            return byte == 0 ? 1 : byte
        }
        let noNul = Data(noNulBytes)
        #expect(FileSummarizer.summarize(noNul).isBinary)
        // A Latin-1 text is text.
        var latin1Bytes: [UInt8] = Array("Un caf".utf8) + [0xE9]
        latin1Bytes += Array(" au lait pour commencer la journ".utf8) + [0xE9, 0x65, 0x0A]
        let latin1 = Data(latin1Bytes)
        #expect(!FileSummarizer.summarize(latin1).isBinary)
        #expect(FileSummarizer.summarize(Data("ünïcödé text\n".utf8)).isBinary == false)
    }

    @Test func readingAFileMatchesSummarizingItsBytes() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("summary-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: url) }
        let bytes: [UInt8] = (0..<200_000).map { (index: Int) -> UInt8 in
            index % 97 == 0 ? 10 : UInt8(65 + index % 26)
        }
        let data = Data(bytes)
        try data.write(to: url)
        let ref = FileRef(path: url.path, size: Int64(data.count), modified: 0)
        #expect(try await FileSummarizer().process(ref) == FileSummarizer.summarize(data))
    }

    @Test func aMissingFileIsAReadableError() async {
        await #expect(throws: FileSummarizer.SummaryError.self) {
            try await FileSummarizer().process(FileRef(path: "/nonexistent/file", size: 0, modified: 0))
        }
    }

    /// Seen 2026-11-29 in `browse /proc`: a file that opens but cannot be read (`attr/current`:
    /// EINVAL; here a folder: EISDIR) said "cannot be read: The operation could not be completed.
    /// (NSCocoaErrorDomain …)", where an open's failure gives the system's reason.
    @Test func aFileThatOpensButCannotBeReadSaysTheSystemsReason() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("unreadable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let error = await #expect(throws: FileSummarizer.SummaryError.self) {
            try await FileSummarizer().process(FileRef(path: folder.path, size: 0, modified: 0))
        }
        #expect(error?.reason == "cannot be read (\(String(cString: strerror(EISDIR))))")
    }

    @Test func sizesAreHumanReadable() {
        #expect(ByteSize.text(999) == "999 B")
        #expect(ByteSize.text(1_536) == "1.5 KiB")
        #expect(ByteSize.text(5 << 20) == "5.0 MiB")
        // Just under a unit rounds up into it, not to "1024.0" of the one below; the largest stay EiB.
        #expect(ByteSize.text(1_048_575) == "1.0 MiB")
        #expect(ByteSize.text(1_048_524) == "1023.9 KiB")
        #expect(ByteSize.text((1 << 30) - 1) == "1.0 GiB")
        #expect(ByteSize.text(.max) == "8.0 EiB")
        #expect(ByteSize.text(-1) == "-1 B")
    }
}

@Suite("Ordered streaming")
struct OrderedStreamTests {
    @Test func rowsComeOutInOrderAndEqualTheSequentialComputation() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ordered-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for index in 0..<120 {
            let text = (0..<(index % 9)).map { "line \($0) of file \(index)\n" }.joined()
            try Data(text.utf8).write(to: folder.appendingPathComponent(String(format: "f%03d.txt", index)))
        }
        let entries = try FileListing.list(folder.path)
        let layout = TableLayout(width: 120)
        var streamed: [String] = []
        var order: [Int] = []
        let table = FileTable(entries: entries, cacheFolder: nil)
        await streamRowsInOrder(of: table, ahead: 7) { index, content in
            order.append(index)
            streamed.append(layout.row(entries[index], content))
        }
        var reference: [String] = []
        await computeRowsSequentially(of: entries) { index, content in reference.append(layout.row(entries[index], content)) }
        #expect(order == Array(0..<120))
        #expect(streamed == reference)
        // Rows are released once printed: nothing stays assigned.
        #expect(table.avenue.tableSizes.rows == 0)
    }
}

@Suite("Hostile names and text")
struct HostileTextTests {
    /// `--width 99999999999999` (or such a `COLUMNS`) asked for 40 TB of padding and the tools
    /// crashed; a layout is at most `TableLayout.widest` columns.
    @Test func anAbsurdWidthIsBounded() {
        for width in [Int.max, 99_999_999_999_999, TableLayout.widest + 1, Int.min, -5, 0] {
            let layout = TableLayout(width: width)
            #expect((1 ... TableLayout.widest).contains(layout.width))
            #expect(TextWidth.columns(layout.row(path: "a.txt", size: 10, .pending)) <= TableLayout.widest)
        }
    }

    /// Seen 2026-11-27: in a terminal pane 30 columns wide, each row of `browse` (at least 43
    /// columns) wrapped onto the next line and pushed the screen up. A layout is exactly as wide
    /// as asked, its columns dropped from the right while the path would get fewer than 10.
    @Test func aTableIsExactlyAsWideAsAskedAtAnyWidth() {
        let palette = Terminal.Palette(on: true)
        let summary = FileSummary(lines: 12_345, crc32: 0xDEAD_BEEF, isBinary: false, preview: "a preview of the file that goes on")
        for width in Array(1 ... 130) + [199, 200, 1_000] {
            let layout = TableLayout(width: width)
            let rows = [
                layout.header(palette: palette),
                layout.row(path: "some/folder/a-rather-long-file-name.txt", size: 123_456_789, .loaded(summary), palette: palette),
                layout.row(path: "folder/", size: nil, .folder, palette: palette),
                layout.row(path: "x", size: 1, .failed("no permission to read it, of course"), palette: palette),
                layout.row(path: "日本語/ファイル.txt", size: nil, .pending, palette: palette),
            ]
            for row in rows {
                #expect(TextWidth.columns(ListScreen.stripped(row)) == width, "width \(width): \(ListScreen.stripped(row).debugDescription)")
            }
            #expect(layout.pathWidth >= min(width, 10), "width \(width)")
        }
        // The columns go from the right, in turn, as the width shrinks.
        #expect(TableLayout(width: 43).header == "PATH        " + "     SIZE     LINES  CRC32     ")
        #expect(TableLayout(width: 42).header == "PATH              SIZE     LINES  CRC32   ")
        #expect(TableLayout(width: 30).header == "PATH                      SIZE")
        #expect(TableLayout(width: 20).header == "PATH                ")
    }

    /// What the screen does to every line a list hands it: at most the terminal's width, colours
    /// kept, a colour cut short ended.
    @Test func aLineIsClippedToTheScreenWithItsColours() {
        let red = Terminal.ANSI.red, reset = Terminal.ANSI.reset
        #expect(TextWidth.clip("abc", 5) == "abc")
        #expect(TextWidth.clip("abcdef", 3) == "abc")
        #expect(TextWidth.clip(red + "abc" + reset + "def", 5) == red + "abc" + reset + "de" + reset)
        #expect(TextWidth.clip(red + "abcdef" + reset, 2) == red + "ab" + reset)
        #expect(TextWidth.clip("a日本", 2) == "a")  // a wide character is dropped whole, not cut
        #expect(TextWidth.clip("e\u{301}x", 1) == "e\u{301}")
        #expect(TextWidth.clip("abc", 0) == "")
        #expect(TextWidth.clip("abc", -3) == "")
        var random = SplitMix64(seed: 4)
        let pieces = ["a", "日", "🦊", "e\u{301}", red, reset, Terminal.ANSI.inverse, "\u{1B}[38;5;208m", " "]
        for _ in 0 ..< 2_000 {
            let line = (0 ..< Int.random(in: 0 ... 30, using: &random)).map { _ in pieces.randomElement(using: &random) ?? "a" }.joined()
            let width = Int.random(in: 0 ... 40, using: &random)
            let clipped = TextWidth.clip(line, width)
            let shown = TextWidth.columns(ListScreen.stripped(clipped))
            #expect(shown <= width && shown >= min(width, TextWidth.columns(ListScreen.stripped(line))) - 1, "\(line.debugDescription) at \(width)")
            #expect(ListScreen.stripped(line).hasPrefix(ListScreen.stripped(clipped)))
        }
    }

    /// Seen 2026-11-23: a commit subject or a path with `ESC]2;…BEL` retitled the terminal and
    /// `ESC[2J` cleared it.
    @Test func escapeSequencesNeverReachTheTerminal() {
        let hostile = "x\u{1B}]2;PWNED\u{07}\u{1B}[2J\r\u{9B}31m\u{202E}txt.exe"
        for shown in [TerminalSafe.clean(hostile), TextWidth.fit(hostile, 40), TextWidth.fit(hostile, 5), TextWidth.fitPath("/tmp/" + hostile + "/name", 12)] {
            #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) || $0.value == 0x202E }, "\(shown.debugDescription)")
        }
        #expect(TerminalSafe.clean(hostile) == "x?]2;PWNED??[2J??31m?txt.exe")
    }

    /// Seen 2026-11-29: a name with a right-to-left override or a zero-width space in it was shown
    /// as another name (`a\u{202E}b` as `ab`; `rep\u{200B}ort` as `report`, beside the real one).
    /// Each such character is a `?` where it was, as a control character is; the joiners that emoji
    /// and scripts need stay.
    @Test func invisibleAndBidirectionalCharactersAreMarkedNotHidden() {
        let invisible: [Unicode.Scalar] = ["\u{202A}", "\u{202E}", "\u{2066}", "\u{2069}", "\u{200E}", "\u{200F}", "\u{061C}", "\u{200B}", "\u{2060}", "\u{2064}", "\u{FEFF}", "\u{180E}"]
        for scalar in invisible {
            let name = "rep" + String(Character(scalar)) + "ort"
            for shown in [TerminalSafe.clean(name), TextWidth.fit(name, 10), TextWidth.fit(name, 10, keepEnd: true), TextWidth.fitPath("/x/" + name, 12)] {
                #expect(shown.contains("rep?ort"), "\(name.debugDescription) shown as \(shown.debugDescription)")
                #expect(!shown.unicodeScalars.contains(scalar))
            }
            #expect(TerminalSafe.needsCleaning(name))
            #expect(TextWidth.columns(TextWidth.fit(name, 10)) == 10)
        }
        // Joiners and marks that text needs are kept.
        for kept in ["\u{1F469}\u{200D}\u{1F4BB}", "\u{0645}\u{200C}\u{06CC}", "e\u{301}", "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}"] {
            #expect(TerminalSafe.clean(kept) == kept)
            #expect(!TerminalSafe.needsCleaning(kept))
        }
    }

    /// Seen 2026-11-29: `browse` of a folder holding one folder said "1 folders".
    @Test func aCountOfOneTakesTheSingular() throws {
        #expect(counted(1, "folder") == "1 folder")
        #expect(counted(0, "folder") == "0 folders")
        #expect(counted(11, "file") == "11 files")
        #expect(counted(RowCount.exact(1), "row") == "1 row")
        #expect(counted(RowCount.atLeast(1), "row") == "≥ 1 rows")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("one-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("inner"), withIntermediateDirectories: true)
        try Data("x\n".utf8).write(to: folder.appendingPathComponent("file.txt"))
        let rows = LocalRows(table: FileTable(entries: try FileListing.list(folder.path), cacheFolder: nil), title: "t", ahead: 1)
        #expect(rows.heading == "browse  t  ·  1 file, 1 folder")
    }

    /// Seen 2026-11-23: a 10,000-line subject took 4 s to draw each frame.
    @Test func fittingAHugeStringReadsOnlyAScreensWidth() {
        let huge = String(repeating: "subject line\n", count: 100_000)
        let shown = TextWidth.fit(huge, 80)
        #expect(TextWidth.columns(shown) == 80)
        #expect(shown.hasSuffix("…"))
        #expect(!shown.contains("\n"))
    }

    @Test func aPathKeepsItsLastFolderAndNameWhenCut() {
        let path = "usr/share/doc/some-very-long-package-name-indeed/examples/configuration.sample"
        #expect(TextWidth.fitPath(path, 36) == "…/examples/configuration.sample     ")
        #expect(TextWidth.fitPath(path, 24) == "…/configuration.sample  ")
        #expect(TextWidth.fitPath(path, 10) == "…on.sample")
        #expect(TextWidth.fitPath("a/b/", 10) == "a/b/      ")
    }
}

@Suite("Folder listing")
struct FolderListingTests {
    func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("listing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Seen 2026-11-23: names that are not UTF-8 were silently missing (8 of 10 shown).
    @Test func namesThatAreNotUTF8AreListedAndOpenedByTheirBytes() async throws {
        let root = try folder()
        defer { try? FileManager.default.removeItem(at: root) }
        let rootBytes = Array(root.path.utf8)
        for (index, name) in [[0x62, 0xFF, 0x2E, 0x74], [0xC3, 0x28], [0x6F, 0x6B]].enumerated() {
            let path = rootBytes + [0x2F] + name.map(UInt8.init)
            let descriptor = FileListing.withCPath(path) { open($0, O_CREAT | O_WRONLY, 0o644) }
            #expect(descriptor >= 0)
            let text = Array("line \(index)\n".utf8)
            _ = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
        }
        let entries = try FileListing.list(root.path)
        #expect(entries.map(\.path) == ["b\u{FFFD}.t", "ok", "\u{FFFD}("])
        for (entry, index) in zip(entries, [0, 2, 1]) {
            let summary = try await FileSummarizer().process(entry.ref)
            #expect(summary.preview == "line \(index)")
        }
        // Two names that differ only in invalid bytes never share a disk cache key.
        #expect(Set(entries.map(\.ref.cacheKey)).count == 3)
        // Nor a key in memory (the path's bytes are hashed at once): equal refs are one key, and
        // refs that differ in a byte, the size or the time are not.
        let ref = FileRef(bytes: [0x61, 0xFF, 0x62], size: 3, modified: 7)
        let keys: Set<FileRef> = [
            ref, FileRef(bytes: [0x61, 0xFF, 0x62], size: 3, modified: 7), FileRef(bytes: [0x61, 0xFE, 0x62], size: 3, modified: 7),
            FileRef(bytes: [0x61, 0xFF, 0x62], size: 4, modified: 7), FileRef(bytes: [0x61, 0xFF, 0x62], size: 3, modified: 8),
            FileRef(bytes: [0x61, 0xFF], size: 3, modified: 7), FileRef(bytes: [], size: 3, modified: 7),
        ]
        #expect(keys.count == 6 && keys.contains(ref))
    }

    /// A folder that cannot be read is a row that says why — here one nested past PATH_MAX, which
    /// even root cannot open by its path (chmod 000 would not stop root).
    @Test func aFolderThatCannotBeReadIsARowWithWhy() throws {
        let root = try folder()
        defer { _ = try? Process.run(URL(fileURLWithPath: "/bin/rm"), arguments: ["-rf", root.path]).waitUntilExit() }
        let segment = String(repeating: "d", count: 200)
        var descriptor = open(root.path, O_RDONLY | O_DIRECTORY)
        for _ in 0..<24 {  // 24 × 201 bytes: past Linux's 4,096-byte PATH_MAX
            #expect(mkdirat(descriptor, segment, 0o755) == 0)
            let next = openat(descriptor, segment, O_RDONLY | O_DIRECTORY)
            close(descriptor)
            descriptor = next
        }
        close(descriptor)
        let entries = try FileListing.list(root.path)
        let unreadable = entries.filter { $0.problem != nil }
        #expect(!unreadable.isEmpty)
        #expect(unreadable.allSatisfy { $0.isFolder && $0.problem?.contains("cannot be read") == true })
        #expect(entries.count >= 20)  // the folders up to the limit are rows too
    }
}

@Suite("Summaries cache")
struct SummariesCacheTests {
    #if os(Linux)
    /// Probe of 2026-11-29: a second `browse /proc/sys/kernel/random` showed the first run's `uuid`.
    /// procfs says 0 bytes and keeps one time for a file whose content changes, so the cache key
    /// (path, size, time) never changed. A file that says it is empty is read every time.
    @Test func aFileThatSaysItIsEmptyIsReadEveryTime() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("summaries-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let entries = try FileListing.list("/proc/sys/kernel/random").filter { $0.path == "uuid" }
        #expect(entries.count == 1 && entries.first?.ref.size == 0)
        var previews: [String] = []
        for _ in 0 ..< 2 {  // two runs, one cache
            let table = FileTable(entries: entries, cacheFolder: folder)
            await streamRowsInOrder(of: table, ahead: 1) { _, content in
                if case .loaded(let summary) = content { previews.append(summary.preview) }
            }
            table.flush()
        }
        #expect(previews.count == 2 && previews[0] != previews[1], "\(previews)")  // a new uuid each read
    }
    #endif

    /// Seen 2026-11-29: after the preview of a line cut inside a character was fixed, files
    /// summarized before still showed the old preview, ending in a replacement character: the
    /// cache kept it. A summary an earlier version cached is made again.
    @Test func aSummaryAnEarlierVersionCachedIsMadeAgain() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("summaries-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(("x" + String(repeating: "中", count: 200) + "\n").utf8).write(to: folder.appendingPathComponent("wide.txt"))
        let entries = try FileListing.list(folder.path).filter { !$0.isFolder }
        let ref = try #require(entries.first?.ref)
        // What version 1 cached, under its key.
        let cache = folder.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        let earlier = SQLiteStorage<FileRef>(file: cache.appendingPathComponent("summaries.sqlite"), sizeLimit: 64 << 20) { $0.cacheKey }
        let stale = FileSummary(lines: 1, crc32: 0, isBinary: false, preview: "x中中\u{FFFD}")
        earlier.codable(FileSummary.self).set(stale, for: ref)
        try earlier.flush()
        var loaded: [FileSummary] = []
        let table = FileTable(entries: entries, cacheFolder: cache)
        await streamRowsInOrder(of: table, ahead: 1) { _, content in
            if case .loaded(let summary) = content { loaded.append(summary) }
        }
        table.flush()
        #expect(loaded == [try await FileSummarizer().process(ref)])
        #expect(loaded.first?.preview.contains("\u{FFFD}") == false)
    }

    /// Earlier versions kept a file per summary (DiskStorage); the SQLite cache that replaced it
    /// deletes those files once, and nothing else in the folder.
    @Test func theFilePerEntryCacheOfEarlierVersionsIsDeletedAndNothingElse() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("summaries-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = DiskStorage<String>(directory: folder)
        for index in 0..<50 { try old.write(Data("summary \(index)".utf8), for: "file\(index)") }
        try Data("mine".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        let table = FileTable(entries: [], cacheFolder: folder)
        table.flush()
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(30))
        func names() -> Set<String> { Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []) }
        while names().contains(where: { $0.hasSuffix(".entry") || $0 == ".avenues-lock" }), clock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let left = names()
        #expect(!left.contains { $0.hasSuffix(".entry") } && !left.contains(".avenues-lock"), "\(left.sorted())")
        #expect(left.contains("notes.txt"))
        #expect(old.value(for: "file1") == nil)
    }
}

/// A paste into a full-screen list. Probe of 2026-11-28: 20,000 `j` pasted into `browse` took
/// 20.5 s to apply (debug build, as README's command runs it) with `q` stuck behind them; 20,000
/// characters pasted at `history`'s `/` ran past two minutes. Each key showed the model its rows
/// (a prefetch plan) and asked for the page's height (the whole column header formatted again),
/// and each character searched anew. Keys that wait behind others now only move the selection
/// and edit the text; the model hears of both at most once a frame.
// In the "Terminal output" suite: it takes the terminal's output too, and suites run side by side.
extension TerminalOutputTests {
    final class CountingModel: ListModel, @unchecked Sendable {
        // @unchecked: `calls` is a Mutex; the rest is immutable.
        let calls = Mutex((shows: 0, inputs: 0, lastShown: 0 ..< 0, committed: String?.none))
        /// Called when the input is committed: the test's next keys.
        let onCommit: @Sendable () -> Void

        init(onCommit: @escaping @Sendable () -> Void) { self.onCommit = onCommit }
        let heading = "pasted keys"
        let count = RowCount.exact(100_000)
        let statusFields: [String] = []
        let inputPrompt: String? = "search"

        func columnHeader(width: Int, palette: Terminal.Palette) -> String? { "NAME" }
        func start(_ changed: @escaping @Sendable (Int?) -> Void) {}
        func show(_ rows: Range<Int>, resting: Bool) { calls.withLock { $0.shows += 1; $0.lastShown = rows } }
        func line(at row: Int, width: Int, spinner: String, palette: Terminal.Palette) -> String? { "row \(row)" }
        func isPending(at row: Int) -> Bool { false }
        func input(_ text: String?, committed: Bool, selected: Int) -> ListAction {
            calls.withLock {
                $0.inputs += 1
                if committed { $0.committed = text }
            }
            if committed { onCommit() }
            return .none
        }
        func stop() {}
    }

    @Test func keysWaitingBehindOthersReachTheModelOnceAFrame() async {
        Terminal.sink.withLock { $0 = { _ in } }
        defer { Terminal.sink.withLock { $0 = nil } }
        let backlog = ListScreen.KeyBacklog()
        let (events, sink) = AsyncStream<ListScreen.Event>.makeStream()
        let type = { @Sendable (keys: [Key]) in
            for key in keys {
                backlog.add()
                sink.yield(.terminal(.key(key)))
            }
        }
        // The paste, then (once the model has its search) `q`: the rows after the paste are shown.
        let model = CountingModel { type([.character("q")]) }
        var screen = ListScreen(model: model, palette: Terminal.Palette(on: false), trace: nil, nested: false, backlog: backlog)
        type(Array(repeating: Key.character("j"), count: 5_000) + [.character("/")] + Array(repeating: Key.character("a"), count: 3_000) + [.enter])
        var iterator = events.makeAsyncIterator()
        let exit = await screen.loop(&iterator, sink: sink)
        #expect(exit == .quit)
        let calls = model.calls.withLock { $0 }
        // Before: 5,002 shows and 3,001 inputs, one a key. Now one a frame (16 ms) while keys wait,
        // and one after the last key of each kind.
        #expect(calls.shows < 500, "\(calls.shows) shows for 5,000 keys")
        #expect(calls.inputs < 300, "\(calls.inputs) inputs for 3,000 characters")
        #expect(calls.lastShown.contains(5_000), "the last rows shown: \(calls.lastShown)")
        #expect(calls.committed == String(repeating: "a", count: 3_000))
    }
}

/// What reaches the terminal once the program gave it back.
@Suite("Terminal output", .serialized)
struct TerminalOutputTests {
    /// Seen in CI's tmux test (SIGHUP): a frame drawn by the screen's thread while the signal's
    /// handler gave the terminal back landed on the shell's screen, half a row before `EXIT=129`.
    /// Frames written after the terminal is given back are dropped until it is taken again, and a
    /// frame under way finishes before the main screen comes back.
    @Test func framesAfterTheTerminalIsGivenBackAreDropped() async {
        let written = Mutex([UInt8]())
        Terminal.sink.withLock { $0 = { bytes in written.withLock { $0 += bytes } } }
        defer {
            Terminal.sink.withLock { $0 = nil }
            Terminal.openOutput(entering: "")
        }
        Terminal.openOutput(entering: "<enter>")
        Terminal.write("frame1")
        Terminal.closeOutput(leaving: "<leave>")
        Terminal.write("frame2")
        Terminal.openOutput(entering: "<again>")
        Terminal.write("frame3")
        #expect(String(decoding: written.withLock { $0 }, as: UTF8.self) == "<enter>frame1<leave><again>frame3")

        // A thread drawing while another gives the terminal back: nothing of a frame after it.
        written.withLock { $0 = [] }
        let drawing = Task.detached {
            for _ in 0 ..< 20_000 { Terminal.write("[frame]") }
        }
        await Task.yield()
        Terminal.closeOutput(leaving: "<leave>")
        await drawing.value
        let text = String(decoding: written.withLock { $0 }, as: UTF8.self)
        #expect(text.hasSuffix("<leave>"), "\(text.suffix(40))")
        #expect(!text.replacingOccurrences(of: "[frame]", with: "").replacingOccurrences(of: "<leave>", with: "").contains("frame"))
    }
}

@Suite("Trace recorder")
struct TraceRecorderTests {
    /// Probe of 2026-11-26: `--record-trace` in a folder that does not exist said
    /// `Error Domain=NSCocoaErrorDomain Code=513 "You don't have permission."`; a folder given as
    /// the file said the same. Each now says the system's reason and what to do.
    @Test func aTraceThatCannotBeWrittenSaysWhyAndWhatToDo() throws {
        let missing = "/nonexistent-\(UUID().uuidString)/t.json"
        #expect(throws: TraceRecorder.CannotWrite.self) { try TraceRecorder(path: missing) }
        do {
            _ = try TraceRecorder(path: FileManager.default.temporaryDirectory.path)
            Issue.record("a folder was opened as the trace's file")
        } catch let error as TraceRecorder.CannotWrite {
            #expect(error.description == "cannot write the trace to \(FileManager.default.temporaryDirectory.path) (Is a directory); give --record-trace a file in a folder that exists and can be written")
        }
        // A FIFO nobody reads: opening it for writing waited for a reader, before the first screen.
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString).fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { try? FileManager.default.removeItem(atPath: fifo) }
        do {
            _ = try TraceRecorder(path: fifo)
            Issue.record("a FIFO nobody reads was opened as the trace's file")
        } catch let error as TraceRecorder.CannotWrite {
            #expect(error.reason == "a pipe nobody reads")
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let recorder = try TraceRecorder(path: path)
        recorder.record(0 ..< 10, count: 100)
        #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("{\"rows\": 100, \"screen\": 10}\n"))
    }
}

/// Progress records a test saw.
private final class Recorded: Sendable {
    let values = Mutex<[Int64?]>([])
}

/// A task executor with one thread: jobs run one at a time, in the order they are enqueued.
private final class OneThreadExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "one-thread-executor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
