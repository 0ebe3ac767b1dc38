import FoundationEssentials

extension FeedEnclosure {
    /// What the filters (`--filter`, `--since`, `--until`) weigh of the enclosure: its kind by its
    /// media type (else its file name), the size the feed states (RSS writes 0 for unknown), and
    /// the entry's date.
    var candidate: MediaFilter.Candidate {
        MediaFilter.Candidate(
            kind: Self.kind(type: type, url: url), bytes: length.flatMap { $0 > 0 ? $0 : nil },
            date: updated.flatMap { FeedDate.parse($0) })
    }

    static func kind(type: String?, url: String) -> MediaFilter.Kind? {
        if let type = type?.lowercased().split(separator: ";").first?.trimming(.spaces), !type.isEmpty {
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
