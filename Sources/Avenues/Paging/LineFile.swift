import Foundation

/// A line of a ``LineFile``: where it is, how long it is, and its bytes (up to
/// ``LineFile/bytesKeptPerLine`` of them: a 100 MB line is not held whole).
public struct Line: Sendable, Hashable {
    /// The line's number, from 0.
    public let number: Int
    /// The byte offset of its start in the file.
    public let offset: Int64
    /// Its length in bytes, without the `\n` that ends it.
    public let length: Int64
    /// Its first bytes, exactly as in the file (the whole line when it is short enough).
    public let bytes: [UInt8]

    /// A line.
    public init(number: Int, offset: Int64, length: Int64, bytes: [UInt8]) {
        (self.number, self.offset, self.length, self.bytes) = (number, offset, length, bytes)
    }

    /// Whether ``bytes`` holds only the start of the line.
    public var isCut: Bool { Int64(bytes.count) < length }

    /// The line as text: bytes that are not UTF-8 as replacement characters, a final `\r` (of a
    /// CRLF file) dropped. Not cleaned for a terminal. A cut line ends with its last whole
    /// character: the cut, not the file, split the one after.
    public var text: String {
        var end = bytes.count
        if !isCut, end > 0, bytes[end - 1] == 0x0D { end -= 1 }
        if isCut { end = Self.wholeScalarsEnd(bytes, before: end) }
        return String(decoding: bytes[0..<end], as: UTF8.self)
    }

    /// `end`, or the start of the UTF-8 sequence that `end` cuts short: where the bytes before
    /// `end` stop being whole characters. Bytes that are not UTF-8 are left as they are.
    ///
    /// For code that draws part of ``bytes`` (a screen's width of a long line): decoding up to a
    /// cut inside a character gives a replacement character that is not in the file. An `end`
    /// below 0 or past the bytes is taken as 0 or as their count.
    public static func wholeScalarsEnd(_ bytes: [UInt8], before end: Int) -> Int {
        let end = min(max(0, end), bytes.count)  // a place outside the bytes is their nearer end
        var start = end - 1
        // At most three continuation bytes follow a lead byte.
        while start >= 0, start > end - 4, bytes[start] & 0xC0 == 0x80 { start -= 1 }
        guard start >= 0 else { return end }
        let lead = bytes[start]
        let length = lead >= 0xF8 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
        return start + length > end ? start : end
    }
}

/// How far a ``LineFile``'s scan got.
public struct LineFileProgress: Sendable, Hashable, CustomStringConvertible {
    /// Lines found so far (all of them once `isComplete`).
    public var lines: Int
    /// Bytes scanned.
    public var scannedBytes: Int64
    /// The file's size as last seen.
    public var size: Int64
    /// Whether the scan reached the end (the count is exact).
    public var isComplete: Bool

    /// The share of the file scanned, 0…1.
    public var fraction: Double { size == 0 ? 1 : min(1, Double(scannedBytes) / Double(size)) }

    /// `1234 lines` or `≥ 1234 lines (12 %)`.
    public var description: String {
        isComplete ? "\(lines) lines" : "≥ \(lines) lines (\(Int(fraction * 100)) %)"
    }
}

/// What ``LineFile/checkForChanges()`` found.
public enum LineFileChange: Sendable, Hashable {
    /// Nothing since the last look.
    case unchanged
    /// The file grew: lines may have been added at its end.
    case grew
    /// The file was truncated or replaced: it was opened anew and its lines are numbered afresh.
    case replaced
    /// The file was deleted; the lines already there can still be read.
    case deleted
}

/// Why a ``LineFile`` cannot be read.
public struct LineFileError: Error, Sendable, CustomStringConvertible {
    /// The file.
    public let path: String
    /// What went wrong.
    public let reason: String

    /// What happened and what to do.
    public var description: String { "\(path) \(reason)" }
}

