import Foundation
@testable import MirrorKit

/// `ContentRange(header:)` under mutated and generated header values, against RFC 9110.
enum ContentRangeFuzzing {
    static let target = FuzzTarget(
        name: "content-range", smokeInputs: 10_000, corpus: FuzzCorpus.contentRanges,
        mutator: FuzzMutator(dictionary: FuzzCorpus.headerTokens, maxLength: 4096),
        generate: generate, check: check)

    /// What holds for any value: RFC 9110's valid ones are read as RFC 9110 reads them; what is
    /// accepted is a range that can be resumed from (first ≤ last < total); and its canonical
    /// form reads back the same.
    @Sendable static func check(_ input: [UInt8]) -> String? {
        let parsed = ContentRange(header: String(decoding: input, as: UTF8.self))
        if let strict = strictlyParsed(input), parsed != strict {
            return "read \(String(describing: parsed)) where RFC 9110 reads \(strict)"
        }
        guard let parsed else { return nil }
        if let total = parsed.total, total < 0 { return "a negative total in \(parsed)" }
        if let range = parsed.range {
            if range.lowerBound < 0 { return "a negative first byte in \(parsed)" }
            if let total = parsed.total, range.upperBound >= total { return "a range past the total in \(parsed)" }
        } else if parsed.total == nil {
            return "neither a range nor a total"
        }
        let canonical = format(parsed)
        let again = ContentRange(header: canonical)
        return again == parsed ? nil : "\(canonical) reads as \(String(describing: again))"
    }

    static func format(_ value: ContentRange) -> String {
        let total = value.total.map(String.init) ?? "*"
        guard let range = value.range else { return "bytes */\(total)" }
        return "bytes \(range.lowerBound)-\(range.upperBound)/\(total)"
    }

    /// RFC 9110 §14.4, written out independently: `bytes SP first "-" last "/" (length / "*")`
    /// or `bytes SP "*/" length`, the unit case-insensitive, first ≤ last < length. Nil when the
    /// value is not valid or a number does not fit an Int64: then there is nothing to compare.
    static func strictlyParsed(_ input: [UInt8]) -> ContentRange? {
        var bytes = input[...]
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        guard bytes.count > 6, String(decoding: bytes.prefix(6), as: UTF8.self).lowercased() == "bytes " else { return nil }
        let parts = bytes.dropFirst(6).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        func number(_ digits: ArraySlice<UInt8>) -> Int64? {
            guard !digits.isEmpty, digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
            return Int64(String(decoding: digits, as: UTF8.self))
        }
        guard parts.count == 2 else { return nil }
        if parts[0].elementsEqual("*".utf8) {
            return number(parts[1]).map { ContentRange(range: nil, total: $0) }
        }
        let bounds = parts[0].split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = number(bounds[0]), let last = number(bounds[1]), first <= last else { return nil }
        if parts[1].elementsEqual("*".utf8) { return ContentRange(range: first...last, total: nil) }
        guard let total = number(parts[1]), last < total else { return nil }
        return ContentRange(range: first...last, total: total)
    }

    /// A valid value from numbers anywhere in Int64, the edges most of all.
    @Sendable static func generate(_ random: inout FuzzRandom) -> FuzzCase {
        func number(upTo limit: Int64) -> Int64 {
            switch random.below(4) {
            case 0: 0
            case 1: limit
            case 2: Int64.random(in: 0...min(limit, 1 << 20), using: &random)
            default: Int64.random(in: 0...limit, using: &random)
            }
        }
        let unit = ["bytes", "Bytes", "BYTES"][random.below(3)]
        let expected: ContentRange
        switch random.below(3) {
        case 0:
            expected = ContentRange(range: nil, total: number(upTo: .max))
        case 1:
            let last = number(upTo: .max)
            expected = ContentRange(range: number(upTo: last)...last, total: nil)
        default:
            let total = max(number(upTo: .max), 1)
            let last = number(upTo: total - 1)
            expected = ContentRange(range: number(upTo: last)...last, total: total)
        }
        let text = unit + format(expected).dropFirst(5)
        return FuzzCase(input: Array(text.utf8)) {
            let parsed = ContentRange(header: text)
            return parsed == expected ? nil : "read \(text) as \(String(describing: parsed))"
        }
    }
}

/// `HTTPDate` (Last-Modified, Retry-After) under mutated and generated dates.
enum HTTPDateFuzzing {
    static let target = FuzzTarget(
        name: "http-date", smokeInputs: 3000, corpus: FuzzCorpus.dates,
        mutator: FuzzMutator(dictionary: FuzzCorpus.dateTokens, maxLength: 4096),
        generate: generate, check: check)

