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
        if text.count == 10 {
            return try? Date.ISO8601FormatStyle().year().month().day().parse(text)
        }
        return (try? Date.ISO8601FormatStyle().parse(text))
            ?? (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
    }
}