/// The lines of a file of any size as rows by number, for a ``PagedRows``: a log, `git log` output
/// saved to a file, a CSV — any line-oriented source.
///
/// Lines are located through a sparse index of byte offsets: a **checkpoint** every
/// ``checkpointInterval`` lines, recorded by a ``scan()`` that runs in the background at memchr
/// speed (call it from a low-priority task). A page at line N is read from the nearest checkpoint
/// at or before N — at most `checkpointInterval − 1` lines are skipped — so a jump anywhere the scan
/// has passed costs one seek and a few kilobytes; a page past the scan extends it there first. Memory
/// is one offset per checkpoint, whatever the file's size; a line is kept to its first
/// ``bytesKeptPerLine`` bytes. ``firstLine(containing:from:ignoringCase:progress:)`` and
/// ``lastLine(containing:before:ignoringCase:)`` search the bytes at memmem speed, counting lines as
/// they go, so a hit anywhere comes with its line number.
///
/// Before the scan reaches the end the count is "at least"; ``lastLines(_:)`` reads the last lines
/// backwards from the end at once (G before the count is known). A file that grows is followed
/// (``checkForChanges()``, then refresh the rows after the last one); one truncated or replaced is
/// opened anew. Reads use `pread`, so pages load concurrently. Thread-safe.
public final class LineFile: OffsetPageSource {
    /// A line's number: the cursor is the next line's.
    public typealias Cursor = Int
    /// A row is a line.
    public typealias Item = Line

    /// The most bytes of one line kept in a ``Line`` by default.
    public static let keptBytes = 64 * 1024
    /// The bytes read at a time by default, and between two yields of a scan or a search.
    static let chunkSize = 1 << 20
    /// The bytes a scan or a search reads at a time (tests make it small to cross chunks often).
    let chunkSize: Int

    /// The file's path.
    public let path: String
    /// Lines between checkpoints; 1,000 by default.
    public let checkpointInterval: Int
    /// The most bytes of one line kept in a ``Line`` (``keptBytes`` by default): what bounds a page's
    /// memory when lines are long.
    public let bytesKeptPerLine: Int

    let state: Locked<State>

    /// An open file that closes when the last reader lets it go (a reopen never closes it under a read).
    final class Descriptor: Sendable {
        let value: Int32
        init(_ value: Int32) { self.value = value }
        deinit { FileSystem.close(value) }
    }

    struct State {
        var descriptor: Descriptor
        var identity: FileSystem.Identity
        var index: LineIndex
        /// The file's size as known: what the scan read, or more if the file system says so.
        var size: Int64
        /// The size the file system said last. It can say more than the file holds (sysfs says 4,096
        /// for a line of 20 bytes) or hold it from before a truncation: growth is a change of it.
        var statedSize: Int64
        /// A scan found the end past the size the file system said there (procfs says 0).
        var sizeUnderstatesLength = false
        var deleted = false
    }

    /// Opens `path` (a regular file).
    ///
    /// - Parameters:
    ///   - path: the file's path.
    ///   - checkpointInterval: lines between checkpoints: the most lines a jump skips; 1,000 by
    ///     default (a checkpoint costs 8 bytes).
    ///   - bytesKeptPerLine: the most bytes of one line kept in a ``Line`` (at least 1; ``keptBytes``
    ///     by default). A page of `n` rows holds at most `n ×` this many bytes.
    /// - Throws: ``LineFileError`` if it cannot be opened or is not a regular file.
    public convenience init(path: String, checkpointInterval: Int = 1_000, bytesKeptPerLine: Int = LineFile.keptBytes) throws(LineFileError) {
        try self.init(path: path, checkpointInterval: checkpointInterval, bytesKeptPerLine: bytesKeptPerLine, chunkSize: Self.chunkSize)
    }

