import Foundation

/// The contents the crash writer stores for each key, so the test can check every byte after the
/// writer is killed. Sizes vary (100 bytes to 6 KiB) so kills land at many points of a write.
public enum CrashPayload {
    public static func key(_ index: Int) -> String { "key-\(index)" }

    public static func bytes(_ index: Int) -> Data {
        var state = UInt64(index) &* 0x9E37_79B9_7F4A_7C15 | 1
        let count = 100 + (index % 7) * 1_000
        var words = [UInt64](repeating: 0, count: (count + 7) / 8)
        for slot in words.indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            words[slot] = state
        }
        return words.withUnsafeBytes { Data($0.prefix(count)) }
    }
}

extension CrashPayload {
    /// The total size of the entry files (`*.entry`) in `folder` now, as `ls` would add them up.
    public static func entryBytes(in folder: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".entry") }.reduce(0) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)
            return total + ((attributes?[.size] as? Int) ?? 0)
        }
    }
}
