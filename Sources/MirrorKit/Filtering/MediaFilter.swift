import FoundationEssentials

/// Which of the files a source finds a run takes: `--filter` (the kind of file, its size) and
/// `--since`/`--until` (the post's or entry's date). Every condition must hold; what a source does
/// not know of a file (a size the API does not state, a feed entry without a date) passes.
///
/// A file left out is not mirrored and not marked done: a later run with a wider filter takes it.
package struct MediaFilter: Sendable, Equatable {
    /// What kind of media a file is.
    package enum Kind: String, Sendable, CaseIterable {
        /// A still image.
        case image
        /// A GIF or a video.
        case animated
    }

    /// What a source knows of a file it found.
    struct Candidate: Sendable {
        /// Nil when the file is neither (a feed's archive): a `type=` filter leaves it out.
        var kind: Kind?
        var bytes: Int64?
        var date: Date?
    }

    /// The kind every file must be; nil for any.
    var kind: Kind?
    /// The fewest bytes a file may have.
    var minBytes: Int64?
    /// The most bytes a file may have.
    var maxBytes: Int64?
    /// Posted at or after this.
    package var since: Date?
    /// Posted before this.
    package var until: Date?

    package init() {}

    /// True when every file passes.
    package var isEmpty: Bool { self == MediaFilter() }

    /// What one `--filter` expression takes.
    static let forms = "type=image, type=animated, or size with <, <=, > or >= and a size such as 10M or 500k"

    /// Adds the condition `expression` states: `type=image`, `type=animated`, `size<10M`,
    /// `size>=500k`. Throws a sentence naming what is wrong, for the caller to say where it came from.
    package mutating func add(_ expression: String) throws(FilterError) {
        let text = expression.filter { !$0.isWhitespace }
        if let value = text.stripping(prefix: "type=") {
            guard let kind = Kind(rawValue: value.lowercased()) else {
                throw FilterError("'\(expression)': the type is image or animated, got '\(value)'")
            }
            if let earlier = self.kind, earlier != kind {
                throw FilterError("'\(expression)' and type=\(earlier.rawValue) together leave out every file")
            }
            self.kind = kind
            return
        }
        guard let rest = text.stripping(prefix: "size") else {
            throw FilterError("'\(expression)' is not a filter; give \(Self.forms)")
        }
        let operators = ["<=", ">=", "<", ">"]
        guard let op = operators.first(where: { rest.hasPrefix($0) }) else {
            throw FilterError("'\(expression)': compare the size with <, <=, > or >=, as in size<10M")
        }
        let number = String(rest.dropFirst(op.count))
        guard let bytes = ByteCount.parse(number), bytes >= 0 else {
            throw FilterError("'\(expression)': '\(number)' is not a size such as 10M, 500k or 2048")
        }
        switch op {
        case "<": maxBytes = min(maxBytes ?? .max, bytes - 1)
        case "<=": maxBytes = min(maxBytes ?? .max, bytes)
        case ">": minBytes = max(minBytes ?? 0, bytes + 1)
        default: minBytes = max(minBytes ?? 0, bytes)
        }
        if let minBytes, let maxBytes, minBytes > maxBytes {
            throw FilterError("'\(expression)' with the other size filters leaves out every file")
        }
    }

    /// Whether a file the source describes so is taken.
    func admits(_ candidate: Candidate) -> Bool {
        if let kind, candidate.kind != kind { return false }
        if let bytes = candidate.bytes {
            if let minBytes, bytes < minBytes { return false }
            if let maxBytes, bytes > maxBytes { return false }
        }
        if let date = candidate.date {
            if let since, date < since { return false }
            if let until, date >= until { return false }
        }
        return true
    }

    /// Sets the bounds `--since` and `--until` state (see ``DateBound``), counted back from `now`
    /// where they are spans.
    package mutating func bound(since: String?, until: String?, now: Date) throws(FilterError) {
        for (name, text) in [("since", since), ("until", until)] {
            guard let text else { continue }
            guard let date = DateBound.parse(text, now: now) else {
                throw FilterError("'\(text)' is not a date: give \(DateBound.forms)")
            }
            if name == "since" { self.since = date } else { self.until = date }
        }
        if let since = self.since, let until = self.until, since >= until {
            throw FilterError("since \(since.formatted(.iso8601)) is not before until \(until.formatted(.iso8601)): no date is in between")
        }
    }
}

/// A filter or date that cannot be used, said as a sentence.
package struct FilterError: Error, Sendable, CustomStringConvertible {
    package var description: String

    init(_ description: String) {
        self.description = description
    }
}

extension String {
    fileprivate func stripping(prefix: String) -> String? {
        lowercased().hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }
}
