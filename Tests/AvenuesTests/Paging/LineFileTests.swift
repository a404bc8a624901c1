import Foundation
import Testing
@testable import Avenues
import AvenuesTestSupport

/// ``LineFile`` over files written by the test: every edge a pager meets, checked against the plain
/// split of the bytes into lines.
@Suite("Line files", .timeLimit(.minutes(5)))
struct LineFileTests {
    let folder = TemporaryFolder("line-files")

    func write(_ bytes: [UInt8], name: String = "file.txt") -> String {
        let path = folder.child(name).path
        let created = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        precondition(created, "could not write \(path)")
        return path
    }

    /// The lines of `bytes` the simple way: split at `\n`, a last line without it counts.
    static func model(_ bytes: [UInt8]) -> [[UInt8]] {
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        if bytes.last == 0x0A || bytes.isEmpty { lines.removeLast() }
        return lines
    }

    func all(_ file: LineFile) throws -> [[UInt8]] {
        try file.lines(0 ..< .max).map(\.bytes)
    }

    /// Probe of 2026-11-26: `page(at: Int.min, size:)` trapped (the lines after the page were
    /// counted from the negative offset), and so did `lastLines(Int.max)` of a file ending in a line
    /// break (one more break looked for). Offsets, sizes, counts and search starts at the ends of
    /// the integers, with the extreme checkpoint intervals and kept bytes.
    @Test(arguments: [(Int.max, Int.max), (1, 1), (Int.max - 1, 7)])
    func argumentsAtTheEndsOfTheIntegersNeverTrap(interval: Int, kept: Int) async throws {
        let text = (0..<500).map { "line \($0)\n" }.joined()
        let file = try LineFile(path: write(Array(text.utf8), name: "ends-\(interval)-\(kept)"), checkpointInterval: interval, bytesKeptPerLine: kept)
        #expect(try file.lastLines(.max).lines.count == 500)
        #expect(try file.lastLines(.min).lines.isEmpty)
        try await file.scan()
        for (offset, size) in [(Int.min, Int.max), (-5, 10), (Int.min, Int.min), (100, -1)] {
            let page = try await file.page(at: offset, size: size)
            #expect(page.items.isEmpty)
            #expect(page.itemsAfter == (offset < 0 ? 500 : 400), "page(at: \(offset), size: \(size))")
        }
        for (offset, size) in [(Int.max, 10), (Int.max - 1, Int.max), (500, .max)] {
            let page = try await file.page(at: offset, size: size)
            #expect(page.items.isEmpty && page.itemsAfter == 0 && page.cursorAfter == nil)
        }
        let tail = try await file.page(at: 495, size: .max)
        #expect(tail.items.map(\.number) == Array(495..<500) && tail.itemsAfter == 0)
        #expect(try await file.firstLine(containing: Array("line 49".utf8), from: .min) == 49)
        #expect(try await file.firstLine(containing: Array("line 49".utf8), from: .max) == nil)
        #expect(try await file.lastLine(containing: Array("line 49".utf8), before: .max) == 499)
        #expect(try await file.lastLine(containing: Array("line 49".utf8), before: .min) == nil)
    }

    @Test func emptyFilesFilesWithoutAFinalNewlineAndCRLFFiles() async throws {
        let empty = try LineFile(path: write([], name: "empty"))
        try await empty.scan()
        #expect(try empty.lineCount == 0 && all(empty).isEmpty)
        let page = try await empty.page(at: 0, size: 10)
        #expect(page.items.isEmpty && page.cursorAfter == nil && page.itemsAfter == 0)

        let unfinished = try LineFile(path: write(Array("a\nb\nlast".utf8), name: "unfinished"))
        try await unfinished.scan()
        #expect(try unfinished.lineCount == 3 && all(unfinished).map { String(decoding: $0, as: UTF8.self) } == ["a", "b", "last"])

        let crlf = try LineFile(path: write(Array("one\r\ntwo\r\n".utf8), name: "crlf"))
        let lines = try crlf.lines(0..<5)
        #expect(lines.map(\.text) == ["one", "two"] && lines[0].bytes == Array("one\r".utf8))

        let blank = try LineFile(path: write(Array("\n\n\n".utf8), name: "blank"))
        try await blank.scan()
        #expect(try blank.lineCount == 3 && all(blank) == [[], [], []])
    }

