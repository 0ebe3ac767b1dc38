import Foundation

/// HTTP dates (RFC 9110 §5.6.7) as servers send them in Last-Modified and Retry-After.
enum HTTPDate {
    /// The preferred IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two obsolete forms a
    /// recipient must still accept: RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
    /// (`Sun Nov  6 08:49:37 1994`).
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss 'GMT'",
        "EEEE, dd-MMM-yy HH:mm:ss 'GMT'",
        "EEE MMM d HH:mm:ss yyyy",
    ]

    /// Parses an HTTP date in any of its three forms; nil for anything else.
    static func parse(_ text: String) -> Date? {
        if let date = parseFixdate(text) { return date }
        // asctime pads a one-digit day with a space; collapse runs of spaces for the formatter.
        let trimmed = text.trimmingCharacters(in: .whitespaces)
            .split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        // An HTTP date is printable ASCII, and corelibs Foundation's DateFormatter traps on some
        // other text (a combining mark after a digit): what a server sends never reaches it.
        guard !trimmed.isEmpty, trimmed.count <= 64, trimmed.utf8.allSatisfy({ (0x20...0x7E).contains($0) })
        else { return nil }
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return date }
        }
        return nil
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The IMF-fixdate that nearly every server sends, read by hand: a `DateFormatter` costs more
    /// than the rest of a small file's bookkeeping.
    static func parseFixdate(_ text: String) -> Date? {
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: " ")
        func digits(_ part: Substring) -> Bool { part.utf8.allSatisfy { (48...57).contains($0) } }
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
              digits(parts[1]), digits(parts[3]),
              let day = Int(parts[1]), parts[1].count == 2, (1...31).contains(day),
              let month = months.firstIndex(of: String(parts[2])),
              let year = Int(parts[3]), parts[3].count == 4
        else { return nil }
        let clock = parts[4].split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 && digits($0) }),
              let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
              hour < 24, minute < 60, second < 60
        else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= monthDays[month] else { return nil }
        let seconds = daysSinceEpoch(year: year, month: month + 1, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// `date` as an IMF-fixdate.
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = formats[0]
        return formatter.string(from: date)
    }
}
