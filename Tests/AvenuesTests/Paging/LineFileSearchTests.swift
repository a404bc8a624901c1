import Foundation
import Testing
@testable import Avenues
import AvenuesTestSupport

/// ``LineFile``'s search against the plain split: forward and backward, either case, from any line,
/// with matches across chunk boundaries and in lines longer than what a ``Line`` keeps.
@Suite("Line file search", .timeLimit(.minutes(5)))
struct LineFileSearchTests {
    let folder = TemporaryFolder("line-file-search")

    func write(_ bytes: [UInt8], name: String) -> String {
        let path = folder.child(name).path
        let created = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        precondition(created, "could not write \(path)")
        return path
    }

    /// The simple answer: the lines in order, each searched with `String`-free byte comparison.
    static func first(_ needle: [UInt8], in lines: [[UInt8]], from: Int, ignoringCase: Bool) -> Int? {
        guard !needle.isEmpty, !needle.contains(0x0A) else { return nil }
        return lines.indices.first { $0 >= from && contains(lines[$0], needle, ignoringCase) }
    }

    static func last(_ needle: [UInt8], in lines: [[UInt8]], before: Int, ignoringCase: Bool) -> Int? {
        guard !needle.isEmpty, !needle.contains(0x0A) else { return nil }
        return lines.indices.last { $0 < before && contains(lines[$0], needle, ignoringCase) }
    }

    static func contains(_ line: [UInt8], _ needle: [UInt8], _ ignoringCase: Bool) -> Bool {
        func fold(_ byte: UInt8) -> UInt8 { ignoringCase && (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }
        guard line.count >= needle.count else { return false }
        return (0...(line.count - needle.count)).contains { start in
            needle.indices.allSatisfy { fold(line[start + $0]) == fold(needle[$0]) }
        }
    }

    @Test func randomFilesAndNeedlesMatchTheModel() async throws {
        var random = SplitMix64(seed: 7)
        let alphabet = Array("abAB \r\n\u{1B}".utf8) + [0xC3, 0xA9, 0xFF]
        for round in 0..<80 {
            let size = Int.random(in: 0...3_000, using: &random)
            let bytes = (0..<size).map { _ in alphabet.randomElement(using: &random) ?? 0x61 }
            let lines = LineFileTests.model(bytes)
            // Chunks from 1 byte: matches and line breaks fall across chunks' ends.
            let file = try LineFile(
                path: write(bytes, name: "random-\(round)"), checkpointInterval: Int.random(in: 1...9, using: &random),
                bytesKeptPerLine: 64, chunkSize: [1, 2, 3, 7, 64, 1 << 20].randomElement(using: &random) ?? 1
            )
            if Bool.random(using: &random) { try await file.scan() }
            for _ in 0..<25 {
                let needle = (0..<Int.random(in: 0...4, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? 0x61 }
                let ignoringCase = Bool.random(using: &random)
                let line = Int.random(in: -1...(lines.count + 2), using: &random)
                let forward = try await file.firstLine(containing: needle, from: line, ignoringCase: ignoringCase)
                #expect(forward == Self.first(needle, in: lines, from: max(0, line), ignoringCase: ignoringCase), "round \(round): \(needle) from \(line)")
                let backward = try await file.lastLine(containing: needle, before: line, ignoringCase: ignoringCase)
                #expect(backward == Self.last(needle, in: lines, before: line, ignoringCase: ignoringCase), "round \(round): \(needle) before \(line)")
            }
        }
    }

    @Test func aMatchAcrossChunksAndInAVeryLongLineIsFoundWithItsLineNumber() async throws {
        // Line 3 is longer than a chunk and holds the needle across the first chunk's end; line 5
        // holds it again past what a Line keeps.
        var bytes = Array("zero\none\ntwo\n".utf8)
        let needle = Array("Needle-Across".utf8)
        let boundary = LineFile.chunkSize - bytes.count - 5  // the needle starts 5 bytes before the chunk's end
        bytes += [UInt8](repeating: 0x2E, count: boundary) + needle + [UInt8](repeating: 0x2E, count: 1_000) + [0x0A]
        bytes += Array("four\n".utf8)
        bytes += [UInt8](repeating: 0x2D, count: 3 * LineFile.chunkSize) + Array("needle-across".utf8) + Array("\nsix".utf8)
        let file = try LineFile(path: write(bytes, name: "long"), checkpointInterval: 2, bytesKeptPerLine: 16)
        #expect(try await file.firstLine(containing: needle, from: 0) == 3)
        #expect(try await file.firstLine(containing: needle, from: 4) == nil)
        #expect(try await file.firstLine(containing: Array("needle-across".utf8), from: 4) == 5)
        #expect(try await file.firstLine(containing: Array("needle-ACROSS".utf8), from: 4, ignoringCase: true) == 5)
        #expect(try await file.firstLine(containing: Array("needle-ACROSS".utf8), from: 0, ignoringCase: true) == 3)
        #expect(try await file.lastLine(containing: Array("needle-across".utf8), before: 99, ignoringCase: true) == 5)
        #expect(try await file.lastLine(containing: needle, before: 5) == 3)
        #expect(try await file.lastLine(containing: needle, before: 3) == nil)
        #expect(try file.lines(3 ..< 6).map(\.bytes.count) == [16, 4, 16])
    }

    @Test func aSearchReportsProgressAndStopsWhenCancelled() async throws {
        let line = Array("a line without it\n".utf8)
        var bytes: [UInt8] = []
        for _ in 0 ..< (3 * LineFile.chunkSize / line.count) { bytes += line }
        let file = try LineFile(path: write(bytes, name: "big"))
        let reached = Locked<[Int64]>([])
        #expect(try await file.firstLine(containing: Array("missing".utf8), from: 0) { offset in reached.withLock { $0.append(offset) } } == nil)
        #expect(reached.withLock { $0 }.last == Int64(bytes.count))
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await file.firstLine(containing: Array("missing".utf8), from: 0)
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
