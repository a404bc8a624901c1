import Foundation

/// The layout of one entry file:
///
/// ```
/// offset  size  field
///      0     4  magic "AVEN"
///      4     1  format version (1)
///      5     3  reserved, zero
///      8     4  key length in bytes (UInt32, little-endian)
///     12     4  reserved, zero
///     16     8  payload length in bytes (UInt64, little-endian)
///     24     8  stored at, milliseconds since 1970 (Int64)
///     32     8  expires at, milliseconds since 1970 (Int64; Int64.max = never)
///     40     8  checksum of key and payload (StableHash.checksum)
///     48     …  key (UTF-8), then payload
/// ```
///
/// The entry records its key, so two keys whose names collide read as misses, never as each other's
/// value. Lengths must add up to the file size and the checksum must match, so a truncated, torn,
/// zero-filled or foreign file is recognised and treated as a miss.
enum DiskEntryFormat {
    static let headerSize = 48
    static let magic: [UInt8] = Array("AVEN".utf8)
    static let version: UInt8 = 1
    static let never = Int64.max

    struct Header {
        var keyLength: Int
        var payloadLength: Int
        var storedAt: Int64
        var expiresAt: Int64
        var checksum: UInt64
    }

    /// The header and key bytes to write before `payload`.
    static func prefix(key: [UInt8], payload: UnsafeRawBufferPointer, storedAt: Int64, expiresAt: Int64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: headerSize)
        bytes.replaceSubrange(0..<4, with: magic)
        bytes[4] = version
        key.withUnsafeBytes { keyBytes in
            bytes.withUnsafeMutableBytes { header in
                header.storeBytes(of: UInt32(key.count).littleEndian, toByteOffset: 8, as: UInt32.self)
                header.storeBytes(of: UInt64(payload.count).littleEndian, toByteOffset: 16, as: UInt64.self)
                header.storeBytes(of: storedAt.littleEndian, toByteOffset: 24, as: Int64.self)
                header.storeBytes(of: expiresAt.littleEndian, toByteOffset: 32, as: Int64.self)
                header.storeBytes(of: StableHash.checksum([keyBytes, payload]).littleEndian, toByteOffset: 40, as: UInt64.self)
            }
        }
        return bytes + key
    }

    /// Parses a header; `nil` if it is not ours (wrong magic or version).
    static func header(_ bytes: UnsafeRawBufferPointer) -> Header? {
        guard bytes.count >= headerSize,
              Array(bytes[0..<4]) == magic,
              bytes[4] == version
        else { return nil }
        return Header(
            keyLength: Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))),
            payloadLength: Int(truncatingIfNeeded: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self))),
            storedAt: Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 24, as: Int64.self)),
            expiresAt: Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 32, as: Int64.self)),
            checksum: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 40, as: UInt64.self))
        )
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000).rounded())
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
    }
}