    @Test func anyBytesStayAsTheyAre() throws {
        let bytes: [UInt8] = [0xFF, 0xFE, 0x1B, 0x5D, 0x32, 0x3B, 0x0A, 0xC3, 0xA9, 0x00, 0x0A]
        let file = try LineFile(path: write(bytes))
        let lines = try file.lines(0..<2)
        #expect(lines.map(\.bytes) == [[0xFF, 0xFE, 0x1B, 0x5D, 0x32, 0x3B], [0xC3, 0xA9, 0x00]])
        #expect(lines[0].text.contains("\u{FFFD}"))
    }

    /// Seen 2026-11-29: a line of "中" cut to what is kept ended inside a character, and its text
    /// ended with a replacement character the file does not have.
    @Test func aCutLinesTextEndsWithItsLastWholeCharacter() throws {
        let kept = LineFile.keptBytes
        for tail in ["中", "é", "😀", "\u{301}"] {
            // The kept bytes end 1, 2 or 3 bytes into `tail`'s encoding.
            for into in 1 ..< tail.utf8.count {
                let padding = [UInt8](repeating: UInt8(ascii: "a"), count: kept - into)
                let bytes = padding + Array(String(repeating: tail, count: 10).utf8) + Array("\n".utf8)
                let line = try #require(try LineFile(path: write(bytes)).lines(0 ..< 1).first)
                #expect(line.isCut && line.bytes.count == kept)
                #expect(line.text == String(repeating: "a", count: kept - into), "\(tail.debugDescription), \(into) bytes in")
            }
        }
        // A line kept whole keeps its invalid bytes as they are, and a cut one those before its end.
        #expect(Line(number: 0, offset: 0, length: 2, bytes: [0x61, 0xE4]).text == "a\u{FFFD}")
        #expect(Line(number: 0, offset: 0, length: 9, bytes: [0xFF, 0x61, 0xE4]).text == "\u{FFFD}a")
        #expect(Line(number: 0, offset: 0, length: 9, bytes: [0x61, 0xBF, 0xBF, 0xBF, 0xBF]).text == "a\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}")
    }

