import Foundation

/// The layout of one entry file (format version 2):
///
/// ```
/// offset  size  field
///      0     4  magic "AVEN"
///      4     1  format version (2)
///      5     3  reserved, zero
///      8     4  key length in bytes (UInt32, little-endian)
///     12     4  reserved, zero
///     16     8  payload length in bytes (UInt64, little-endian)
///     24     8  stored at, milliseconds since 1970 (Int64)
///     32     8  expires at, milliseconds since 1970 (Int64; Int64.max = never)
///     40     8  checksum of bytes 0..<40, the key and the payload (StableHash.checksum)
///     48     …  key (UTF-8, NFC), then payload
/// ```
///
/// The entry records its key, so two keys whose names collide read as misses, never as each other's
/// value. The lengths must add up to the file size and the checksum must match, so a truncated, torn,
/// zero-filled, edited or foreign file is recognised and treated as a miss. The checksum covers the
/// dates too: an edited `storedAt` would otherwise make an old copy look fresh. Version 1 files
/// (whose checksum left the dates out) read as foreign and are replaced.
enum DiskEntryFormat {
    static let headerSize = 48
    static let magic: [UInt8] = Array("AVEN".utf8)
    static let version: UInt8 = 2
    static let never = Int64.max
    /// The header bytes the checksum covers (everything before the checksum itself).
    static let checkedHeaderSize = 40

    struct Header {
        var keyLength: Int
        /// As written in the file: not trusted until checked against the file's size.
        var payloadLength: UInt64
        var storedAt: Int64
        var expiresAt: Int64
        var checksum: UInt64

        /// The size of the whole file this header describes, or `nil` if its lengths cannot be real
        /// (they overflow): a crafted or damaged header never makes the reader trap.
        var fileSize: Int? {
            guard payloadLength <= UInt64(Int.max) else { return nil }
            let (prefix, overflow) = DiskEntryFormat.headerSize.addingReportingOverflow(keyLength)
            guard !overflow else { return nil }
            let (total, tooLong) = prefix.addingReportingOverflow(Int(payloadLength))
            return tooLong ? nil : total
        }
    }

    /// The header and key bytes to write before `payload`.
    static func prefix(key: [UInt8], payload: UnsafeRawBufferPointer, storedAt: Int64, expiresAt: Int64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: headerSize)
        bytes.replaceSubrange(0..<4, with: magic)
        bytes[4] = version
        bytes.withUnsafeMutableBytes { header in
            header.storeBytes(of: UInt32(truncatingIfNeeded: key.count).littleEndian, toByteOffset: 8, as: UInt32.self)
            header.storeBytes(of: UInt64(payload.count).littleEndian, toByteOffset: 16, as: UInt64.self)
            header.storeBytes(of: storedAt.littleEndian, toByteOffset: 24, as: Int64.self)
            header.storeBytes(of: expiresAt.littleEndian, toByteOffset: 32, as: Int64.self)
        }
        let sum = bytes.withUnsafeBytes { header in
            key.withUnsafeBytes { keyBytes in checksum(header: header, key: keyBytes, payload: payload) }
        }
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: sum.littleEndian, toByteOffset: 40, as: UInt64.self) }
        return bytes + key
    }

    /// The checksum an entry must carry: of the header's first 40 bytes, the key and the payload.
    static func checksum(header: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) -> UInt64 {
        StableHash.checksum([UnsafeRawBufferPointer(rebasing: header[0..<checkedHeaderSize]), key, payload])
    }

    /// Parses a header; `nil` if it is not ours (too short, wrong magic or version).
    static func header(_ bytes: UnsafeRawBufferPointer) -> Header? {
        guard bytes.count >= headerSize,
              bytes[0] == magic[0], bytes[1] == magic[1], bytes[2] == magic[2], bytes[3] == magic[3],
              bytes[4] == version
        else { return nil }
        return Header(
            keyLength: Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))),
            payloadLength: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
            storedAt: Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 24, as: Int64.self)),
            expiresAt: Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 32, as: Int64.self)),
            checksum: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 40, as: UInt64.self))
        )
    }

    /// `date` in milliseconds since 1970, clamped: a far-future date means "never", not a trap.
    static func milliseconds(_ date: Date) -> Int64 {
        Saturating.milliseconds(sinceEpoch: date.timeIntervalSince1970) ?? 0
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
    }
}
