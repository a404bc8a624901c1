import Avenues
import CSystemIO
import Foundation
import Synchronization
import TerminalUI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif

/// What the slow columns show for a file.
public struct FileSummary: Sendable, Hashable, Codable {
    /// Newline characters in the file, as `wc -l` counts them.
    public var lines: Int
    /// The CRC-32 (IEEE, as zlib and `gzip` compute it) of the whole file.
    public var crc32: UInt32
    /// Whether the file looks binary (a NUL byte, or mostly control bytes, in its first 8 KiB).
    public var isBinary: Bool
    /// The first line (text), or a sparkline of the byte histogram (binary), cleaned of control
    /// characters; for a `.gz` file, of what it holds, after "gz: ".
    public var preview: String

    /// Creates a summary.
    public init(lines: Int, crc32: UInt32, isBinary: Bool, preview: String) {
        self.lines = lines
        self.crc32 = crc32
        self.isBinary = isBinary
        self.preview = preview
    }
}

/// Computes a ``FileSummary`` by reading the file once, in 64 KiB chunks, so memory does not grow with
/// the file; it checks for cancellation between chunks, so a row scrolled away stops reading. A
/// `.gz` file is summarized by what it holds (lines, CRC-32 and first line of its contents, as
/// `gzip -l` and `zcat | head -1` see them), read through `gzip -dc`.
public struct FileSummarizer: Processor {
    /// A pause before each file, to watch the loading behaviour on fast disks; zero by default.
    public let latency: Duration
    /// Where the summaries of large files say how far they have read; `nil` for nowhere.
    public let progress: SummaryProgress?

    static let chunkSize = 64 * 1024
    static let sniffSize = 8 * 1024
    static let previewLimit = 400

    /// Creates a summarizer; `progress`, if given, learns how far each large file has been read.
    public init(latency: Duration = .zero, progress: SummaryProgress? = nil) {
        self.latency = latency
        self.progress = progress
    }

