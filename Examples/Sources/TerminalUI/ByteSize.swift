/// A byte count as people read it: `512 B`, `1.4 GiB`.
///
/// Written here rather than with Foundation's `ByteCountFormatter`, whose first use loads ICU's
/// number formatting: 8 ms of `pages`' first screen (2026-11-25, perf).
public enum ByteSize {
    /// `bytes` in B below a KiB, else in the largest binary unit under 1,024 with one decimal.
    public static func text(_ bytes: Int64) -> String {
        guard bytes >= 1024 else { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        // Rounded before the unit is chosen: 1,048,575 bytes is 1.0 MiB, not 1024.0 KiB.
        while (value * 10).rounded() >= 10_240, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}
