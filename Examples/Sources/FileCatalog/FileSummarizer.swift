import Avenues
import Foundation
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

    static let chunkSize = 64 * 1024
    static let sniffSize = 8 * 1024
    static let previewLimit = 400

    /// Creates a summarizer.
    public init(latency: Duration = .zero) {
        self.latency = latency
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
        return try Self.summarize(reading: handle, path: file.path)
    }

    /// Summarizes what `handle` reads, to its end.
    static func summarize(reading handle: FileHandle, path: String) throws -> FileSummary {
        var summary = Summarizing()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            try Task.checkCancellation()
            // read(2), not FileHandle: its error for a file that opens but cannot be read (/proc's
            // EINVAL, a folder's EISDIR) said "The operation could not be completed", not why.
            let count = read(handle.fileDescriptor, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw SummaryError(path: path, reason: "cannot be read (\(String(cString: strerror(errno))))")
            }
            if count == 0 { break }
            summary.add(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
        return summary.result
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
        var histogram = [Int](repeating: 0, count: 16)
        var sniffed: [UInt8] = []
        var firstLine: [UInt8] = []
        var firstLineDone = false

        mutating func add(_ bytes: UnsafeRawBufferPointer) {
            crc.update(bytes)
            for byte in bytes {
                if byte == 0x0A {
                    lines += 1
                    firstLineDone = true
                } else if !firstLineDone, firstLine.count < FileSummarizer.previewLimit {
                    firstLine.append(byte)
                }
                histogram[Int(byte >> 4)] += 1
            }
            if sniffed.count < FileSummarizer.sniffSize {
                sniffed += bytes.prefix(FileSummarizer.sniffSize - sniffed.count)
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

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it).
public struct CRC32: Sendable {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    private var state: UInt32 = 0xFFFF_FFFF

    /// A CRC of nothing yet.
    public init() {}

    /// Adds `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var crc = state
        Self.table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        state = crc
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
