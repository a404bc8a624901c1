import Foundation

/// An HTTP date (RFC 9110 §5.6.7), read by a parser of our own: a `Retry-After` comes from the
/// server, and swift-corelibs-foundation's `DateFormatter` traps on some text (`m` followed by a
/// combining mark: "Incorrect range CFRange"), so a server could crash the process with one 503.
///
/// The three forms a recipient must accept, case-sensitive as the RFC has them:
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`, its
/// year the latest with those two digits not more than 50 years after `now`) and asctime
/// (`Sun Nov  6 08:49:37 1994`). The day name is not checked against the date. Anything else —
/// another zone, a day past its month's end, a byte that is not printable ASCII — is `nil`.
enum HTTPDate {
    static func parse(_ text: some StringProtocol, now: Date = Date()) -> Date? {
        var scanner = Scanner(text.utf8)
        guard scanner.count <= 64, scanner.isPrintableASCII else { return nil }
        if scanner.take(shortDays) != nil, scanner.take(", ") {
            // IMF-fixdate
            guard let day = scanner.digits(2), scanner.take(" "), let month = scanner.take(months), scanner.take(" "),
                  let year = scanner.digits(4), scanner.take(" "), let time = scanner.time(), scanner.take(" GMT"), scanner.isAtEnd
            else { return nil }
            return date(year: year, month: month + 1, day: day, time: time)
        }
        scanner.rewind()
        if scanner.take(longDays) != nil, scanner.take(", ") {
            // RFC 850
            guard let day = scanner.digits(2), scanner.take("-"), let month = scanner.take(months), scanner.take("-"),
                  let shortYear = scanner.digits(2), scanner.take(" "), let time = scanner.time(), scanner.take(" GMT"), scanner.isAtEnd,
                  let thisYear = year(of: now)
            else { return nil }
            var year = thisYear - thisYear % 100 + shortYear
            if year > thisYear + 50 { year -= 100 }
            return date(year: year, month: month + 1, day: day, time: time)
        }
        scanner.rewind()
        // asctime: the day of the month is two digits or a space and one.
        guard scanner.take(shortDays) != nil, scanner.take(" "), let month = scanner.take(months), scanner.take(" ") else { return nil }
        let day = scanner.take(" ") ? scanner.digits(1) : scanner.digits(2)
        guard let day, scanner.take(" "), let time = scanner.time(), scanner.take(" "), let year = scanner.digits(4), scanner.isAtEnd else { return nil }
        return date(year: year, month: month + 1, day: day, time: time)
    }

    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The instant, if the date exists (a second of 60 is a leap second: the next minute's first).
    private static func date(year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)) -> Date? {
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day) else { return nil }
        let seconds = daysSinceEpoch(year: year, month: month, day: day) * 86_400 + time.hour * 3_600 + time.minute * 60 + time.second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (years 0–9999 here, so no
    /// arithmetic can overflow): eras of 400 years, each 146,097 days, counted from March.
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shifted = month <= 2 ? year - 1 : year
        let era = (shifted >= 0 ? shifted : shifted - 399) / 400
        let yearOfEra = shifted - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The Gregorian year of `date`, or `nil` for an instant too far out to be a year of 4 digits.
    static func year(of date: Date) -> Int? {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 400_000_000_000 else { return nil }
        let days = Int((seconds / 86_400).rounded(.down)) + 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0 is March
        return yearOfEra + era * 400 + (shiftedMonth >= 10 ? 1 : 0)
    }

    /// Reads the text's bytes from the front.
    private struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ text: some Collection<UInt8>) {
            bytes = Array(text.prefix(65))
        }

        var count: Int { bytes.count }
        var isAtEnd: Bool { position == bytes.count }
        var isPrintableASCII: Bool { bytes.allSatisfy { (0x20...0x7E).contains($0) } }

        mutating func rewind() {
            position = 0
        }

        mutating func take(_ literal: String) -> Bool {
            let literal = literal.utf8
            guard bytes[position...].starts(with: literal) else { return false }
            position += literal.count
            return true
        }

        /// The index of the first of `names` that comes next, taken.
        mutating func take(_ names: [String]) -> Int? {
            names.firstIndex { take($0) }
        }

        /// A number of exactly `count` digits.
        mutating func digits(_ count: Int) -> Int? {
            guard bytes.count - position >= count else { return nil }
            var value = 0
            for byte in bytes[position ..< position + count] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            position += count
            return value
        }

        /// `HH:MM:SS`, each in range (a second may be 60).
        mutating func time() -> (hour: Int, minute: Int, second: Int)? {
            guard let hour = digits(2), hour < 24, take(":"), let minute = digits(2), minute < 60, take(":"),
                  let second = digits(2), second <= 60
            else { return nil }
            return (hour, minute, second)
        }
    }
}
