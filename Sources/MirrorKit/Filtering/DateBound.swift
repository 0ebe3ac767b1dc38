import FoundationEssentials

/// Dates as people write them for `--since` and `--until`: a day (`2026-01-31`, from midnight UTC),
/// a moment (`2026-01-31T12:00:00Z`, `2026-01-31T12:00:00+01:00`), or a span back from the start
/// of the run (`30d`, `12h`, `1d12h`).
enum DateBound {
    static let forms = "a day such as 2026-01-31 (UTC), a moment such as 2026-01-31T12:00:00Z, or a span back from now such as 30d or 12h"

    /// Nil for anything else. A bare number is refused: seconds, days or a year, it says none clearly.
    static func parse(_ text: String, now: Date) -> Date? {
        let trimmed = text.trimming(.spaces)
        guard !trimmed.isEmpty, trimmed.count <= 40 else { return nil }
        if let first = trimmed.first, first.isNumber, trimmed.contains("-") || trimmed.contains(":") {
            return moment(trimmed)
        }
        // Spans reach back further than waits and deadlines do: 400d is a fair --since.
        guard Int(trimmed) == nil, let span = DurationText.parse(trimmed, atMost: 100 * 366 * 86_400) else { return nil }
        return now.addingTimeInterval(-Double(span.components.seconds))
    }

    /// An RFC 3339 moment (fractional seconds allowed) or a day (`2026-01-31`, from midnight
    /// UTC): what `--since` takes and what Atom feeds write.
    static func moment(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count, bytes[range].allSatisfy({ (48...57).contains($0) }) else { return nil }
            return bytes[range].reduce(0) { $0 * 10 + Int($1 - 48) }
        }
        func byte(_ index: Int) -> UInt8? { index < bytes.count ? bytes[index] : nil }
        guard let year = number(0..<4), byte(4) == UInt8(ascii: "-"), let month = number(5..<7), byte(7) == UInt8(ascii: "-"),
              let day = number(8..<10), (1...12).contains(month), (1...CivilTime.days(inMonth: month, of: year)).contains(day)
        else { return nil }
        let midnight = HTTPDate.daysSinceEpoch(year: year, month: month, day: day) * 86_400
        if bytes.count == 10 { return Date(timeIntervalSince1970: TimeInterval(midnight)) }
        guard byte(10) == UInt8(ascii: "T") || byte(10) == UInt8(ascii: "t"),
              let hour = number(11..<13), byte(13) == UInt8(ascii: ":"), let minute = number(14..<16),
              byte(16) == UInt8(ascii: ":"), let second = number(17..<19), hour < 24, minute < 60, second < 60
        else { return nil }
        var index = 19
        var fraction = 0.0
        if byte(index) == UInt8(ascii: ".") {
            index += 1
            let start = index
            while let digit = byte(index), (48...57).contains(digit) { index += 1 }
            guard index > start, let value = Double("0." + String(decoding: bytes[start..<index], as: UTF8.self)) else { return nil }
            fraction = value
        }
        var offset = 0
        switch byte(index) {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            // ±hh:mm, as RFC 3339 writes it, or ±hhmm.
            let colon = byte(index + 3) == UInt8(ascii: ":") ? 1 : 0
            guard let hours = number(index + 1..<index + 3), let minutes = number(index + 3 + colon..<index + 5 + colon),
                  hours < 24, minutes < 60
            else { return nil }
            offset = (byte(index) == UInt8(ascii: "-") ? -1 : 1) * (hours * 3600 + minutes * 60)
            index += 5 + colon
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        let seconds = midnight + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: TimeInterval(seconds) + fraction)
    }
}