    init(path: String, checkpointInterval: Int, bytesKeptPerLine: Int, chunkSize: Int) throws(LineFileError) {
        precondition(checkpointInterval >= 1, "LineFile.checkpointInterval must be at least 1")
        precondition(bytesKeptPerLine >= 1, "LineFile.bytesKeptPerLine must be at least 1")
        self.path = path
        self.checkpointInterval = checkpointInterval
        self.bytesKeptPerLine = bytesKeptPerLine
        self.chunkSize = max(1, chunkSize)
        let (descriptor, info) = try Self.open(path)
        let size = Int64(info.size)
        state = Locked(State(descriptor: descriptor, identity: info.identity, index: LineIndex(interval: checkpointInterval), size: size, statedSize: size))
    }

    private static func open(_ path: String) throws(LineFileError) -> (Descriptor, FileSystem.FileInfo) {
        let descriptor: Int32
        do {
            descriptor = try FileSystem.openForReading(path, followingLinks: true)
        } catch {
            throw LineFileError(path: path, reason: "cannot be opened (\(FileSystem.message(for: error.code)))")
        }
        let box = Descriptor(descriptor)
        let info: FileSystem.FileInfo
        do {
            info = try FileSystem.status(of: descriptor, path: path)
        } catch {
            throw LineFileError(path: path, reason: "cannot be read (\(FileSystem.message(for: error.code)))")
        }
        // What it is, so the caller can say what to do instead (a pipe can be read as a stream).
        guard info.isRegularFile else { throw LineFileError(path: path, reason: "is \(info.kind), not a regular file") }
        return (box, info)
    }

    // MARK: Pages

    /// Lines `offset ..< offset + size` (fewer at the end of the file), read from the nearest
    /// checkpoint; none for a negative `offset`.
    public func page(at offset: Int, size: Int) async throws -> Page<Int, Line> {
        let items = try lines(offset ..< Saturating.add(offset, max(0, size)))
        let count = state.withLock { $0.index.lineCount }
        // No line is before 0: a page asked from a negative offset is empty and ends at 0.
        let end = Saturating.add(max(0, offset), items.count)
        if let count {
            return Page(items: items, cursorAfter: end < count ? end : nil, itemsAfter: max(0, count - end))
        }
        return Page(items: items, cursorAfter: items.count == size ? end : nil)
    }

    /// The lines in `range` (fewer at the end of the file), read from the nearest checkpoint; the
    /// scan is extended first if it has not reached them.
    public func lines(_ range: Range<Int>) throws -> [Line] {
        guard range.lowerBound >= 0, !range.isEmpty else { return [] }
        try extendScan(throughLine: range.upperBound)
        guard let (descriptor, start) = state.withLock({ state in state.index.start(of: range.lowerBound).map { (state.descriptor, $0) } }) else {
            return []  // past the end
        }
        var reader = LineReader(descriptor: descriptor.value, offset: start.offset, path: path, keep: bytesKeptPerLine)
        var number = start.line
        var lines: [Line] = []
        lines.reserveCapacity(min(range.count, 4_096))
        while number < range.upperBound, let line = try reader.next(number: number, keep: number >= range.lowerBound) {
            if number >= range.lowerBound { lines.append(line) }
            number += 1
        }
        return lines
    }

    /// The last `count` lines, read backwards from the end at once, without waiting for the scan;
    /// and the number of the first of them when the count is known (`nil` before).
    ///
    /// It reads back as far as the lines go: the whole file, if its last line is the whole file.
    /// Where that would keep someone waiting (a screen's thread), give a bound with
    /// ``lastLines(_:searchingBackAtMost:)``.
    public func lastLines(_ count: Int) throws -> (lines: [Line], firstNumber: Int?) {
        try lastLines(count, searchingBackAtMost: .max)
    }

