import Foundation

/// Where the lines of a file start, as a pure value: the byte offset of every `interval`-th line
/// (a **checkpoint**), learned from the bytes a scan has read so far, and the count once the scan
/// reached the end. Memory is one offset per `interval` lines, whatever the file's size.
///
/// A line ends at `\n` (a `\r` before it is part of the line, for the reader to drop); a last line
/// without `\n` is a line too. Line numbers count from 0.
struct LineIndex: Sendable, Equatable {
    /// Lines between checkpoints.
    let interval: Int
    /// `checkpoints[k]` is where line `k × interval` starts.
    private(set) var checkpoints: [Int64] = [0]
    /// Newlines seen: the lines known to have ended.
    private(set) var newlines = 0
    /// Bytes scanned, from the start of the file.
    private(set) var scanned: Int64 = 0
    /// Whether the last byte scanned was `\n` (or nothing was scanned).
    private(set) var endsWithNewline = true
    /// The file's size when the scan reached its end, if it did (and it has not grown since).
    private(set) var completeAt: Int64?

    init(interval: Int) {
        precondition(interval >= 1, "LineIndex.interval must be at least 1")
        self.interval = interval
    }

    /// What a chunk of scanned bytes adds, worked out apart from the index (outside its lock).
    struct Chunk: Sendable {
        /// Where the chunk starts in the file.
        let from: Int64
        let count: Int
        /// Line breaks in it.
        let newlines: Int
        /// The checkpoints it adds: where the lines whose numbers are multiples of the interval start.
        let checkpoints: [Int64]
        let endsWithNewline: Bool

        /// Finds the line breaks of `bytes`, which start at byte `from`, after `newlinesBefore` breaks.
        init(_ bytes: UnsafeRawBufferPointer, from: Int64, newlinesBefore: Int, interval: Int) {
            self.from = from
            count = bytes.count
            var newlines = 0
            var checkpoints: [Int64] = []
            if let base = bytes.baseAddress {
                var position = 0
                while position < bytes.count, let found = memchr(base + position, 0x0A, bytes.count - position) {
                    let index = base.distance(to: UnsafeRawPointer(found))
                    newlines += 1
                    if (newlinesBefore + newlines) % interval == 0 { checkpoints.append(from + Int64(index) + 1) }
                    position = index + 1
                }
            }
            self.newlines = newlines
            self.checkpoints = checkpoints
            endsWithNewline = bytes.last == 0x0A
        }
    }

    /// Takes the next scanned bytes (they continue exactly where the scan was).
    mutating func take(_ bytes: UnsafeRawBufferPointer) {
        take(Chunk(bytes, from: scanned, newlinesBefore: newlines, interval: interval))
    }

    /// Takes a chunk worked out from where the scan is now (`chunk.from == scanned`, and no break
    /// taken since it was worked out).
    mutating func take(_ chunk: Chunk) {
        precondition(chunk.from == scanned, "LineIndex: a chunk taken out of order")
        guard chunk.count > 0 else { return }
        newlines += chunk.newlines
        checkpoints += chunk.checkpoints
        scanned += Int64(chunk.count)
        endsWithNewline = chunk.endsWithNewline
        completeAt = nil
    }

    /// The scan read nothing more: the file ends where it got.
    mutating func reachedEnd() {
        completeAt = scanned
    }

    /// The file grew past what was scanned: the count is not known any more.
    mutating func grew(to size: Int64) {
        if let completeAt, size > completeAt { self.completeAt = nil }
    }

    /// Lines known to exist: those ended, and a last one without `\n` once the scan saw it.
    var knownLines: Int { newlines + (endsWithNewline ? 0 : 1) }

    /// The number of lines, once the scan reached the end.
    var lineCount: Int? { completeAt == nil ? nil : knownLines }

    /// Where to start reading to reach line `line`: the nearest checkpoint at or before it (its line
    /// number and byte offset), if the scan got there; at most `interval − 1` lines to skip.
    func start(of line: Int) -> (line: Int, offset: Int64)? {
        guard line >= 0, line <= newlines else { return nil }
        let checkpoint = min(line / interval, checkpoints.count - 1)
        return (checkpoint * interval, checkpoints[checkpoint])
    }

    /// The last checkpoint at or before byte `offset` (its line number and byte offset): where to
    /// count from to learn which line `offset` is in, if the scan passed it.
    func checkpoint(atOrBefore offset: Int64) -> (line: Int, offset: Int64)? {
        guard offset >= 0, offset <= scanned else { return nil }
        // The last checkpoint whose offset is ≤ `offset` (checkpoints are ascending).
        var low = 0
        var high = checkpoints.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if checkpoints[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return (low * interval, checkpoints[low])
    }

    /// The nearest checkpoint of all: the last one (to scan on from).
    var lastCheckpoint: (line: Int, offset: Int64) {
        ((checkpoints.count - 1) * interval, checkpoints[checkpoints.count - 1])
    }
}
