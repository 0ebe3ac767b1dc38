import FoundationEssentials

/// The dates feeds write: Atom's RFC 3339 (`2026-08-14T12:31:23Z`) and RSS's RFC 822
/// (`Fri, 14 Aug 2026 12:31:23 +0000`, a zone name, no weekday, no seconds, a two-digit year).
enum FeedDate {
    static func parse(_ text: String, currentYear: Int = CivilTime(Date()).year) -> Date? {
        let trimmed = text.trimming(.spacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.count <= 64 else { return nil }
        if trimmed.first?.isNumber == true, trimmed.contains("T") || trimmed.count == 10, let date = DateBound.moment(trimmed) {
            return date
        }
        if let date = HTTPDate.parseFixdate(trimmed) { return date }
        return rfc822(trimmed, currentYear: currentYear)
    }

    /// `[Fri, ]14 Aug 2026 12:31[:23] zone`: the zone as `+hhmm` (or `+hh:mm`) or a name.
    private static func rfc822(_ text: String, currentYear: Int) -> Date? {
        var parts = text.split(separator: " ")
        if let first = parts.first, first.hasSuffix(",") {
            guard weekday(first.dropLast()) else { return nil }
            parts.removeFirst()
        }
        guard parts.count == 5, (1...2).contains(parts[0].count), let day = HTTPDate.number(parts[0]),
              let month = month(parts[1]), parts[2].count == 4 || parts[2].count == 2, let written = HTTPDate.number(parts[2]),
              let offset = zoneOffset(parts[4])
        else { return nil }
        let year = parts[2].count == 2 ? HTTPDate.year(twoDigits: written, currentYear: currentYear) : written
        let clock = parts[3].split(separator: ":", omittingEmptySubsequences: false)
        // The hour may have one digit (`9:05`), as date formatters have always read it.
        guard (2...3).contains(clock.count), (1...2).contains(clock[0].count), clock.dropFirst().allSatisfy({ $0.count == 2 }),
              let hour = HTTPDate.number(clock[0]), let minute = HTTPDate.number(clock[1]), hour < 24, minute < 60,
              (1...31).contains(day), day <= CivilTime.days(inMonth: month, of: year)
        else { return nil }
        var second = 0
        if clock.count == 3 {
            guard let value = HTTPDate.number(clock[2]), value < 60 else { return nil }
            second = value
        }
        let local = HTTPDate.daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(local - offset))
    }

    private static let monthNames = [
        "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december",
    ]
    private static let weekdayNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    /// 1–12, from the month's English name or its first three letters, in any case.
    private static func month(_ text: Substring) -> Int? {
        let name = text.lowercased()
        guard name.count >= 3, let index = monthNames.firstIndex(where: { $0 == name || $0.prefix(3) == name }) else { return nil }
        return index + 1
    }

    private static func weekday(_ text: Substring) -> Bool {
        let name = text.lowercased()
        return name.count >= 3 && weekdayNames.contains { $0 == name || $0.prefix(3) == name }
    }

    /// Seconds east of UTC: `+hhmm`, `+hh:mm` (alone or after `GMT` or `UTC`), or a name of
    /// RFC 822's (UT, GMT, EST…) or one feeds in Europe, Asia and Oceania write.
    private static func zoneOffset(_ zone: Substring) -> Int? {
        var text = zone
        for prefix in ["GMT", "UTC"] where text.uppercased().hasPrefix(prefix) && text.count > prefix.count {
            text = text.dropFirst(prefix.count)
        }
        if let sign = text.first, sign == "+" || sign == "-" {
            let digits = text.dropFirst().filter { $0 != ":" }
            guard digits.count == 4, text.count == 5 || (text.count == 6 && text.dropFirst(3).first == ":"),
                  let hours = HTTPDate.number(Substring(digits.prefix(2))), let minutes = HTTPDate.number(Substring(digits.suffix(2))),
                  hours < 24, minutes < 60
            else { return nil }
            return (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60)
        }
        return zoneHours[text.uppercased()].map { Int($0 * 3600) }
    }

    private static let zoneHours: [String: Double] = [
        "UT": 0, "UTC": 0, "GMT": 0, "Z": 0,
        "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
        "AKST": -9, "AKDT": -8, "HST": -10,
        "WET": 0, "WEST": 1, "BST": 1, "CET": 1, "CEST": 2, "MET": 1, "MEST": 2, "EET": 2, "EEST": 3, "MSK": 3,
        "JST": 9, "KST": 9, "AWST": 8, "ACST": 9.5, "ACDT": 10.5, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
    ]
}
