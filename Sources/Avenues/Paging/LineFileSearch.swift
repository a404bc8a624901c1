import Foundation

extension LineFile {
    /// The first line at or after line `line` whose bytes contain `needle`, searching forward to the
    /// end of the file as it is now; `nil` if there is none.
    ///
    /// The file is read in large chunks and searched at memmem speed, the lines counted on the way, so
    /// a hit a gigabyte further on costs one pass over the bytes between — not a ``Line`` per line.
    /// Cancel the task to stop it (it checks between chunks and yields to other work).
    ///
    /// - Parameters:
    ///   - needle: the bytes to find (a search of what the user typed: its UTF-8). An empty needle, or
    ///     one with a line break, is in no line.
    ///   - line: the first line to look at (0 or more).
    ///   - ignoringCase: whether ASCII letters match in either case (other bytes match exactly).
    ///   - progress: called after each chunk with the byte offset searched up to.
    /// - Throws: ``LineFileError`` if the file cannot be read; `CancellationError` when cancelled.
    public func firstLine(
        containing needle: some Collection<UInt8>,
        from line: Int,
        ignoringCase: Bool = false,
        progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> Int? {
        let pattern = Self.pattern(needle, ignoringCase: ignoringCase)
        guard !pattern.isEmpty, let (descriptor, start) = try startOfLine(max(0, line)) else { return nil }
        let overlap = pattern.bytes.count - 1
        var buffer = [UInt8](unsafeUninitializedCapacity: chunkSize + overlap) { [chunkSize] _, count in count = chunkSize + overlap }
        var carried = 0  // bytes at the buffer's start kept from the last chunk (a match may span chunks)
        var lineAtStart = max(0, line)  // the line buffer[0] is in
        var offset = start
        var yields = YieldEveryMegabyte()
        while true {
            try Task.checkCancellation()
            let read = try buffer.withUnsafeMutableBytes { raw in
                try readFully(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[carried ..< carried + chunkSize]), at: offset)
            }
            guard read > 0 else { return nil }
            let filled = carried + read
            let hit: Int? = buffer.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return nil }
                if ignoringCase { Self.foldASCII(base + carried, read) }
                if let found = pattern.find(in: UnsafeRawPointer(base), filled) {
                    return lineAtStart + Self.countBreaks(UnsafeRawPointer(base), found)
                }
                let kept = min(overlap, filled)
                lineAtStart += Self.countBreaks(UnsafeRawPointer(base), filled - kept)
                memmove(base, base + (filled - kept), kept)
                carried = kept
                return nil
            }
            if let hit { return hit }
            offset += Int64(read)
            progress?(offset)
            await yields.read(read)
        }
    }

    /// The last line before line `line` whose bytes contain `needle`, searching backward to the
    /// start of the file (before the end, for a `line` past it); `nil` if there is none. As
    /// ``firstLine(containing:from:ignoringCase:progress:)``, chunk by chunk at memmem speed.
    ///
    /// - Throws: ``LineFileError`` if the file cannot be read; `CancellationError` when cancelled.
    public func lastLine(containing needle: some Collection<UInt8>, before line: Int, ignoringCase: Bool = false) async throws -> Int? {
        let pattern = Self.pattern(needle, ignoringCase: ignoringCase)
        guard !pattern.isEmpty, line > 0 else { return nil }
        let descriptor: Descriptor
        var end: Int64
        if let (found, start) = try startOfLine(line) {
            (descriptor, end) = (found, start)
        } else {
            (descriptor, end) = state.withLock { ($0.descriptor, $0.index.scanned) }  // past the end: all of it
        }
        let overlap = pattern.bytes.count - 1
        var buffer = [UInt8](unsafeUninitializedCapacity: chunkSize + overlap) { [chunkSize] _, count in count = chunkSize + overlap }
        var carry: [UInt8] = []  // the first bytes of the chunk after this one (a match may span chunks)
        var yields = YieldEveryMegabyte()
        while end > 0 {
            try Task.checkCancellation()
            let length = Int(min(Int64(chunkSize), end))
            let from = end - Int64(length)
            let read = try buffer.withUnsafeMutableBytes { raw in
                try readFully(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[0 ..< length]), at: from)
            }
            guard read == length else { return nil }  // truncated meanwhile
            let match: Int? = buffer.withUnsafeMutableBytes { raw in
                guard let base = raw.baseAddress else { return nil }
                if ignoringCase { Self.foldASCII(base, length) }
                carry.withUnsafeBytes { if let source = $0.baseAddress { memcpy(base + length, source, carry.count) } }
                let filled = length + carry.count
                var last: Int?
                var position = 0
                while position < filled, let found = pattern.find(in: UnsafeRawPointer(base + position), filled - position) {
                    last = position + found
                    position += found + 1
                }
                carry = Array(UnsafeRawBufferPointer(start: base, count: min(overlap, filled)))
                return last
            }
            if let match { return try self.line(containingOffset: from + Int64(match), descriptor) }
            end = from
            await yields.read(length)
        }
        return nil
    }

    /// The needle as searched: ASCII letters folded to lower case when case is ignored; empty when it
    /// can match no line.
    static func pattern(_ needle: some Collection<UInt8>, ignoringCase: Bool) -> BytePattern {
        var bytes = Array(needle)
        if bytes.contains(0x0A) { bytes = [] }
        if ignoringCase { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { foldASCII(base, $0.count) } } }
        return BytePattern(bytes)
    }

    /// `A`–`Z` to `a`–`z`, in place; other bytes as they are.
    static func foldASCII(_ bytes: UnsafeMutableRawPointer, _ count: Int) {
        let bytes = bytes.assumingMemoryBound(to: UInt8.self)
        for index in 0 ..< count {
            let byte = bytes[index]
            bytes[index] = byte &- 0x41 < 26 ? byte | 0x20 : byte
        }
    }

    /// The line breaks in the first `count` bytes at `bytes`.
    static func countBreaks(_ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        var breaks = 0
        var position = 0
        while position < count, let found = memchr(bytes + position, 0x0A, count - position) {
            breaks += 1
            position = bytes.distance(to: UnsafeRawPointer(found)) + 1
        }
        return breaks
    }

    /// Line `line`'s byte offset (the scan extended to it first) and the file it is in; `nil` past
    /// the end.
    private func startOfLine(_ line: Int) throws -> (Descriptor, Int64)? {
        // Through the line after it: a line's start is known once the line before it has ended.
        try extendScan(throughLine: Saturating.add(line, 1))
        guard let (descriptor, checkpoint) = state.withLock({ state in state.index.start(of: line).map { (state.descriptor, $0) } }) else {
            return nil
        }
        var reader = LineReader(descriptor: descriptor.value, offset: checkpoint.offset, path: path, keep: 0)
        var number = checkpoint.line
        while number < line {
            guard try reader.next(number: number, keep: false) != nil else { return nil }
            number += 1
        }
        return (descriptor, reader.offset)
    }

    /// The number of the line byte `offset` is in, counted from the checkpoint before it (the scan
    /// has passed it).
    private func line(containingOffset offset: Int64, _ descriptor: Descriptor) throws -> Int? {
        guard let checkpoint = state.withLock({ $0.index.checkpoint(atOrBefore: offset) }) else { return nil }
        var line = checkpoint.line
        var position = checkpoint.offset
        var buffer = [UInt8](unsafeUninitializedCapacity: 64 * 1024) { _, count in count = 64 * 1024 }
        while position < offset {
            let length = Int(min(Int64(buffer.count), offset - position))
            let read = try buffer.withUnsafeMutableBytes { raw in
                try readFully(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[0 ..< length]), at: position)
            }
            guard read > 0 else { return nil }
            line += buffer.withUnsafeBytes { raw in raw.baseAddress.map { Self.countBreaks($0, read) } ?? 0 }
            position += Int64(read)
        }
        return line
    }
}

