import FoundationEssentials

/// A parsed `Content-Range` header: `bytes FIRST-LAST/TOTAL` or, on a 416, `bytes */TOTAL`.
struct ContentRange: Sendable, Equatable {
    /// The first and last byte of the part sent; nil for the unsatisfied form.
    var range: ClosedRange<Int64>?
    /// The size of the whole resource; nil when the server sent `*`.
    var total: Int64?

    init(range: ClosedRange<Int64>?, total: Int64?) {
        self.range = range
        self.total = total
    }

    /// Parses the header value; nil when it is not a well-formed byte range.
    init?(header: String) {
        let trimmed = header.trimming(.spaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst("bytes ".count).trimming(.spaces)
        let halves = spec.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        if halves[1] == "*" {
            total = nil
        } else {
            guard let value = Int64(halves[1]), value >= 0 else { return nil }
            total = value
        }
        if halves[0] == "*" {
            guard total != nil else { return nil }
            range = nil
            return
        }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
              first >= 0, first <= last
        else { return nil }
        if let total, last >= total { return nil }
        range = first...last
    }
}