    /// `Line.wholeScalarsEnd` against a simple model: for text cut anywhere, the end is where the
    /// last character wholly before the cut ends; for any bytes and any place (Int.min, Int.max
    /// included), an end at most 3 bytes before the place, inside the bytes.
    @Test func wholeScalarsEndIsWhereTheLastWholeCharacterBeforeTheCutEnds() {
        var random = SplitMix64(seed: 29)
        let pieces = ["a", "é", "中", "😀", "\u{301}", "\n", "\u{FFFD}"]
        for _ in 0 ..< 2_000 {
            let text = (0 ..< Int(random.next() % 12)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
            let bytes = Array(text.utf8)
            let cut = Int(random.next() % UInt64(bytes.count + 1))
            // The model: the ends of the scalars, the last one not after the cut.
            var ends = [0]
            for scalar in text.unicodeScalars { ends.append((ends.last ?? 0) + String(scalar).utf8.count) }
            let expected = ends.last(where: { $0 <= cut }) ?? 0
            #expect(Line.wholeScalarsEnd(bytes, before: cut) == expected, "\(text.debugDescription) cut at \(cut)")
        }
        for _ in 0 ..< 2_000 {
            let bytes = (0 ..< Int(random.next() % 10)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            for place in [Int.min, -1, 0, Int(random.next() % 12), bytes.count, Int.max] {
                let end = Line.wholeScalarsEnd(bytes, before: place)
                let clamped = min(max(0, place), bytes.count)
                #expect(end <= clamped && end >= max(0, clamped - 3), "\(bytes) before \(place): \(end)")
            }
        }
    }

    @Test func aHundredMegabyteLineIsKeptToItsStartAndTheLinesAfterItAreFound() throws {
        var bytes = Array("before\n".utf8)
        bytes += [UInt8](repeating: UInt8(ascii: "x"), count: 20 << 20)  // 20 MiB here; the benchmark uses 100 MB
        bytes += Array("\nafter\n".utf8)
        let file = try LineFile(path: write(bytes))
        let lines = try file.lines(0..<3)
        #expect(lines.count == 3 && lines[1].length == 20 << 20 && lines[1].bytes.count == LineFile.keptBytes && lines[1].isCut)
        #expect(lines[2].text == "after" && lines[2].offset == Int64(7 + (20 << 20) + 1))
    }

    @Test func aJumpReadsFromTheNearestCheckpoint() async throws {
        let lines = (0..<20_000).map { "line \($0) " + String(repeating: "-", count: 90) }
        let file = try LineFile(path: write(Array((lines.joined(separator: "\n") + "\n").utf8)), checkpointInterval: 100)
        try await file.scan()
        #expect(file.lineCount == 20_000)
        for target in [0, 99, 100, 12_345, 19_999] {
            let start = try #require(file.state(of: target))
            #expect(target - start.line < 100 && start.line % 100 == 0)
            #expect(try file.lines(target ..< target + 1).first?.text == lines[target])
        }
        let page = try await file.page(at: 19_990, size: 50)
        #expect(page.items.count == 10 && page.cursorAfter == nil && page.itemsAfter == 0)
    }

    @Test func theLastLinesAreReadBackwardsBeforeTheScanAndNumberedOnceItEnds() async throws {
        let text = (0..<5_000).map { "row \($0)" }.joined(separator: "\n")
        let file = try LineFile(path: write(Array(text.utf8)))
        let early = try file.lastLines(3)
        #expect(early.lines.map(\.text) == ["row 4997", "row 4998", "row 4999"] && early.firstNumber == nil)
        try await file.scan()
        let late = try file.lastLines(3)
        #expect(late.firstNumber == 4_997 && late.lines.map(\.number) == [4_997, 4_998, 4_999])
        #expect(try file.lastLines(10_000).lines.count == 5_000)
    }

    /// Probe of 2026-11-27: G on `cat 170MB | pages` took 24 s to quit. `lastLines` read from the
    /// end it found to the file's end now, so every line appended meanwhile (64 MiB a frame) was
    /// read and returned; it reads to the end it knows, and `count` lines at most.
    @Test func theLastLinesOfAFileThatGrowsMeanwhileEndAtTheEndItKnows() async throws {
        let path = write(Array((0 ..< 10).map { "row \($0)\n" }.joined().utf8))
        let file = try LineFile(path: path)
        try await file.scan()
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((10 ..< 100_000).map { "row \($0)\n" }.joined().utf8))
        try handle.close()
        let last = try file.lastLines(3)  // the growth is not looked at yet
        #expect(last.lines.map(\.text) == ["row 7", "row 8", "row 9"] && last.firstNumber == 7)
        #expect(file.checkForChanges() == .grew)
        try await file.scan()
        #expect(try file.lastLines(2).lines.map(\.text) == ["row 99998", "row 99999"])
    }

    @Test func aFileThatGrowsIsFollowedAndOneReplacedOrTruncatedIsReadAnew() async throws {
        let path = write(Array("a\nb\n".utf8))
        let file = try LineFile(path: path)
        try await file.scan()
        #expect(file.lineCount == 2 && file.checkForChanges() == .unchanged)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data("c\nd\n".utf8))
        try handle.close()
        #expect(file.checkForChanges() == .grew)
        #expect(file.lineCount == nil)
        try await file.scan()
        #expect(try file.lineCount == 4 && file.lines(2..<4).map(\.text) == ["c", "d"])

        // Replaced (a new file renamed over it, as log rotation does).
        let replacement = write(Array("new\n".utf8), name: "replacement")
        _ = rename(replacement, path)
        #expect(file.checkForChanges() == .replaced)
        try await file.scan()
        #expect(try file.lineCount == 1 && file.lines(0..<5).map(\.text) == ["new"])

        // Truncated in place.
        let writer = try #require(FileHandle(forWritingAtPath: path))
        try writer.truncate(atOffset: 0)
        try writer.close()
        #expect(file.checkForChanges() == .replaced)
        try await file.scan()
        #expect(file.lineCount == 0)
    }

    /// Probe of 2026-11-27: a file truncated in place after it was opened and before the scan got
    /// there (a log `copytruncate`d by logrotate) ended its scan short of the size it had when
    /// opened, so its count stayed "at least" for ever; a check saw no change, and a growth back
    /// below the old size was never seen.
    @Test func aFileTruncatedInPlaceBeforeTheScanGotThereIsCountedWhereItEnds() async throws {
        let text = (0..<1_000).map { "line \($0)\n" }.joined()
        let path = write(Array(text.utf8))
        let file = try LineFile(path: path, checkpointInterval: 100, bytesKeptPerLine: 100, chunkSize: 256)
        let half = (0..<500).map { "line \($0)\n" }.joined().utf8.count
        let writer = try #require(FileHandle(forWritingAtPath: path))
        try writer.truncate(atOffset: UInt64(half))
        #expect(try file.lastLines(2).lines.map(\.text) == ["line 498", "line 499"])
        try await file.scan()
        #expect(file.lineCount == 500)
        #expect(file.progress.isComplete && file.progress.size == Int64(half) && file.progress.fraction == 1)
        #expect(file.checkForChanges() == .unchanged)
        #expect(file.checkForChanges() == .unchanged)
        writer.seekToEndOfFile()
        writer.write(Data("more\n".utf8))
        try writer.close()
        #expect(file.checkForChanges() == .grew)
        try await file.scan()
        #expect(file.lineCount == 501)
        #expect(try file.lines(499 ..< 600).map(\.text) == ["line 499", "more"])
    }

    #if os(Linux)
    /// Probe of 2026-11-28: procfs says 0 bytes for /proc/kallsyms's 5 MB. Every look at the file
    /// (every 200 ms in `pages`) saw it shorter than what was read and read it anew: `pages
    /// /proc/kallsyms` took a quarter of a core for ever, saying "replaced or truncated".
    @Test func aFileWhoseSizeSaysLessThanItHoldsIsNotTruncatedAtEveryLook() async throws {
        let path = "/proc/cpuinfo"
        guard let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int, size == 0 else { return }
        let file = try LineFile(path: path)
        try await file.scan()
        let lines = try #require(file.lineCount)
        #expect(lines > 0 && file.progress.scannedBytes > 0)
        for _ in 0..<3 { #expect(file.checkForChanges() == .unchanged) }
        #expect(file.lineCount == lines)
    }

    /// The same probe on a file whose size is not its length: sysfs says 4,096 bytes for `0-1\n`.
    /// Its scan never ended in a count; with it counted, each check must not call it grown.
    @Test func aFileWhoseSizeIsNotItsLengthIsCountedAndNotGrown() async throws {
        let path = "/sys/devices/system/cpu/online"
        guard let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int, size == 4_096 else { return }
        let file = try LineFile(path: path)
        try await file.scan()
        #expect(file.lineCount == 1)
        #expect(file.progress.isComplete && file.progress.fraction == 1)
        #expect(file.checkForChanges() == .unchanged)
        #expect(file.checkForChanges() == .unchanged)
        #expect(try file.lines(0 ..< 10).count == 1)
    }
    #endif

    @Test func aDeletedFileStaysReadable() async throws {
        let path = write(Array("kept\nlines\n".utf8))
        let file = try LineFile(path: path)
        try FileManager.default.removeItem(atPath: path)
        #expect(file.checkForChanges() == .deleted)
        #expect(try file.lines(0..<2).map(\.text) == ["kept", "lines"])
        #expect(throws: LineFileError.self) { try LineFile(path: path) }
    }

    /// What a path that is not a regular file is, so a caller can say what to do instead (pages
    /// reads a named pipe as a stream): it said only "is not a regular file".
    @Test func aPathThatIsNoRegularFileSaysWhatItIs() throws {
        let folder = self.folder.child("inner")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let fifo = self.folder.child("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for (path, kind) in [(folder.path, "a folder"), (fifo, "a named pipe"), ("/dev/null", "a character device")] {
            do {
                _ = try LineFile(path: path)  // the pipe opens at once (non-blocking) and is refused
                Issue.record("\(path) was opened as lines")
            } catch {
                #expect(error.description == "\(path) is \(kind), not a regular file")
            }
        }
    }

    @Test func pagedRowsOverALineFileJumpAnywhere() async throws {
        let text = (0..<100_000).map { "entry \($0)" }.joined(separator: "\n") + "\n"
        let file = try LineFile(path: write(Array(text.utf8)), checkpointInterval: 500)
        let scanning = Task { try await file.scan() }
        let rows = PagedRows(source: file, configuration: PagingConfiguration(pageSize: 100))
        rows.show(77_700 ..< 77_740)
        await eventually("the far rows loaded") { rows.item(at: 77_720)?.text == "entry 77720" }
        try await scanning.value
        rows.show(99_990 ..< 100_030)
        await eventually("the count is exact") { rows.count == .exact(100_000) }
        // The count can be exact (from the scan) before the last page has loaded: wait for the row.
        await eventually("the last row loaded") { rows.item(at: 99_999) != nil }
        #expect(rows.item(at: 99_999)?.text == "entry 99999")
    }

    /// ``LineFile/lastLines(_:searchingBackAtMost:)`` against the plain split: the last lines that
    /// start within the bound of the end, however long the lines and wherever the bound falls.
    @Test func theLastLinesWithinABoundAreThoseThatStartWithinIt() async throws {
        var random = SplitMix64(seed: 2026_11_28)
        for round in 0..<120 {
            // Files of up to about 300 KB: a bound of 64 KiB falls inside a line, between lines, or
            // past the start. Each round gives the pool back, as a test sharing it must.
            await Task.yield()
            var bytes: [UInt8] = []
            for _ in 0 ..< Int.random(in: 0...24, using: &random) {
                bytes += [UInt8](repeating: 0x61, count: [0, 1, 3, 70, 5_000, 70_000].randomElement(using: &random) ?? 1)
                bytes.append(0x0A)
            }
            if Bool.random(using: &random) { bytes += [UInt8](repeating: 0x62, count: Int.random(in: 1...90_000, using: &random)) }
            let file = try LineFile(path: write(bytes, name: "bound-\(round)"), checkpointInterval: 3, bytesKeptPerLine: 8)
            let count = Int.random(in: 1...12, using: &random)
            let limits: [Int64] = [.min, -1, 0, 1, 64, 65_536, 65_537, 200_000, .max]
            let limit: Int64 = limits.randomElement(using: &random) ?? 1
            let lines = Self.model(bytes)
            var starts: [Int64] = []
            var offset: Int64 = 0
            for line in lines {
                starts.append(offset)
                offset += Int64(line.count) + 1
            }
            // The bytes searched start at `lowest`: a line starting there has its break before them.
            let size = Int64(bytes.count)
            let lowest: Int64 = size - min(size, max(0, limit))  // a negative bound searches nothing
            let last: [Int] = Array(lines.indices.suffix(count))
            let expected: [Int] = last.filter { (index: Int) -> Bool in lowest == 0 || starts[index] > lowest }
            let got: [Line] = try file.lastLines(count, searchingBackAtMost: limit).lines
            #expect(got.map { $0.offset } == expected.map { starts[$0] }, "round \(round), limit \(limit), count \(count)")
            #expect(got.map { $0.bytes } == expected.map { Array(lines[$0].prefix(8)) }, "round \(round)")
            let unbounded: [Line] = try file.lastLines(count).lines
            #expect(try file.lastLines(count, searchingBackAtMost: .max).lines == unbounded)
        }
    }

    /// Files truncated in place at a random byte, before the scan or midway through it, then
    /// perhaps grown again: once scanned to the end, the count, the last lines and every line are
    /// the plain split of what the file holds, and a check sees the growth.
    @Test func randomFilesTruncatedInPlaceMatchThePlainSplitOfWhatIsLeft() async throws {
        var random = SplitMix64(seed: 2026_11_27)
        for round in 0..<80 {
            let lines = Int.random(in: 0...200, using: &random)
            let bytes = Array((0..<lines).map { "line \($0) " + String(repeating: "x", count: Int.random(in: 0...30, using: &random)) + "\n" }.joined().utf8)
            let path = write(bytes, name: "cut-\(round)")
            let file = try LineFile(path: path, checkpointInterval: Int.random(in: 1...9, using: &random), bytesKeptPerLine: 100, chunkSize: [3, 64, 1 << 20].randomElement(using: &random) ?? 64)
            var buffer = ScanBuffer(size: file.chunkSize)
            for _ in 0 ..< Int.random(in: 0...3, using: &random) { try file.scanChunk(&buffer) }  // midway, perhaps
            let kept = Int.random(in: 0...bytes.count, using: &random)
            let scanned = file.progress.scannedBytes
            let writer = try #require(FileHandle(forWritingAtPath: path))
            try writer.truncate(atOffset: UInt64(kept))
            var held = Array(bytes[..<kept])
            // Cut below what was scanned: opened anew. Above it: nothing to do but scan on.
            #expect(file.checkForChanges() == (Int64(kept) < scanned ? .replaced : .unchanged), "round \(round)")
            try await file.scan()
            #expect(try all(file) == Self.model(held), "round \(round), kept \(kept) of \(bytes.count)")
            #expect(file.lineCount == Self.model(held).count && file.progress.isComplete, "round \(round)")
            #expect(try file.lastLines(3).lines.map(\.bytes) == Array(Self.model(held).suffix(3)), "round \(round)")
            #expect(file.checkForChanges() == .unchanged, "round \(round)")
            if Bool.random(using: &random) {
                let more = Array("more \(round)\n".utf8)
                writer.seekToEndOfFile()
                writer.write(Data(more))
                held += more
                #expect(file.checkForChanges() == .grew, "round \(round)")
                try await file.scan()
                #expect(try all(file) == Self.model(held), "round \(round), grown")
            }
            try writer.close()
        }
    }

    @Test func randomFilesAndRangesMatchThePlainSplit() async throws {
        var random = SplitMix64(seed: 42)
        for round in 0..<60 {
            var bytes: [UInt8] = []
            for _ in 0 ..< Int.random(in: 0...300, using: &random) {
                let length = [0, 1, 2, 5, 80, 4_000].randomElement(using: &random) ?? 1
                bytes += (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }.map { $0 == 0x0A ? 0x41 : $0 }
                bytes.append(Bool.random(using: &random) ? 0x0A : 0x0D)
                if bytes.last == 0x0D { bytes.append(0x0A) }
            }
            if Bool.random(using: &random) { bytes += Array("tail".utf8) }
            let expected = Self.model(bytes)
            let file = try LineFile(
                path: write(bytes, name: "random-\(round)"), checkpointInterval: Int.random(in: 1...17, using: &random),
                // Chunks of a few bytes on small files (every break and checkpoint falls across a
                // chunk's end); on large ones they cost minutes and add nothing.
                bytesKeptPerLine: LineFile.keptBytes,
                chunkSize: (bytes.count < 16_384 ? [2, 5, 64, 1 << 20] : [4_093, 1 << 20]).randomElement(using: &random) ?? 1
            )
            if Bool.random(using: &random) { try await file.scan() }
            for _ in 0..<20 {
                let start = Int.random(in: 0...(expected.count + 3), using: &random)
                let end = start + Int.random(in: 0...40, using: &random)
                let got = try file.lines(start ..< end).map(\.bytes)
                let want = expected.indices.contains(start) ? Array(expected[start ..< min(end, expected.count)]) : []
                #expect(got == want, "round \(round), lines \(start)..<\(end)")
            }
            try await file.scan()
            #expect(file.lineCount == expected.count, "round \(round)")
        }
    }
}

extension LineFile {
    /// Where a read of `line` starts (for the tests).
    func state(of line: Int) -> (line: Int, offset: Int64)? {
        _ = try? lines(line ..< line + 1)  // makes sure the scan got there
        return checkpoint(before: line)
    }
}