/// Bytes to find in a buffer: candidates located with memchr on the pattern's least common byte
/// (in text and logs), each checked with memcmp. (glibc's memmem is not visible to Swift.)
struct BytePattern {
    let bytes: [UInt8]
    /// Where in the pattern the byte memchr looks for is.
    private let anchor: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        // Spaces, digits, lower-case letters and log punctuation are everywhere; anything else is rarer.
        func common(_ byte: UInt8) -> Bool {
            byte == 0x20 || (0x30...0x39).contains(byte) || (0x61...0x7A).contains(byte) || "/.-:\"=[]".utf8.contains(byte)
        }
        anchor = bytes.firstIndex { !common($0) } ?? bytes.indices.first { !"etaoinsr ".utf8.contains(bytes[$0]) } ?? 0
    }

    var isEmpty: Bool { bytes.isEmpty }

    /// The offset of the first occurrence in `count` bytes at `base`, if any.
    func find(in base: UnsafeRawPointer, _ count: Int) -> Int? {
        let length = bytes.count
        guard length > 0, count >= length else { return nil }
        return bytes.withUnsafeBytes { pattern -> Int? in
            guard let patternBase = pattern.baseAddress else { return nil }
            let key = bytes[anchor]
            // Candidates: where the anchor byte is, with room for the pattern around it.
            var position = anchor
            let lastStart = count - length
            while position <= lastStart + anchor, let hit = memchr(base + position, Int32(key), lastStart + anchor + 1 - position) {
                let at = base.distance(to: UnsafeRawPointer(hit)) - anchor
                if memcmp(base + at, patternBase, length) == 0 { return at }
                position = at + anchor + 1
            }
            return nil
        }
    }
}
