/// A key press, decoded from the bytes a terminal sends.
public enum Key: Hashable, Sendable {
    case up, down, left, right
    case pageUp, pageDown, home, end
    case enter, space, tab, backspace, escape
    /// A printable character.
    case character(Character)
    /// Control plus a letter, e.g. `.control("c")` for Ctrl-C.
    case control(Character)
    /// An escape sequence this decoder does not know.
    case unknown
}

/// Turns terminal input bytes into keys, keeping an incomplete escape sequence or UTF-8 character
/// until the rest arrives.
public struct KeyDecoder: Sendable {
    /// The longest escape sequence kept whole. Terminals send keys in under 20 bytes; a longer run
    /// (a paste, or a program writing to the terminal) is one unknown key, and its bytes up to its
    /// final byte are dropped as they come, so a sequence that never ends costs neither memory nor a
    /// rescan of everything pending at each read.
    static let longestSequence = 64

    private var pending: [UInt8] = []
    /// In an over-long escape sequence, already reported as unknown: its bytes are dropped up to
    /// and including its final byte.
    private var discarding = false

    /// Creates a decoder with nothing pending.
    public init() {}

    /// The keys in `bytes`, with whatever was pending from earlier in front.
    public mutating func decode(_ bytes: some Sequence<UInt8>) -> [Key] {
        pending += bytes
        var keys: [Key] = []
        while !pending.isEmpty {
            if discarding {
                guard let final = pending.firstIndex(where: Self.isFinal) else {
                    pending.removeAll(keepingCapacity: true)
                    break
                }
                pending.removeFirst(final + 1)
                discarding = false
                continue
            }
            guard let (key, length) = Self.decodeOne(pending) else { break }  // incomplete: wait for more
            keys.append(key)
            // An over-long sequence is reported at its first `longestSequence` bytes, which hold no
            // final byte (no other key is that long); the rest goes.
            discarding = length == Self.longestSequence && !Self.isFinal(pending[length - 1])
            pending.removeFirst(length)
        }
        return keys
    }

    /// Whether bytes wait for the rest of a key.
    public var isWaiting: Bool { !pending.isEmpty || discarding }

    /// How many bytes wait (for tests and the fuzzer: never more than ``longestSequence``).
    var pendingCount: Int { pending.count }

    /// What is pending, taken as typed: called when no more bytes came for a moment, so Esc alone
    /// (which starts every escape sequence too) is the Esc key, and a cut sequence is not kept.
    public mutating func flush() -> [Key] {
        discarding = false  // a cut over-long sequence: already reported
        guard !pending.isEmpty else { return [] }
        defer { pending = [] }
        if pending == [0x1B] { return [.escape] }
        if pending.first == 0x1B, pending.count == 2 { return [.escape, Self.decodeOne([pending[1]])?.0 ?? .unknown] }
        return [.unknown]
    }

    /// Decodes the first key of `bytes`, or `nil` if `bytes` ends in the middle of it.
    static func decodeOne(_ bytes: [UInt8]) -> (Key, Int)? {
        let first = bytes[0]
        switch first {
        case 0x1B:
            guard bytes.count > 1 else { return nil }
            switch bytes[1] {
            case UInt8(ascii: "["): return decodeCSI(bytes)
            case UInt8(ascii: "O"):
                guard bytes.count > 2 else { return nil }
                return (finalKey(bytes[2]) ?? .unknown, 3)
            default:
                return (.escape, 1)
            }
        case 0x0D, 0x0A: return (.enter, 1)
        case 0x20: return (.space, 1)
        case 0x09: return (.tab, 1)
        case 0x7F, 0x08: return (.backspace, 1)
        case 0x01...0x1A: return (.control(Character(Unicode.Scalar(first + 0x60))), 1)
        case 0x00..<0x20: return (.unknown, 1)
        case 0x20..<0x80: return (.character(Character(Unicode.Scalar(first))), 1)
        default:
            // A byte that cannot start a character, or a start whose next bytes do not continue it,
            // is one unknown byte: the keys after it (typed ASCII, an escape sequence) are kept.
            guard first >= 0xC2, first <= 0xF4 else { return (.unknown, 1) }
            let length = first >= 0xF0 ? 4 : first >= 0xE0 ? 3 : 2
            if bytes.dropFirst().prefix(length - 1).contains(where: { $0 & 0xC0 != 0x80 }) { return (.unknown, 1) }
            guard bytes.count >= length else { return nil }
            let text = String(decoding: bytes[0..<length], as: UTF8.self)
            guard text.unicodeScalars.count == 1, let character = text.first else { return (.unknown, 1) }
            return (.character(character), length)
        }
    }

