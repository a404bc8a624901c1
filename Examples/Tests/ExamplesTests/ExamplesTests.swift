import Avenues
import FileCatalog
import Foundation
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

    @Test func modifiedArrowsAndUnknownSequencesDoNotDerailDecoding() {
        var decoder = KeyDecoder()
        #expect(decoder.decode(Array("\u{1B}[1;5A\u{1B}[99~q".utf8)) == [.up, .unknown, .character("q")])
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
}

@Suite("File summaries")
struct FileSummaryTests {
    @Test func crc32MatchesTheStandardCheckValue() {
        var crc = CRC32()
        Array("123456789".utf8).withUnsafeBytes { crc.update($0) }
        #expect(crc.value == 0xCBF4_3926)
    }

    @Test func textFilesShowTheirFirstLineAndLineCount() {
        let summary = FileSummarizer.summarize(Data("\tfirst line\r\nsecond\nthird".utf8))
        #expect(summary.lines == 2)  // newline characters, as wc -l counts them
        #expect(!summary.isBinary)
        #expect(summary.preview == "first line")
    }

    @Test func binaryFilesShowAByteHistogramSparkline() {
        let bytes = Data((0..<4_096).map { UInt8(truncatingIfNeeded: $0 % 64) })
        let summary = FileSummarizer.summarize(bytes)
        #expect(summary.isBinary)
        #expect(summary.preview.count == 16)
        #expect(summary.preview.hasPrefix("████"))
        #expect(summary.preview.hasSuffix("    "))
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

    @Test func sizesAreHumanReadable() {
        #expect(TableLayout.formatSize(999) == "999 B")
        #expect(TableLayout.formatSize(1_536) == "1.5 KiB")
        #expect(TableLayout.formatSize(5 << 20) == "5.0 MiB")
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
