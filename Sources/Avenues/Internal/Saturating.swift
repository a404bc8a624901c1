/// Integer arithmetic that clamps to the type's range instead of trapping, for numbers read from
/// disk, the network or a user's settings (a `Duration` of "forever", a crafted file header).
@usableFromInline
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

    /// `duration` in whole milliseconds, clamped to `Int64`. (`Duration.components` traps beyond
    /// `Int64.max` seconds, which `.seconds(1e19)` is.)
    static func milliseconds(_ duration: Duration) -> Int64 {
        clamp(duration.attoseconds / 1_000_000_000_000_000)
    }

    /// `duration` in whole nanoseconds, clamped to `Int64`.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        clamp(duration.attoseconds / 1_000_000_000)
    }

    /// `duration` in seconds, as a `Double` (never traps; huge durations are huge doubles).
    static func seconds(_ duration: Duration) -> Double {
        duration / .seconds(1)
    }

    /// `seconds` as a `Duration`, clamped to ±``longestDuration`` (`Duration.seconds(_:)` traps
    /// on huge doubles, and a NaN is zero).
    static func duration(seconds: Double) -> Duration {
        guard !seconds.isNaN else { return .zero }
        let limit = longestDuration / .seconds(1)
        return .seconds(min(max(seconds, -limit), limit))
    }

    /// The longest duration computed with: about 31,700 years, so that instants, sums and doubles
    /// made from it never overflow.
    static let longestDuration = Duration.seconds(Int64(1) << 40)

    /// `duration` clamped to 0 ... ``longestDuration``.
    static func clamped(_ duration: Duration) -> Duration {
        min(max(duration, .zero), longestDuration)
    }

    /// The longest single sleep: the clocks turn a sleep into nanoseconds in an `Int64`, which traps
    /// beyond 292 years. Longer waits sleep this long, check, and sleep again.
    static let longestSleep = Duration.seconds(30 * 86_400)

    /// Sleeps on `clock` until `deadline`, however far it is, in sleeps the clock can take.
    @usableFromInline
    static func sleep<C: Clock<Duration>>(until deadline: C.Instant, on clock: C) async throws {
        while true {
            let now = clock.now
            guard deadline > now else { return }
            try await clock.sleep(until: min(deadline, now.advanced(by: longestSleep)), tolerance: nil)
        }
    }

    /// Sleeps on `clock` for `duration`, however long it is.
    static func sleep(for duration: Duration, on clock: ContinuousClock) async throws {
        try await sleep(until: clock.now.advanced(by: clamped(duration)), on: clock)
    }

    private static func clamp(_ value: Int128) -> Int64 {
        value > Int128(Int64.max) ? .max : value < Int128(Int64.min) ? .min : Int64(value)
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
