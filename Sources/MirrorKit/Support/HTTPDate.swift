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
        // asctime pads a one-digit day with a space; collapse runs of spaces for the formatter.
        let trimmed = text.trimmingCharacters(in: .whitespaces)
            .split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        guard !trimmed.isEmpty, trimmed.count <= 64 else { return nil }
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return date }
        }
        return nil
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