    /// ``lastLines(_:)``, reading back at most `limit` bytes from the end: when the last `count`
    /// lines reach farther back, only those that start within `limit` bytes of the end are given
    /// (none when the last line alone is longer). `pages` draws G's screen with it on the thread
    /// that reads the keys: a file that is one 100 GB line was read back whole at every frame, and
    /// q waited for it.
    public func lastLines(_ count: Int, searchingBackAtMost limit: Int64) throws -> (lines: [Line], firstNumber: Int?) {
        guard count > 0 else { return ([], nil) }
        let (descriptor, known, total) = state.withLock { ($0.descriptor, $0.size, $0.index.lineCount) }
        let size = try end(atMost: known, descriptor)
        // Back from the end until `count + 1` line breaks (the one before the first line) are found,
        // or `limit` bytes were searched: then the lines after the farthest break found.
        var start = size
        var breaks = 0
        var farthestLineStart = size
        let trailingBreak = try byte(at: size - 1, descriptor) == 0x0A
        let wanted = Saturating.add(count, trailingBreak ? 1 : 0)
        let lowest = size - min(size, max(0, limit))
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        search: while start > 0 {
            guard start > lowest else {
                start = farthestLineStart
                break
            }
            let length = Int(min(Int64(buffer.count), start - lowest))
            let from = start - Int64(length)
            let read = try buffer.withUnsafeMutableBytes { try readFully(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<length]), at: from) }
            var index = read - 1
            while index >= 0 {
                if buffer[index] == 0x0A {
                    breaks += 1
                    farthestLineStart = from + Int64(index) + 1
                    if breaks == wanted {
                        start = farthestLineStart
                        break search
                    }
                }
                index -= 1
            }
            start = from
        }
        var reader = LineReader(descriptor: descriptor.value, offset: start, path: path, keep: bytesKeptPerLine)
        var lines: [Line] = []
        var number = 0
        // Up to the end found above, not the file's end now: a file growing fast (a pipe's copy
        // under `pages`, 64 MiB a frame) had every line appended since read, for seconds a frame.
        while lines.count < count, let line = try reader.next(number: number, keep: true), line.offset < size {
            lines.append(line)
            number += 1
        }
        let first = total.map { $0 - lines.count }
        if let first {
            lines = lines.enumerated().map { Line(number: first + $0.offset, offset: $0.element.offset, length: $0.element.length, bytes: $0.element.bytes) }
        }
        return (lines, first)
    }

    // MARK: Scanning

    /// Scans from where the scan stopped to the end of the file as it is now, recording checkpoints;
    /// returns when it gets there (or throws `CancellationError` when its task is cancelled). Yields
    /// after each megabyte, so run it at a low priority and it gives way to what the user waits for.
    public func scan() async throws {
        var buffer = ScanBuffer(size: chunkSize)  // one for the whole scan: a fresh megabyte a chunk costs page faults
        var yields = YieldEveryMegabyte()
        while true {
            try Task.checkCancellation()
            if try !scanChunk(&buffer) { return }
            await yields.read(chunkSize)
        }
    }

    /// How far the scan got.
    public var progress: LineFileProgress {
        state.withLock { state in
            LineFileProgress(lines: state.index.knownLines, scannedBytes: state.index.scanned, size: state.size, isComplete: state.index.lineCount != nil)
        }
    }

    /// The number of lines, once the scan reached the end.
    public var lineCount: Int? { state.withLock { $0.index.lineCount } }

    /// Where a read of `line` starts now: the nearest checkpoint at or before it, if the scan got there.
    func checkpoint(before line: Int) -> (line: Int, offset: Int64)? {
        state.withLock { $0.index.start(of: line) }
    }

    /// Scans one chunk from where the scan stopped into `buffer`; `false` at the end of the file.
    /// Chunks are read and searched for line breaks outside the lock, and taken only if nobody
    /// else scanned them meanwhile.
    @discardableResult
    func scanChunk(_ buffer: inout ScanBuffer) throws -> Bool {
        let (descriptor, from, newlines) = state.withLock { ($0.descriptor, $0.index.scanned, $0.index.newlines) }
        let read = try buffer.bytes.withUnsafeMutableBytes { try readFully(descriptor, into: $0, at: from) }
        let chunk = buffer.bytes.withUnsafeBytes { raw in
            LineIndex.Chunk(UnsafeRawBufferPointer(rebasing: raw[0 ..< read]), from: from, newlinesBefore: newlines, interval: checkpointInterval)
        }
        // At the end, what the file system says now: a growth is a change from it. Read before a
        // second look at the end, so bytes written between the two are never counted as said.
        let stated = read > 0 ? nil : (try? FileSystem.status(of: descriptor.value, path: path)).map { Int64($0.size) }
        if read == 0, try byte(at: from, descriptor) != nil { return true }  // it grew meanwhile: scan on
        return state.withLock { state -> Bool in
            guard state.descriptor === descriptor, state.index.scanned == from else { return true }  // another scan moved on
            guard read > 0 else {
                // The file ends here now, whatever its size said: it was truncated in place since it
                // was opened, or its size is not its length (sysfs). Counted, not "at least" forever.
                state.index.reachedEnd()
                state.size = from
                if let stated {
                    state.statedSize = stated
                    state.sizeUnderstatesLength = stated < from
                }
                return false
            }
            state.index.take(chunk)
            state.size = max(state.size, state.index.scanned)
            return true
        }
    }

    /// Extends the scan until `line`'s start is known (or the end).
    func extendScan(throughLine line: Int) throws {
        var buffer: ScanBuffer?
        while state.withLock({ $0.index.knownLines < line && $0.index.lineCount == nil }) {
            try Task.checkCancellation()
            var chunk = buffer ?? ScanBuffer(size: chunkSize)
            defer { buffer = chunk }
            if try !scanChunk(&chunk) { return }
        }
    }

    // MARK: Changes

    /// Looks at the file on disk: grown (more lines may follow the last), truncated or replaced
    /// (opened anew: scan again and refresh every row), deleted (what was read stays readable).
    public func checkForChanges() -> LineFileChange {
        let (descriptor, identity, scanned, lastStated, understates) = state.withLock {
            ($0.descriptor, $0.identity, $0.index.scanned, $0.statedSize, $0.sizeUnderstatesLength)
        }
        guard let onDisk = try? FileSystem.status(path) else {
            let first = state.withLock { state -> Bool in
                defer { state.deleted = true }
                return !state.deleted
            }
            return first ? .deleted : .unchanged
        }
        let current = try? FileSystem.status(of: descriptor.value, path: path)
        // Shorter than what was read is a truncation, unless the file system always says less than
        // the file holds and says the same as before: procfs says 0 for /proc/kallsyms's 5 MB, which
        // was read anew every look, for ever, and said to be truncated.
        let stated = Int64(current?.size ?? 0)
        if onDisk.identity != identity || (stated < scanned && !(understates && stated == lastStated)) {
            guard let (reopened, info) = try? Self.open(path) else { return .unchanged }
            state.withLock { state in
                state.descriptor = reopened
                state.identity = info.identity
                state.index = LineIndex(interval: checkpointInterval)
                state.size = Int64(info.size)
                state.statedSize = state.size
                state.sizeUnderstatesLength = false
                state.deleted = false
            }
            return .replaced
        }
        guard let stated = current.map({ Int64($0.size) }) else { return .unchanged }
        let grew = state.withLock { state -> Bool in
            defer { state.statedSize = stated }
            guard stated > state.size, stated != state.statedSize else { return false }
            state.size = stated
            state.index.grew(to: stated)
            return true
        }
        return grew ? .grew : .unchanged
    }

    // MARK: Reading

    /// Where the file ends now, if not after `size` bytes: a file truncated in place since its size
    /// was read, or one whose size is not its length (sysfs), found by bisection with one-byte reads.
    private func end(atMost size: Int64, _ descriptor: Descriptor) throws -> Int64 {
        guard size > 0, try byte(at: size - 1, descriptor) == nil else { return size }
        // The bytes before the end can be read, none after: the first offset that cannot is the end.
        var low: Int64 = 0
        var high = size - 1
        while low < high {
            let middle = low + (high - low) / 2
            if try byte(at: middle, descriptor) != nil { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func byte(at offset: Int64, _ descriptor: Descriptor) throws -> UInt8? {
        guard offset >= 0 else { return nil }
        var value: UInt8 = 0
        let read = try withUnsafeMutableBytes(of: &value) { try readFully(descriptor, into: $0, at: offset) }
        return read == 1 ? value : nil
    }

    func readFully(_ descriptor: Descriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        do throws(FileSystem.Failure) {
            return try FileSystem.read(descriptor.value, into: buffer, at: Int(clamping: offset), path: path)
        } catch {
            throw LineFileError(path: path, reason: "cannot be read (\(FileSystem.message(for: error.code)))")
        }
    }
}

/// The bytes a scan reads a chunk into, kept from chunk to chunk.
struct ScanBuffer {
    var bytes: [UInt8]

    init(size: Int) {
        // Not zeroed first: a gigabyte's scan would write every byte twice.
        bytes = [UInt8](unsafeUninitializedCapacity: size) { _, count in count = size }
    }
}

/// Reads lines forward from a byte offset, in chunks, keeping at most `keep` bytes of each.
struct LineReader {
    let descriptor: Int32
    let path: String
    let keep: Int
    private(set) var offset: Int64
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var start = 0
    private var end = 0
    private var atEnd = false

    init(descriptor: Int32, offset: Int64, path: String, keep: Int = LineFile.keptBytes) {
        self.descriptor = descriptor
        self.offset = offset
        self.path = path
        self.keep = keep
    }

    /// The next line (numbered `number`), or `nil` at the end of the file. When `keep` is false the
    /// line is only skipped (its bytes are not copied).
    mutating func next(number: Int, keep: Bool) throws -> Line? {
        let lineStart = offset
        var kept: [UInt8] = []
        var length: Int64 = 0
        while true {
            if start == end {
                guard !atEnd, try fill() else {
                    // The end: a last line without a break, or nothing.
                    return length > 0 || !kept.isEmpty ? Line(number: number, offset: lineStart, length: length, bytes: kept) : nil
                }
            }
            let available = end - start
            let found: Int? = buffer.withUnsafeBytes { raw in
                guard let base = raw.baseAddress, let hit = memchr(base + start, 0x0A, available) else { return nil }
                return base.distance(to: UnsafeRawPointer(hit))
            }
            let stop = found ?? end
            let piece = stop - start
            if keep, kept.count < self.keep {
                kept += buffer[start ..< start + min(piece, self.keep - kept.count)]
            }
            length += Int64(piece)
            offset += Int64(piece)
            start = stop
            if found != nil {
                start += 1
                offset += 1
                return Line(number: number, offset: lineStart, length: length, bytes: kept)
            }
        }
    }

    private mutating func fill() throws -> Bool {
        let (descriptor, offset, path) = (self.descriptor, self.offset, self.path)
        let result = buffer.withUnsafeMutableBytes { raw in
            Result { () throws(FileSystem.Failure) -> Int in try FileSystem.read(descriptor, into: raw, at: Int(offset), path: path) }
        }
        guard case .success(let read) = result else {
            if case .failure(let error) = result { throw LineFileError(path: path, reason: "cannot be read (\(FileSystem.message(for: error.code)))") }
            return false
        }
        start = 0
        end = read
        if read == 0 { atEnd = true }
        return read > 0
    }
}

/// A yield to other tasks after each ``LineFile/chunkSize`` bytes read, however small the chunks:
/// tests read a byte at a time to cross chunks' ends, and a yield per chunk then made a search of
/// a 3,000-byte file 3,000 trips through the pool's queue (a full parallel run under TSan starved
/// such tests past their time limit).
struct YieldEveryMegabyte {
    private var sinceYield = 0

    /// `count` more bytes were read: yields if a megabyte was read since the last yield.
    mutating func read(_ count: Int) async {
        sinceYield += count
        guard sinceYield >= LineFile.chunkSize else { return }
        sinceYield = 0
        await Task.yield()
    }
}