    /// Whether `byte` ends a control sequence (ECMA-48's final bytes).
    static func isFinal(_ byte: UInt8) -> Bool { (0x40...0x7E).contains(byte) }

    /// `ESC [ parameters final`: arrows, Home/End and the `~` keys; a sequence with no final byte in
    /// its first ``longestSequence`` bytes is an unknown key of that length (the caller drops the
    /// rest).
    private static func decodeCSI(_ bytes: [UInt8]) -> (Key, Int)? {
        var index = 2
        while index < min(bytes.count, longestSequence), !isFinal(bytes[index]) { index += 1 }
        if index == longestSequence { return (.unknown, longestSequence) }
        guard index < bytes.count else { return nil }
        let length = index + 1
        let final = bytes[index]
        if final == UInt8(ascii: "~") {
            let number = Int(String(decoding: bytes[2..<index].prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self))
            switch number {
            case 1, 7: return (.home, length)
            case 4, 8: return (.end, length)
            case 5: return (.pageUp, length)
            case 6: return (.pageDown, length)
            default: return (.unknown, length)
            }
        }
        return (finalKey(final) ?? .unknown, length)
    }

    private static func finalKey(_ byte: UInt8) -> Key? {
        switch byte {
        case UInt8(ascii: "A"): .up
        case UInt8(ascii: "B"): .down
        case UInt8(ascii: "C"): .right
        case UInt8(ascii: "D"): .left
        case UInt8(ascii: "H"): .home
        case UInt8(ascii: "F"): .end
        default: nil
        }
    }
}

/// What a key does in a scrolling list, the same in every example's screen: ↑/↓ or j/k, PgUp/PgDn
/// or b/space/f (and Ctrl-B/Ctrl-F), g/G or Home/End, q or Ctrl-C/Ctrl-D.
public enum ListCommand: Sendable, Hashable {
    /// Leave the program.
    case quit
    /// One row up or down.
    case up, down
    /// One screen up or down.
    case pageUp, pageDown
    /// The first or the last row.
    case first, last

    /// The command `key` gives, or `nil` for a key lists do not use.
    public init?(_ key: Key) {
        switch key {
        case .character("q"), .control("c"), .control("d"): self = .quit
        case .up, .character("k"): self = .up
        case .down, .character("j"): self = .down
        case .pageDown, .space, .character("f"), .control("f"): self = .pageDown
        case .pageUp, .character("b"), .control("b"): self = .pageUp
        case .home, .character("g"): self = .first
        case .end, .character("G"): self = .last
        default: return nil
        }
    }

    /// For a move within the rows already known (up, down, a page, the first row), the list's new
    /// first visible row and the row to select — which the screen then clamps to what it can show;
    /// `nil` for `.quit` and `.last`, which each screen handles its own way.
    public func motion(selected: Int, top: Int, pageRows: Int) -> (top: Int, selected: Int)? {
        switch self {
        case .up: (top, selected - 1)
        case .down: (top, selected + 1)
        case .pageDown: (top + pageRows, selected + pageRows)
        case .pageUp: (top - pageRows, selected - pageRows)
        case .first: (top, 0)
        case .quit, .last: nil
        }
    }
}
