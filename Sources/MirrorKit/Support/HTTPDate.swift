import FoundationEssentials

/// HTTP dates (RFC 9110 §5.6.7) as servers send them in Last-Modified and Retry-After, read and
/// written by hand: a date formatter needs ICU, and costs more than the rest of a small file's
/// bookkeeping.
enum HTTPDate {
    /// Parses an HTTP date in any of its three forms: the IMF-fixdate nearly every server sends
    /// (`Sun, 06 Nov 1994 08:49:37 GMT`), and the two obsolete forms a recipient must still
    /// accept, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
    /// A two-digit year more than 50 years after `currentYear` (by default this year) is of the
    /// century before. Nil for anything else.
    static func parse(_ text: String, currentYear: Int? = nil) -> Date? {
        if let date = parseFixdate(text) { return date }
        let parts = text.trimming(.spaces).split(separator: " ")
        if parts.count == 4, parts[0].hasSuffix(","), longWeekdays.contains(String(parts[0].dropLast())), parts[3] == "GMT" {
            // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false)
            guard date.count == 3, date[0].count == 2, date[2].count == 2,
                  let day = number(date[0]), let month = months.firstIndex(of: String(date[1])), let shortYear = number(date[2])
            else { return nil }
            let thisYear = currentYear ?? CivilTime(Date()).year
            return moment(year: year(twoDigits: shortYear, currentYear: thisYear), month: month + 1, day: day, clock: parts[2])
        }
        if parts.count == 5, weekdays.contains(String(parts[0])) {
            // asctime: "Sun Nov  6 08:49:37 1994"
            guard let month = months.firstIndex(of: String(parts[1])), (1...2).contains(parts[2].count),
                  let day = number(parts[2]), parts[4].count == 4, let year = number(parts[4])
            else { return nil }
            return moment(year: year, month: month + 1, day: day, clock: parts[3])
        }
        return nil
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longWeekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    /// The IMF-fixdate, the form nearly every server sends.
    static func parseFixdate(_ text: String) -> Date? {
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        var text = text
        if let laidOut = text.withUTF8(parseExactFixdate) { return laidOut }
        return parseFixdateFields(text)
    }

    /// The fixdate read as fields split at spaces: the reading for any layout.
    static func parseFixdateFields(_ text: String) -> Date? {
        let parts = text.trimming(.spaces).split(separator: " ")
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
              parts[1].count == 2, let day = number(parts[1]),
              let month = months.firstIndex(of: String(parts[2])),
              parts[3].count == 4, let year = number(parts[3])
        else { return nil }
        return moment(year: year, month: month + 1, day: day, clock: parts[4])
    }

    /// The fixdate read from its bytes when it is laid out exactly as servers send it, which is
    /// what every file's Last-Modified costs; nil (not `.some(nil)`) when the text is laid out
    /// otherwise, and the general reading decides. Where it answers, it reads the same six fields
    /// the general reading splits out and checks them the same way.
    static func parseExactFixdate(_ bytes: UnsafeBufferPointer<UInt8>) -> Date?? {
        guard bytes.count == 29 else { return nil }
        func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) }
        func digits(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let digit = Int(bytes[index]) - 48
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard isLetter(bytes[0]), isLetter(bytes[1]), isLetter(bytes[2]), bytes[3] == UInt8(ascii: ","),
              bytes[4] == UInt8(ascii: " "), bytes[7] == UInt8(ascii: " "), bytes[11] == UInt8(ascii: " "),
              bytes[16] == UInt8(ascii: " "), bytes[25] == UInt8(ascii: " "),
              bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"),
              bytes[26] == UInt8(ascii: "G"), bytes[27] == UInt8(ascii: "M"), bytes[28] == UInt8(ascii: "T"),
              let day = digits(5..<7), let year = digits(12..<16),
              let hour = digits(17..<19), let minute = digits(20..<22), let second = digits(23..<25)
        else { return nil }
        let month = monthBytes.firstIndex { $0 == (bytes[8], bytes[9], bytes[10]) }
        guard let month else { return .some(nil) }
        return .some(moment(year: year, month: month + 1, day: day, hour: hour, minute: minute, second: second))
    }

    private static let monthBytes: [(UInt8, UInt8, UInt8)] = months.map { name in
        let bytes = Array(name.utf8)
        return (bytes[0], bytes[1], bytes[2])
    }

    /// A two-digit year as RFC 9110 reads it: the most recent such year not more than 50 years
    /// after `currentYear`.
    static func year(twoDigits: Int, currentYear: Int) -> Int {
        let year = currentYear - currentYear % 100 + twoDigits
        return year > currentYear + 50 ? year - 100 : year
    }

    /// Decimal digits alone (no sign, no space) as a number.
    static func number(_ part: Substring) -> Int? {
        guard !part.isEmpty, part.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(part)
    }

    /// The moment of a day and an `HH:MM:SS` clock, in UTC; nil for a day or time that does not exist.
    private static func moment(year: Int, month: Int, day: Int, clock: Substring) -> Date? {
        let fields = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 3, fields.allSatisfy({ $0.count == 2 }),
              let hour = number(fields[0]), let minute = number(fields[1]), let second = number(fields[2])
        else { return nil }
        return moment(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    private static func moment(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date? {
        guard hour < 24, minute < 60, second < 60, (1...31).contains(day), day <= CivilTime.days(inMonth: month, of: year)
        else { return nil }
        let seconds = daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
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

    /// `date` as an IMF-fixdate (whole seconds, rounded down).
    ///
    /// Written byte by byte: every small file's commit record formats its date once (see
    /// ``CommitRecord``), and two `vsnprintf`s with the strings between them cost a few percent
    /// of such a run.
    static func format(_ date: Date) -> String {
        let time = CivilTime(date)
        guard (0...9999).contains(time.year) else {
            // Years an IMF-fixdate has no four digits for, as printf writes them.
            return weekdays[time.weekday] + ", " + CFormat.string("%02d ", time.day) + months[time.month - 1]
                + CFormat.string(" %04d %02d:%02d:%02d GMT", time.year, time.hour, time.minute, time.second)
        }
        return String(unsafeUninitializedCapacity: 29) { text in
            var end = 0
            func put(_ name: String) {
                for byte in name.utf8 {
                    text[end] = byte
                    end += 1
                }
            }
            func put(_ number: Int, digits: Int) {
                var number = number
                for place in stride(from: end + digits - 1, through: end, by: -1) {
                    text[place] = UInt8(ascii: "0") + UInt8(number % 10)
                    number /= 10
                }
                end += digits
            }
            put(weekdays[time.weekday])
            put(", ")
            put(time.day, digits: 2)
            put(" ")
            put(months[time.month - 1])
            put(" ")
            put(time.year, digits: 4)
            put(" ")
            put(time.hour, digits: 2)
            put(":")
            put(time.minute, digits: 2)
            put(":")
            put(time.second, digits: 2)
            put(" GMT")
            return end
        }
    }
}

/// A moment's fields in UTC, proleptic Gregorian (H. Hinnant's `civil_from_days`).
struct CivilTime: Equatable {
    var year: Int
    var month: Int
    var day: Int
    /// 0 for Sunday.
    var weekday: Int
    var hour: Int
    var minute: Int
    var second: Int

    init(_ date: Date) {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : -((-seconds + 86_399) / 86_400)
        let inDay = seconds - days * 86_400
        (hour, minute, second) = (inDay / 3600, inDay / 60 % 60, inDay % 60)
        weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// The number of days of `month` (1–12) in `year`.
    static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
