import Foundation

/// What a user typed to find rows: a substring, matched without regard to ASCII case unless it has a
/// capital letter ("smart case", as fzf, less `-i` and vim's `smartcase` do). Letters outside ASCII
/// match exactly.
///
/// Matching works on UTF-8 bytes with no allocation for native strings, so a filter can test a
/// million rows' fields in tens of milliseconds.
///
/// ```swift
/// TextQuery("fix").matches("Fix the build")   // true: no capital, either case
/// TextQuery("Fix").matches("fix the build")   // false: a capital, exact case
/// ```
public struct TextQuery: Sendable, Hashable, CustomStringConvertible {
    /// The text as typed.
    public let text: String
    /// Whether case must match exactly.
    public let caseSensitive: Bool
    /// The bytes searched for: folded to lower case when case does not matter.
    let pattern: BytePattern

    /// A query for `text`; `caseSensitive` `nil` (the default) for smart case: sensitive exactly when
    /// `text` has an upper-case letter.
    public init(_ text: String, caseSensitive: Bool? = nil) {
        self.text = text
        let sensitive = caseSensitive ?? text.contains { $0.isUppercase }
        self.caseSensitive = sensitive
        pattern = LineFile.pattern(Array(text.utf8), ignoringCase: !sensitive)
    }

    /// Whether `field` contains the query (an empty query matches everything).
    public func matches(_ field: some StringProtocol) -> Bool {
        if pattern.bytes.isEmpty { return text.isEmpty }
        if let found = field.utf8.withContiguousStorageIfAvailable({ matches(bytes: UnsafeRawBufferPointer($0)) }) { return found }
        return Array(field.utf8).withUnsafeBytes { matches(bytes: $0) }
    }

    /// Whether `bytes` contain the query.
    public func matches(bytes: UnsafeRawBufferPointer) -> Bool {
        if pattern.bytes.isEmpty { return text.isEmpty }
        return firstMatch(in: bytes) != nil
    }

    /// The offset of the query's first occurrence in `bytes` (a buffer of many lines: a filter jumps
    /// from hit to hit instead of testing each line); `nil` if none, or if the query is empty.
    public func firstMatch(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress, !pattern.bytes.isEmpty else { return nil }
        if caseSensitive { return pattern.find(in: base, bytes.count) }
        return pattern.findFoldingCase(in: base, bytes.count)
    }

    /// Whether every row this query matches is matched by `other` too — typing more of the same
    /// text: a filter then re-checks only `other`'s matches instead of every row.
    public func narrows(_ other: TextQuery) -> Bool {
        if other.text.isEmpty { return true }
        if other.caseSensitive {
            return caseSensitive && text.contains(other.text)
        }
        // `other` ignores case: this one's text, folded, must contain `other`'s folded text.
        let folded = LineFile.pattern(Array(text.utf8), ignoringCase: true).bytes
        let needle = other.pattern.bytes
        guard folded.count >= needle.count else { return false }
        return folded.withUnsafeBytes { raw in raw.baseAddress.map { other.pattern.find(in: $0, folded.count) != nil } ?? false }
    }

    /// The text.
    public var description: String { text }

    public static func == (lhs: TextQuery, rhs: TextQuery) -> Bool {
        lhs.text == rhs.text && lhs.caseSensitive == rhs.caseSensitive
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(text)
        hasher.combine(caseSensitive)
    }
}

extension BytePattern {
    /// Where the pattern (already folded to lower case) first occurs in `count` bytes at `base` with
    /// ASCII letters in either case. No copy of the bytes: candidates are where the first byte
    /// matches in either case (found with memchr when it is not a letter).
    func findFoldingCase(in base: UnsafeRawPointer, _ count: Int) -> Int? {
        let length = bytes.count
        guard length > 0, count >= length else { return nil }
        let first = bytes[0]
        if !(0x61 ... 0x7A).contains(first) {
            // Not a letter: memchr finds the candidates, the rest is compared folded.
            var position = 0
            while position <= count - length, let hit = memchr(base + position, Int32(first), count - length + 1 - position) {
                let at = base.distance(to: UnsafeRawPointer(hit))
                if matchesFolded(base + at) { return at }
                position = at + 1
            }
            return nil
        }
        // A letter: the next candidate is the nearer of memchr's next lower-case and upper-case hit.
        let upper = first - 0x20
        let end = count - length + 1  // candidates start before this
        func next(_ byte: UInt8, from position: Int) -> Int {
            guard position < end, let hit = memchr(base + position, Int32(byte), end - position) else { return end }
            return base.distance(to: UnsafeRawPointer(hit))
        }
        var lower = next(first, from: 0)
        var capital = next(upper, from: 0)
        while true {
            let at = min(lower, capital)
            if at >= end { return nil }
            if matchesFolded(base + at) { return at }
            if at == lower { lower = next(first, from: at + 1) } else { capital = next(upper, from: at + 1) }
        }
    }

    /// Whether the pattern's bytes start at `start`, ASCII letters in either case.
    private func matchesFolded(_ start: UnsafeRawPointer) -> Bool {
        let haystack = start.assumingMemoryBound(to: UInt8.self)
        return bytes.withUnsafeBufferPointer { pattern in
            for offset in 1 ..< pattern.count {
                let byte = haystack[offset]
                if (byte &- 0x41 < 26 ? byte | 0x20 : byte) != pattern[offset] { return false }
            }
            return true
        }
    }
}