    /// Reads the file and summarizes it.
    public func process(_ file: FileRef) async throws -> FileSummary {
        if latency > .zero { try await Task.sleep(for: latency) }
        try Task.checkCancellation()
        // Non-blocking: a FIFO put in place of a file cannot hang the open (nor the reads: O_NONBLOCK
        // does not change how regular files read).
        let descriptor = file.withPath { open($0, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        guard descriptor >= 0 else {
            throw SummaryError(path: file.path, reason: "cannot be opened (\(String(cString: strerror(errno))))")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        if file.bytes.count > 3, file.bytes.suffix(3) == Array(".gz".utf8), let gzip = Self.gzip {
            return try await Self.summarizeCompressed(handle, gzip: gzip, path: file.path)
        }
        let report = progress.flatMap { progress in
            file.size >= progress.smallestReported ? (every: progress.reportEvery, to: { progress.set(file, $0) }) : nil
        }
        defer { if report != nil { progress?.set(file, nil) } }
        var reader = SummaryReader(handle, path: file.path)
        var reported: Int64 = 0
        var sinceYield = 0
        while true {
            try Task.checkCancellation()
            let count = try reader.next()
            if count == 0 { return reader.summary.result }
            if let report, reader.read - reported >= report.every {
                report.to(reader.read)
                reported = reader.read
            }
            // A summary is work on the shared pool, which has a thread per core: without a turn
            // for others, two large files on two cores froze the screen (no key, no frame) until
            // one was read.
            sinceYield += count
            if sinceYield >= Self.yieldEvery {
                sinceYield = 0
                await Task.yield()
            }
        }
    }

    /// How many bytes a summary reads between the turns it gives other work: about a millisecond.
    static let yieldEvery = 1 << 20

    /// Summarizes what `handle` reads, to its end, on the calling thread (a thread of its own).
    static func summarize(reading handle: FileHandle, path: String) throws -> FileSummary {
        var reader = SummaryReader(handle, path: path)
        while try reader.next() > 0 {}
        return reader.summary.result
    }

    /// Reads a file into a summary a chunk at a time.
    struct SummaryReader: ~Copyable {
        /// Held: the descriptor is closed when the handle goes.
        let handle: FileHandle
        let path: String
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FileSummarizer.chunkSize, alignment: 8)
        var summary = Summarizing()
        /// The bytes read so far.
        var read: Int64 = 0

        init(_ handle: FileHandle, path: String) {
            self.handle = handle
            self.path = path
        }

        deinit { buffer.deallocate() }

        /// Reads and adds the next chunk: its size, 0 at the end.
        mutating func next() throws -> Int {
            // read(2), not FileHandle: its error for a file that opens but cannot be read (/proc's
            // EINVAL, a folder's EISDIR) said "The operation could not be completed", not why.
            let count = avenues_examples_read(handle.fileDescriptor, buffer.baseAddress, buffer.count)
            if count < 0 { throw SummaryError(path: path, reason: "cannot be read (\(String(cString: strerror(errno))))") }
            summary.add(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            read += Int64(count)
            return count
        }
    }

    /// `gzip` on PATH, if any.
    static let gzip: URL? = {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return folders.lazy.map { URL(fileURLWithPath: String($0)).appendingPathComponent("gzip") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// Summarizes the contents of the gzip file `handle` reads, decompressed by `gzip -dc`; a file
    /// gzip cannot read is a failure that says so. Cancelling stops gzip.
    static func summarizeCompressed(_ handle: FileHandle, gzip: URL, path: String) async throws -> FileSummary {
        let process = Process()
        process.executableURL = gzip
        process.arguments = ["-dc"]
        process.standardInput = handle
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw SummaryError(path: path, reason: "cannot be decompressed (gzip did not start)")
        }
        let reader = output.fileHandleForReading
        let result: Result<FileSummary, any Error> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    let summary = Result { try summarize(reading: reader, path: path) }
                    process.waitUntilExit()
                    continuation.resume(returning: summary)
                }
            }
        } onCancel: {
            process.terminate()
        }
        try Task.checkCancellation()
        guard case .success(var summary) = result else { throw result.failure ?? CancellationError() }
        guard process.terminationStatus == 0 else { throw SummaryError(path: path, reason: "is not a gzip file gzip can read") }
        summary.preview = "gz: " + summary.preview
        return summary
    }

    /// The same computation for bytes in memory (tests, and the plain sequential reference).
    public static func summarize(_ data: Data) -> FileSummary {
        var summary = Summarizing()
        var offset = 0
        while offset < data.count {
            let end = min(data.count, offset + chunkSize)
            data[offset..<end].withUnsafeBytes { summary.add($0) }
            offset = end
        }
        return summary.result
    }

    /// The running state of one summary.
    struct Summarizing {
        var crc = CRC32()
        var lines = 0
        /// How many bytes have each high nibble (0x00–0x0F, …, 0xF0–0xFF): kept for a binary file.
        var histogram = [Int](repeating: 0, count: 16)
        var sniffed: [UInt8] = []
        /// Whether the first ``FileSummarizer/sniffSize`` bytes say text, once they are read.
        var sniffedText: Bool?
        var firstLine: [UInt8] = []
        var firstLineDone = false

        /// Adds the next `bytes` of the file. Written for speed (a summary reads the whole file,
        /// which may be many gigabytes): the first line is found with memchr, and the line breaks
        /// and the histogram taken eight bytes at a time.
        mutating func add(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            crc.update(bytes)
            if !firstLineDone {
                let end = memchr(base, 0x0A, bytes.count).map { base.distance(to: UnsafeRawPointer($0)) }
                let room = FileSummarizer.previewLimit - firstLine.count
                firstLine += UnsafeRawBufferPointer(rebasing: bytes[..<min(end ?? bytes.count, max(0, room))])
                if end != nil { firstLineDone = true }
            }
            lines += Self.countBreaks(bytes)
            // The histogram is the preview of a binary file only: once the first bytes say text,
            // it is not kept (a quarter of the work a byte).
            if sniffedText != true { Self.addNibbles(bytes, to: &histogram) }
            if sniffed.count < FileSummarizer.sniffSize {
                sniffed += bytes.prefix(FileSummarizer.sniffSize - sniffed.count)
                if sniffed.count == FileSummarizer.sniffSize { sniffedText = !isBinary }
            }
        }

        /// The newline bytes in `bytes`: sixteen at a time with SSE2 (in CSystemIO).
        static func countBreaks(_ bytes: UnsafeRawBufferPointer) -> Int {
            guard let base = bytes.baseAddress else { return 0 }
            return avenues_examples_count_newlines(base, bytes.count)
        }

        /// ``countBreaks(_:)`` eight bytes at a time in Swift (the tests' second way): in `word ^
        /// 0x0A…0A` a newline is a zero byte, and `((x & 0x7F…7F) + 0x7F…7F) | x` has its top bit
        /// clear in exactly those bytes (no carry crosses a byte), so their count is one population
        /// count.
        static func countBreaksBySWAR(_ bytes: UnsafeRawBufferPointer) -> Int {
            let newlines: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
            let low: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
            var total = 0
            var index = 0
            while index + 8 <= bytes.count {
                let x = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ newlines
                total &+= (~(((x & low) &+ low) | x) & ~low).nonzeroBitCount
                index += 8
            }
            while index < bytes.count {
                if bytes[index] == 0x0A { total += 1 }
                index += 1
            }
            return total
        }

        /// Adds to `histogram` (16 counts) how many bytes of `bytes` have each high nibble. Eight
        /// tables, one per byte of a word, so that equal bytes (a run of zeros) do not each wait
        /// for the increment before.
        static func addNibbles(_ bytes: UnsafeRawBufferPointer, to histogram: inout [Int]) {
            withUnsafeTemporaryAllocation(of: Int.self, capacity: 128) { counts in
                counts.initialize(repeating: 0)
                var index = 0
                while index + 8 <= bytes.count {
                    let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                    counts[Int((word >> 4) & 0xF)] &+= 1
                    counts[16 + Int((word >> 12) & 0xF)] &+= 1
                    counts[32 + Int((word >> 20) & 0xF)] &+= 1
                    counts[48 + Int((word >> 28) & 0xF)] &+= 1
                    counts[64 + Int((word >> 36) & 0xF)] &+= 1
                    counts[80 + Int((word >> 44) & 0xF)] &+= 1
                    counts[96 + Int((word >> 52) & 0xF)] &+= 1
                    counts[112 + Int(word >> 60)] &+= 1
                    index += 8
                }
                while index < bytes.count {
                    counts[Int(bytes[index] >> 4)] &+= 1
                    index += 1
                }
                for nibble in 0 ..< 16 {
                    histogram[nibble] += stride(from: nibble, to: 128, by: 16).reduce(0) { $0 + counts[$1] }
                }
            }
        }

        /// A NUL byte, or more than a tenth of control bytes or of bytes that are not UTF-8 (a
        /// Latin-1 text has a few; random bytes have half).
        var isBinary: Bool {
            if sniffed.contains(0) { return true }
            let control = sniffed.filter { $0 < 0x20 && ![0x09, 0x0A, 0x0C, 0x0D, 0x1B].contains($0) }.count
            return !sniffed.isEmpty && (control * 10 > sniffed.count || Self.bytesNotUTF8(sniffed) * 10 > sniffed.count)
        }

        /// How many bytes of `bytes` are not part of a well-formed UTF-8 sequence (a sequence cut
        /// by the end is not counted: the window may end inside one).
        static func bytesNotUTF8(_ bytes: [UInt8]) -> Int {
            var index = 0, invalid = 0
            while index < bytes.count {
                let length: Int
                switch bytes[index] {
                case 0x00..<0x80: length = 1
                case 0xC2...0xDF: length = 2
                case 0xE0...0xEF: length = 3
                case 0xF0...0xF4: length = 4
                default: length = 0
                }
                if length == 1 {
                    index += 1
                } else if length == 0 {
                    invalid += 1
                    index += 1
                } else if index + length > bytes.count {
                    break
                } else if bytes[(index + 1)..<(index + length)].allSatisfy({ $0 & 0xC0 == 0x80 }) {
                    index += length
                } else {
                    invalid += 1
                    index += 1
                }
            }
            return invalid
        }

        var result: FileSummary {
            let binary = isBinary
            // Cut at the limit, the line may end inside a character: that is not a byte of the file
            // that is not UTF-8, so it must not show as one.
            let kept = firstLine.count < FileSummarizer.previewLimit ? firstLine[...] : firstLine[..<Line.wholeScalarsEnd(firstLine, before: firstLine.count)]
            let preview = binary ? Sparkline.render(histogram) : TextCleaning.printable(Array(kept))
            return FileSummary(lines: lines, crc32: crc.value, isBinary: binary, preview: preview)
        }
    }

    /// A file that could not be summarized.
    public struct SummaryError: Error, CustomStringConvertible {
        /// The file.
        public let path: String
        /// Why.
        public let reason: String
        /// One line for the table.
        public var description: String { reason }
    }
}

/// How far the summaries of large files have read: a row shows it while its summary loads (a
/// checksum of a 100 GB file takes minutes).
public final class SummaryProgress: Sendable {
    /// Files smaller than this (64 MiB by default) are not reported: they take well under a second.
    public let smallestReported: Int64
    /// How often a summary reports: every so many bytes read (8 MiB by default).
    let reportEvery: Int64

