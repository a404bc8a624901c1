/// Integer arithmetic that clamps to the type's range instead of trapping, for numbers read from
/// disk, the network or a user's settings (a `Duration` of "forever", a crafted file header).
enum Saturating {
    static func add<T: FixedWidthInteger & SignedInteger>(_ a: T, _ b: T) -> T {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }

    static func subtract<T: FixedWidthInteger & SignedInteger>(_ a: T, _ b: T) -> T {
        let (difference, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? .max : .min) : difference
    }

    static func multiply<T: FixedWidthInteger & SignedInteger>(_ a: T, _ b: T) -> T {
        let (product, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? ((a < 0) == (b < 0) ? .max : .min) : product
    }

    /// `duration` in whole milliseconds, clamped to `Int64`.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return add(multiply(parts.seconds, 1_000), parts.attoseconds / 1_000_000_000_000_000)
    }

    /// `duration` in whole nanoseconds, clamped to `Int64`.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return add(multiply(parts.seconds, 1_000_000_000), parts.attoseconds / 1_000_000_000)
    }

    /// `seconds` since 1970 in whole milliseconds, clamped to `Int64`; `nil` for NaN.
    static func milliseconds(sinceEpoch seconds: Double) -> Int64? {
        let value = (seconds * 1_000).rounded()
        guard !value.isNaN else { return nil }
        // Int64.max is not exactly representable as a Double; 2^63 is the first value that traps.
        if value >= 9_223_372_036_854_775_808.0 { return .max }
        if value < -9_223_372_036_854_775_808.0 { return .min }
        return Int64(value)
    }
}
