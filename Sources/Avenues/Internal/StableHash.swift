/// Hashes that give the same answer on every run, process and platform (unlike `Hasher`, which is
/// seeded per process), for names and checksums that live on disk.
enum StableHash {
    /// 64-bit FNV-1a of `bytes`: short inputs such as keys, for names whose files record their key
    /// (a collision costs a miss, never a wrong answer). Not for names that cannot: anyone who picks
    /// the inputs can make two collide (``SHA256`` names downloaded files).
    static func fnv1a64<Bytes: Sequence<UInt8>>(_ bytes: Bytes, basis: UInt64 = 0xCBF2_9CE4_8422_2325) -> UInt64 {
        var hash = basis
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    /// `value` as 16 lowercase hexadecimal digits.
    static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            writeHex(value, into: buffer, at: 0)
            return 16
        }
    }

    /// Writes `value` as 16 lowercase hexadecimal digits into `buffer` from `offset` (which must
    /// leave room for them).
    static func writeHex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        for position in 0..<16 {
            let nibble = UInt8(truncatingIfNeeded: value >> UInt64(60 - 4 * position)) & 0xF
            buffer[offset + position] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
        }
    }

    /// A 64-bit checksum of several byte ranges read as one, eight bytes at a time: detects torn,
    /// zero-filled or foreign contents. Not cryptographic.
    static func checksum(_ parts: [UnsafeRawBufferPointer]) -> UInt64 {
        var state = Checksum()
        for part in parts { state.add(part) }
        return state.value
    }

    /// The checksum computed incrementally: ``add(_:)`` parts in order, then read ``value``.
    struct Checksum {
        private var hash: UInt64 = 0x9E37_79B9_7F4A_7C15
        private var length: UInt64 = 0
        private var pending: UInt64 = 0  // bytes carried over between parts, little-endian
        private var pendingCount = 0

        mutating func add(_ bytes: UnsafeRawBufferPointer) {
            var offset = 0
            // Top up a partial word carried over from the previous part.
            while pendingCount > 0, pendingCount < 8, offset < bytes.count {
                pending |= UInt64(bytes[offset]) << (8 * UInt64(pendingCount))
                pendingCount += 1
                offset += 1
            }
            if pendingCount == 8 {
                mix(pending)
                pending = 0
                pendingCount = 0
            }
            while offset + 8 <= bytes.count {
                mix(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                offset += 8
            }
            while offset < bytes.count {
                pending |= UInt64(bytes[offset]) << (8 * UInt64(pendingCount))
                pendingCount += 1
                offset += 1
            }
            length &+= UInt64(bytes.count)
        }

        private mutating func mix(_ word: UInt64) {
            hash = (hash ^ (word &* 0xBF58_476D_1CE4_E5B9)).rotatedLeft(by: 27) &* 0x94D0_49BB_1331_11EB
        }

        var value: UInt64 {
            var copy = self
            if copy.pendingCount > 0 { copy.mix(copy.pending ^ (UInt64(copy.pendingCount) << 56)) }
            var result = copy.hash ^ copy.length
            result ^= result >> 33
            result = result &* 0xFF51_AFD7_ED55_8CCD
            result ^= result >> 33
            return result
        }
    }
}

extension UInt64 {
    fileprivate func rotatedLeft(by count: UInt64) -> UInt64 {
        (self << count) | (self >> (64 - count))
    }
}