    private let read = Mutex<[FileRef: Int64]>([:])
    /// Told of every record (tests).
    private let watcher: (@Sendable (FileRef, Int64?) -> Void)?

    /// Creates an empty record.
    public convenience init() {
        self.init(smallestReported: 64 << 20, reportEvery: 8 << 20)
    }

    /// A record with other sizes (tests), whose records `watcher` is told of.
    init(smallestReported: Int64, reportEvery: Int64, watcher: (@Sendable (FileRef, Int64?) -> Void)? = nil) {
        self.smallestReported = smallestReported
        self.reportEvery = reportEvery
        self.watcher = watcher
    }

    /// The bytes of `file` read so far, while its summary is being computed (`nil` before, after,
    /// and for a small file).
    public func bytesRead(of file: FileRef) -> Int64? {
        read.withLock { $0[file] }
    }

    /// Records `bytes` read of `file`; `nil` when its summary ends.
    func set(_ file: FileRef, _ bytes: Int64?) {
        read.withLock { $0[file] = bytes }
        watcher?(file, bytes)
    }

    /// `read` of `size` bytes as a whole percentage for a row, "0%" to "99%": a summary is
    /// shown, not "100%", when it is done, and a file that grew while it was read stays at 99%.
    public static func percent(_ read: Int64, of size: Int64) -> String {
        guard size > 0, read > 0 else { return "0%" }
        // Divided before it is multiplied: no overflow, whatever the sizes.
        let hundredth = max(1, size / 100)
        return "\(min(99, read / hundredth))%"
    }
}

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it): folded with carry-less multiplication
/// where the processor has it (x86-64 with PCLMULQDQ, in CSystemIO), else eight bytes a step
/// ("slicing by 8"), as is the tail of each update.
public struct CRC32: Sendable {
    /// Whether the folding path runs here.
    static let folds = avenues_examples_crc32_fold_available() != 0

