import Foundation

extension FeedEnclosure {
    /// What the filters (`--filter`, `--since`, `--until`) weigh of the enclosure: its kind by its
    /// media type (else its file name), the size the feed states (RSS writes 0 for unknown), and
    /// the entry's date.
    var candidate: MediaFilter.Candidate {
        MediaFilter.Candidate(
            kind: Self.kind(type: type, url: url), bytes: length.flatMap { $0 > 0 ? $0 : nil },
            date: updated.flatMap(FeedDate.parse))
    }

    static func kind(type: String?, url: String) -> MediaFilter.Kind? {
        if let type = type?.lowercased().split(separator: ";").first?.trimmingCharacters(in: .whitespaces), !type.isEmpty {
            if type == "image/gif" || type.hasPrefix("video/") { return .animated }
            if type.hasPrefix("image/") { return .image }
            return nil
        }
        let name = URLComponents(string: url)?.path.split(separator: "/").last ?? ""
        let suffix = name.split(separator: ".").count > 1 ? name.split(separator: ".").last.map { $0.lowercased() } : nil
        switch suffix {
        case "gif", "mp4", "webm", "mov", "m4v", "gifv": return .animated
        case "jpg", "jpeg", "png", "webp", "avif", "heic", "bmp", "tif", "tiff": return .image
        default: return nil
        }
    }
}

/// The dates feeds write: Atom's RFC 3339 (`2026-08-14T12:31:23Z`) and RSS's RFC 822
/// (`Fri, 14 Aug 2026 12:31:23 +0000`, a zone name, or no weekday).
enum FeedDate {
    static func parse(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.count <= 64 else { return nil }
        if trimmed.first?.isNumber == true, trimmed.contains("T") || trimmed.count == 10, let date = DateBound.moment(trimmed) {
            return date
        }
        if let date = HTTPDate.parseFixdate(trimmed) { return date }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in ["EEE, d MMM yyyy HH:mm:ss Z", "EEE, d MMM yyyy HH:mm:ss zzz", "d MMM yyyy HH:mm:ss Z", "EEE, d MMM yyyy HH:mm Z"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return date }
        }
        return nil
    }
}
