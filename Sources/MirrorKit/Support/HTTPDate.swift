import Foundation

/// HTTP dates (RFC 9110 §5.6.7) as servers send them in Last-Modified.
enum HTTPDate {
    /// Parses the preferred IMF-fixdate form, `Sun, 06 Nov 1994 08:49:37 GMT`; nil for anything else.
    static func parse(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }
}
