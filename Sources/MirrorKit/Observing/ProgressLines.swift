import FoundationEssentials

/// Turns a run's progress into the one or two lines a terminal shows while it runs:
///
/// ```
/// cats: 1204 of 3000+ files | 412.5 MB | 3.1 MB/s | page 12 of about 183 | API 1180 left
///   forced: abc123.mp4 45% | def456.gif 12%
/// ```
///
/// The count reads "of N+" while the listing may still find more, and an ETA joins it once every
/// file is known. Rates are taken over the last few seconds, so a stall shows as one. The lines
/// are ASCII only (a name's other characters show as `?`), so their width on any terminal is
/// their length, and each is cut to the terminal's width: it never wraps. Pure: the terminal work
/// is the caller's.
package struct ProgressLines: Sendable {
    private struct Sample {
        var time: Double
        var bytes: Int64
        var files: Int
    }

    private let label: String
    static let separator = " | "
    private var samples: [Sample] = []
    /// Seconds of samples a rate is taken over.
    private let byteWindow: Double = 5
    private let fileWindow: Double = 30

    package init(label: String) {
        self.label = Self.ascii(label)
    }

    /// The lines for `snapshot` at `time` (seconds, any fixed origin), each at most `columns - 1`
    /// cells wide.
    package mutating func lines(for snapshot: RunProgress, at time: Double, columns: Int) -> [String] {
        let received = snapshot.bytesReceived
        samples.append(Sample(time: time, bytes: received, files: snapshot.filesDone))
        samples.removeAll { time - $0.time > fileWindow }
        var parts: [String] = []
        let more = snapshot.allFilesKnown ? "" : "+"
        switch snapshot.phase {
        case .starting: parts.append("starting")
        case .readingFeed: parts.append("reading the feed")
        default: parts.append("\(snapshot.filesDone) of \(snapshot.filesKnown)\(more) files")
        }
        parts.append(MirrorSummary.formatBytes(received))
        if let rate = rate(\.bytes, over: byteWindow, now: time) {
            parts.append(MirrorSummary.formatBytes(Int64(rate)) + "/s")
        }
        if snapshot.allFilesKnown, let eta = eta(snapshot, now: time) { parts.append("ETA \(eta)") }
        if snapshot.filesFailed > 0 { parts.append("\(snapshot.filesFailed) failed") }
        if let crawl = snapshot.crawl, snapshot.phase == .crawling {
            let of = crawl.estimatedPages.map { " of about \($0)" } ?? ""
            parts.append("page \(crawl.page)\(of)")
            if let left = crawl.apiCallsLeft { parts.append("API \(left) left") }
        } else if snapshot.phase == .revalidating {
            parts.append("asking after earlier files")
        }
        var lines = ["\(label): " + parts.joined(separator: Self.separator)]
        let forced = snapshot.forcedInFlight
        if !forced.isEmpty {
            let items = forced.prefix(4).map { item in
                let name = Self.shortName(item.url)
                let paused = item.state == .paused ? " paused" : ""
                return name + (item.percent.map { " \(Int($0))%" } ?? " " + MirrorSummary.formatBytes(item.completedBytes)) + paused
            }
            let others = forced.count > 4 ? Self.separator + "+\(forced.count - 4)" : ""
            lines.append("  forced: " + items.joined(separator: Self.separator) + others)
        }
        return lines.map { TerminalText.clip($0, toColumns: columns - 1) }
    }

    /// Change per second of a figure over the last `window` seconds; nil until there is a span.
    private func rate(_ figure: KeyPath<Sample, Int64>, over window: Double, now: Double) -> Double? {
        guard let first = samples.first(where: { now - $0.time <= window }), let last = samples.last,
              last.time - first.time >= 0.5
        else { return nil }
        return Double(max(last[keyPath: figure] - first[keyPath: figure], 0)) / (last.time - first.time)
    }

    /// The time left, known only once every file is known: when every file left is in flight with
    /// its size known (the last large files), its bytes left at the recent byte rate; else the
    /// files left at the recent rate of files settled.
    private func eta(_ snapshot: RunProgress, now: Double) -> String? {
        let left = snapshot.filesKnown - snapshot.filesDone
        guard left > 0 else { return nil }
        let inFlight = snapshot.scheduler?.items.filter { $0.state != .completed && $0.state != .failed } ?? []
        if inFlight.count == left, inFlight.allSatisfy({ $0.totalBytes != nil }),
           let rate = rate(\.bytes, over: byteWindow, now: now), rate > 0 {
            let bytesLeft = inFlight.reduce(Int64(0)) { $0 + max(($1.totalBytes ?? 0) - $1.completedBytes, 0) }
            return Self.format(seconds: Int((Double(bytesLeft) / rate).rounded(.up)))
        }
        guard let first = samples.first, let last = samples.last, last.time - first.time >= 2 else { return nil }
        let perSecond = Double(last.files - first.files) / (last.time - first.time)
        guard perSecond > 0 else { return nil }
        return Self.format(seconds: Int((Double(left) / perSecond).rounded(.up)))
    }

    /// `45s`, `3m10s`, `2h05m`.
    static func format(seconds: Int) -> String {
        switch seconds {
        case ..<60: "\(seconds)s"
        case ..<3600: "\(seconds / 60)m\(CFormat.string("%02d", seconds % 60))s"
        default: "\(seconds / 3600)h\(CFormat.string("%02d", seconds / 60 % 60))m"
        }
    }

    /// The last part of a URL's path: the file's name, as the URL writes it (percent-encoded,
    /// so ASCII).
    static func shortName(_ url: String) -> String {
        let path = URLComponents(string: url)?.percentEncodedPath ?? url
        return ascii(path.split(separator: "/").last.map(String.init) ?? url)
    }

    /// `text` with every character that is not printable ASCII shown as `?`.
    static func ascii(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { (0x20...0x7E).contains($0.value) ? $0 : "?" }))
    }
}

/// Text cut to fit a terminal.
package enum TerminalText {
    /// Cells a scalar takes: 0 for combining marks, 2 for wide East Asian and emoji ranges, 1 else.
    static func cells(_ scalar: Unicode.Scalar) -> Int {
        switch scalar.value {
        case 0x0300...0x036F, 0x200B...0x200D, 0xFE00...0xFE0F: 0
        case 0x1100...0x115F, 0x2E80...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD: 2
        default: 1
        }
    }

    /// The cells `text` takes on a terminal.
    package static func width(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + cells($1) }
    }

    /// `text` cut to at most `columns` cells, ending in `~` where it was cut (ASCII: one cell on
    /// every terminal).
    package static func clip(_ text: String, toColumns columns: Int) -> String {
        guard width(text) > columns else { return text }
        guard columns > 1 else { return String(text.prefix(max(columns, 0))) }
        var result = ""
        var used = 0
        for scalar in text.unicodeScalars {
            let size = cells(scalar)
            if used + size > columns - 1 { break }
            result.unicodeScalars.append(scalar)
            used += size
        }
        return result + "~"
    }
}
