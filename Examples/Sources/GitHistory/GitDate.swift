/// Dates as git stores them: seconds since 1970 and the author's offset from UTC.
public enum GitDate {
    /// `raw` (`git log --date=raw`: `1600000000 +0200`) as `git log --date=short` shows it: the
    /// date in the author's own offset, `YYYY-MM-DD`. Any date is shown, where git itself refuses
    /// some (`0 -1200`, before 1970 in UTC; years past 9999 are written in full, as git does).
    /// What is not a raw date (a cut record, a hostile one: `99999999999999999999 +0000`) is shown
    /// as it is.
    public static func short(raw: some Collection<UInt8>) -> String {
        let text = String(decoding: raw, as: UTF8.self)
        guard let seconds = seconds(raw: text) else { return text }
        // Days since 1970-01-01, rounded down (a time before 1970 is in the day before).
        let days = seconds >= 0 ? seconds / 86_400 : (seconds + 1) / 86_400 - 1
        let (year, month, day) = civil(days: days)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = year >= 0 && year < 1000 ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        return "\(yearText)-\(two(month))-\(two(day))"
    }

    /// The seconds of `raw` in its own offset (UTC seconds plus the offset), or `nil` if `raw` is
    /// not `SECONDS ±HHMM` or the sum does not fit.
    static func seconds(raw: String) -> Int64? {
        let parts = raw.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2, let utc = Int64(parts[0]), let sign = parts[1].first, sign == "+" || sign == "-",
              parts[1].count == 5, parts[1].dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }),
              let zone = Int64(parts[1].dropFirst()) else { return nil }
        let offset = (zone / 100 * 60 + zone % 100) * 60 * (sign == "-" ? -1 : 1)
        let (local, overflow) = utc.addingReportingOverflow(offset)
        return overflow ? nil : local
    }

    /// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's `civil_from_days`),
    /// for any `Int64` day count divided from seconds (so at most ±1.1e14: no step overflows).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468  // from 0000-03-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097  // 0 ... 146096
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // 0 ... 399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0 ... 365, from March
        let monthFromMarch = (5 * dayOfYear + 2) / 153  // 0 ... 11
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
