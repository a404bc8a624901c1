import Avenues
import Foundation

/// The lines of a stream that contain a query (`pages FILE --filter`, piped), chunk by chunk: a line
/// may span any number of chunks. With no query, every byte as it is.
///
/// Linear in the stream whatever its lines: within a chunk it jumps from hit to hit
/// (``TextQuery/firstMatch(in:)``), as grep does, instead of testing each line; a line that spans
/// chunks is searched once, each new piece with the few bytes before it that a match can straddle,
/// and once it matched its bytes go out as they arrive. Until then the line is kept, as grep keeps
/// it: memory is the longest line that has not matched yet.
public struct LineFilter {
    /// What a line must contain (`nil`: every byte passes).
    public let query: TextQuery?
    /// The start of the line being read, while it has not matched.
    private var pending: [UInt8] = []
    /// Whether the line being read matched (its bytes so far were given out).
    private var matched = false
    /// Bytes a match can straddle between two pieces of a line: the query's length less one.
    private let overlap: Int
    /// A query with a line break in it: no line can contain it.
    private let matchesNoLine: Bool

    /// A filter by `query` (`nil`: every byte).
    public init(_ query: TextQuery?) {
        self.query = query
        overlap = max(0, (query?.text.utf8.count ?? 0) - 1)
        matchesNoLine = query?.text.utf8.contains(0x0A) ?? false
    }

    /// The matching lines (or pieces of a matching line) that `chunk` completes or continues.
    public mutating func take(_ chunk: Data) -> Data {
        guard let query else { return chunk }
        if matchesNoLine { return Data() }
        var out = Data()
        chunk.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, !raw.isEmpty else { return }
            let count = raw.count
            func newline(from position: Int) -> Int? {
                guard position < count, let hit = memchr(base + position, 0x0A, count - position) else { return nil }
                return base.distance(to: UnsafeRawPointer(hit))
            }
            // The line carried over from earlier chunks, up to its end in this one (if it ends here).
            let firstBreak = newline(from: 0)
            let head = UnsafeRawBufferPointer(rebasing: raw[0 ..< (firstBreak ?? count)])
            continueLine(with: head, query: query, into: &out)
            guard let firstBreak else { return }
            if endLine() { out.append(0x0A) }
            // Whole lines: from hit to hit.
            var end = count
            while end > firstBreak + 1, raw[end - 1] != 0x0A { end -= 1 }
            var position = firstBreak + 1
            while position < end, let hit = query.firstMatch(in: UnsafeRawBufferPointer(rebasing: raw[position ..< end])) {
                var start = position + hit
                while start > position, raw[start - 1] != 0x0A { start -= 1 }
                let stop = newline(from: position + hit) ?? end - 1
                out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[start ... stop]))
                position = stop + 1
            }
            // The line this chunk leaves unfinished.
            continueLine(with: UnsafeRawBufferPointer(rebasing: raw[end ..< count]), query: query, into: &out)
        }
        return out
    }

    /// The last line, if the stream did not end with a line break and that line matched.
    public mutating func finish() -> Data {
        endLine() ? Data([0x0A]) : Data()
    }

    /// Adds `piece` to the line being read: given out if the line matched (now or before), kept if not.
    private mutating func continueLine(with piece: UnsafeRawBufferPointer, query: TextQuery, into out: inout Data) {
        guard !piece.isEmpty else { return }
        if matched {
            out.append(contentsOf: piece)
            return
        }
        // A match may begin in the last `overlap` bytes already searched.
        let carried = min(overlap, pending.count)
        var window = Array(pending.suffix(carried))
        window.append(contentsOf: piece)
        if window.withUnsafeBytes({ query.firstMatch(in: $0) }) != nil {
            matched = true
            out.append(contentsOf: pending)
            out.append(contentsOf: piece)
            pending = []
        } else {
            pending.append(contentsOf: piece)
        }
    }

    /// Ends the line being read; whether it matched (its line break then goes out).
    private mutating func endLine() -> Bool {
        defer {
            matched = false
            pending = []
        }
        return matched
    }
}