    /// Table `k` (entries `256 k ..< 256 (k + 1)`) is the CRC of a byte followed by `k` zero bytes.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0 ..< 256 {
            var value = UInt32(index)
            for _ in 0 ..< 8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
            tables[index] = value
        }
        for slice in 1 ..< 8 {
            for index in 0 ..< 256 {
                let previous = tables[(slice - 1) * 256 + index]
                tables[slice * 256 + index] = tables[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return tables
    }()

    private var state: UInt32 = 0xFFFF_FFFF

    /// A CRC of nothing yet.
    public init() {}

    /// Adds `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var crc = state
        var start = 0
        if Self.folds, bytes.count >= 64, let base = bytes.baseAddress {
            start = bytes.count & ~15
            crc = avenues_examples_crc32_fold(crc, base, start)
        }
        update(&crc, UnsafeRawBufferPointer(rebasing: bytes[start...]))
        state = crc
    }

    /// Adds `bytes` eight at a time, whatever the processor (the tests compare both ways).
    mutating func updateBySlicing(_ bytes: UnsafeRawBufferPointer) {
        update(&state, bytes)
    }

    private func update(_ crc: inout UInt32, _ bytes: UnsafeRawBufferPointer) {
        Self.tables.withUnsafeBufferPointer { table in
            let whole = bytes.count & ~7
            var index = 0
            while index < whole {
                // Read little-endian, as the reflected CRC consumes bytes.
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let low = crc ^ UInt32(truncatingIfNeeded: word)
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc = table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ table[256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                index += 8
            }
            while index < bytes.count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
        }
    }

    /// The CRC of everything added.
    public var value: UInt32 { state ^ 0xFFFF_FFFF }
}

/// Sixteen bars, one per range of byte values (0x00–0x0F, 0x10–0x1F, …), scaled to the tallest.
enum Sparkline {
    static let bars: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]

    static func render(_ histogram: [Int]) -> String {
        let tallest = histogram.max() ?? 0
        guard tallest > 0 else { return "" }
        return String(histogram.map { count in
            count == 0 ? " " : bars[min(bars.count - 1, count * bars.count / (tallest + 1))]
        })
    }
}

/// Makes the first line of a file safe to print in one terminal cell row.
enum TextCleaning {
    static func printable(_ bytes: [UInt8]) -> String {
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        return String(text.unicodeScalars.map { scalar -> Character in
            if scalar == "\t" { return " " }
            if scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value) { return "·" }
            return Character(scalar)
        }).trimmingCharacters(in: .whitespaces)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