    /// What holds for any text: a date is whole seconds; its IMF-fixdate reads back as the
    /// same date; and a fixdate the hand-written reader takes has the fields it was written with.
    @Sendable static func check(_ input: [UInt8]) -> String? {
        let text = String(decoding: input, as: UTF8.self)
        guard let date = HTTPDate.parse(text) else { return nil }
        let seconds = date.timeIntervalSince1970
        guard seconds == seconds.rounded(.down), let whole = Int64(exactly: seconds) else {
            return "\(text.debugDescription) read as \(seconds), not whole seconds"
        }
        guard let canonical = imfFixdate(whole) else { return nil }
        if HTTPDate.parse(canonical) != date { return "\(canonical), from \(text.debugDescription), does not read back" }
        if HTTPDate.parseFixdate(text) != nil {
            // The weekday is not checked (RFC 9110 lets a recipient ignore it); the rest must match.
            let fields = { (text: String) in text.split(separator: " ").dropFirst().joined(separator: " ") }
            if fields(text) != fields(canonical) { return "\(text.debugDescription) read as \(canonical)" }
        }
        return nil
    }

    /// A date anywhere in the years an HTTP date can write, in one of its three forms, and in
    /// the form `HTTPDate.format` writes.
    @Sendable static func generate(_ random: inout FuzzRandom) -> FuzzCase {
        func seconds(years: ClosedRange<Int>) -> Int64 {
            let first = Int64(HTTPDate.daysSinceEpoch(year: years.lowerBound, month: 1, day: 1)) * 86_400
            let end = Int64(HTTPDate.daysSinceEpoch(year: years.upperBound + 1, month: 1, day: 1)) * 86_400
            return Int64.random(in: first..<end, using: &random)
        }
        let when: Int64
        let text: String
        // DateFormatter, behind HTTPDate.format and the obsolete forms, counts Julian days before
        // 1582 and reads a two-digit year within 80 years back and 20 ahead: those forms get
        // dates where both readings agree.
        switch random.below(4) {
        case 0:
            when = seconds(years: 1...9999)
            text = imfFixdate(when)!
        case 1:
            when = seconds(years: 1600...9999)
            text = HTTPDate.format(Date(timeIntervalSince1970: TimeInterval(when)))
        case 2:
            when = seconds(years: 1980...2040)
            text = rfc850(when)
        default:
            when = seconds(years: 1600...9999)
            text = asctime(when)
        }
        return FuzzCase(input: Array(text.utf8)) {
            let parsed = HTTPDate.parse(text)
            let expected = Date(timeIntervalSince1970: TimeInterval(when))
            return parsed == expected ? nil : "read \(text) as \(String(describing: parsed)), not \(expected)"
        }
    }

    // MARK: - Writing dates, independently of the code under test

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longWeekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private struct Fields {
        var year: Int64, month: Int, day: Int, weekday: Int, hour: Int, minute: Int, second: Int
    }

    /// Proleptic Gregorian fields of a time (H. Hinnant's `civil_from_days`).
    private static func fields(_ seconds: Int64) -> Fields {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = Int(seconds - days * 86_400)
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
        let month = Int(shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9)
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = Int(((days % 7) + 11) % 7)  // 1970-01-01 was a Thursday
        return Fields(year: year, month: month, day: day, weekday: weekday, hour: time / 3600, minute: time / 60 % 60, second: time % 60)
    }

    private static func clock(_ f: Fields) -> String {
        String(format: "%02d:%02d:%02d", f.hour, f.minute, f.second)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`; nil for a year that four digits cannot write.
    static func imfFixdate(_ seconds: Int64) -> String? {
        let f = fields(seconds)
        guard (1...9999).contains(f.year) else { return nil }
        return "\(weekdays[f.weekday]), \(String(format: "%02d", f.day)) \(months[f.month - 1]) "
            + "\(String(format: "%04d", Int(f.year))) \(clock(f)) GMT"
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    static func rfc850(_ seconds: Int64) -> String {
        let f = fields(seconds)
        return "\(longWeekdays[f.weekday]), \(String(format: "%02d", f.day))-\(months[f.month - 1])-"
            + "\(String(format: "%02d", Int(f.year % 100))) \(clock(f)) GMT"
    }

    /// `Sun Nov  6 08:49:37 1994`
    static func asctime(_ seconds: Int64) -> String {
        let f = fields(seconds)
        return "\(weekdays[f.weekday]) \(months[f.month - 1]) \(String(format: "%2d", f.day)) \(clock(f)) \(f.year)"
    }
}
