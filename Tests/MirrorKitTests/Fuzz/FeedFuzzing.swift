import Foundation
@testable import MirrorKit

/// The feed reader (libxml2's xmlReader and the walker over it) under mutated and generated feeds.
enum FeedFuzzing {
    static let feedURL = "https://fuzz.example/feeds/feed.xml"

    static let target = FuzzTarget(
        name: "feed", smokeInputs: 2500, corpus: FuzzCorpus.feeds,
        mutator: FuzzMutator(
            dictionary: FuzzCorpus.xmlTokens,
            nesting: [("<a>", "</a>"), ("<entry>", "</entry>"), ("<a xmlns=\"http://www.w3.org/2005/Atom\">", "</a>")]
                .map { (Array($0.utf8), Array($1.utf8)) },
            maxLength: 256 << 10),
        generate: generate, check: check)

    /// What holds for any input: a feed or a `FeedError` that says what is wrong; enclosures
    /// that are http(s) URLs with a host, in printable ASCII, with a positive length or none,
    /// whose file names stay in `enclosures/` and within NAME_MAX; the same answer for the same
    /// bytes.
    @Sendable static func check(_ input: [UInt8]) -> String? {
        let feed: Feed
        do {
            feed = try FeedReader.parse(input, url: feedURL)
        } catch {
            if error.url != feedURL { return "the error names \(error.url)" }
            if error.problem.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return "an error without a problem" }
            if error.isFetchFailure { return "a parse error counted as a fetch failure" }
            return nil
        }
        for enclosure in feed.enclosures {
            for url in [enclosure.url] + enclosure.mirrors {
                if let problem = problem(with: url) { return problem }
            }
            if let length = enclosure.length, length <= 0 { return "an enclosure of length \(length)" }
            let name = FeedSource.fileName(for: enclosure)
            if name.isEmpty || name.utf8.count > 255 || name.hasPrefix(".")
                || name.contains(where: { $0 == "/" || $0 == "\0" || $0.isNewline }) {
                return "the unsafe file name \(name.debugDescription) for \(enclosure.url)"
            }
        }
        if feed.problems.contains(where: \.isEmpty) { return "an empty problem" }
        // Sampled, as it doubles the cost: state left behind by one parse would show here.
        if input.count % 8 == 0, (try? FeedReader.parse(input, url: feedURL)) != feed { return "a second parse differs" }
        return nil
    }

    static func problem(with url: String) -> String? {
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            return "the enclosure URL \(url.debugDescription) is not http(s)"
        }
        if URLAuthority.of(url).isEmpty { return "the enclosure URL \(url.debugDescription) has no host" }
        if url.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            return "the enclosure URL \(url.debugDescription) has a space, a control or a non-ASCII byte"
        }
        return nil
    }

    // MARK: - Generated feeds

    private struct Entry {
        var title: String
        var url: String
        var mirrors: [String]
        var length: String?
    }

    /// An Atom, RSS or Dash feed made of random entries, with what the reader must find in it:
    /// every link, in order, with its title, its length when positive, in Atom its web page (the
    /// alternate link, resolved), and in Dash its mirrors.
    @Sendable static func generate(_ random: inout FuzzRandom) -> FuzzCase {
        let kind = [Feed.Kind.atom, .rss, .dash][random.below(3)]
        let count = kind == .dash ? 1 : random.below(5)
        let entries = (0..<count).map { _ in
            Entry(
                title: title(&random), url: url(&random),
                mirrors: kind == .dash ? (0..<random.below(3)).map { _ in url(&random) } : [],
                length: [nil, "0", "1", "-5", "1048576", " 42 ", "9223372036854775807", "9223372036854775808", "x"][random.below(9)])
        }
        let xml = document(kind, entries)
        let expected = entries.map { entry in
            let length = entry.length.flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
            return FeedEnclosure(
                url: entry.url, mirrors: entry.mirrors,
                length: kind == .dash ? nil : length.flatMap { $0 > 0 ? $0 : nil },
                type: kind == .dash ? nil : "application/octet-stream",
                entryTitle: kind == .dash ? nil : trimmed(entry.title), version: kind == .dash ? trimmed(entry.title) : nil,
                entryPage: kind == .atom ? "https://fuzz.example/page" : nil)
        }
        let input = Array(xml.utf8)
        return FuzzCase(input: input) {
            do {
                let feed = try FeedReader.parse(input, url: feedURL)
                if feed.kind != kind { return "read a \(kind) feed as \(feed.kind)" }
                return feed.enclosures == expected ? nil : "expected \(expected), read \(feed.enclosures)"
            } catch {
                return "refused a well-formed \(kind) feed: \(error)"
            }
        }
    }

    private static func document(_ kind: Feed.Kind, _ entries: [Entry]) -> String {
        func attribute(_ name: String, _ value: String?) -> String {
            value.map { " \(name)=\"\(escaped($0))\"" } ?? ""
        }
        switch kind {
        case .atom:
            return #"<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>"#
                + entries.map { entry in
                    "<entry>\n  <title>\(escaped(entry.title))</title><link rel=\"alternate\" href=\"/page\"/>"
                        + "<link rel=\"enclosure\"\(attribute("href", entry.url))\(attribute("length", entry.length))"
                        + " type=\"application/octet-stream\"/></entry>"
                }.joined() + "</feed>"
        case .rss:
            return #"<rss version="2.0"><channel><title>t</title>"#
                + entries.map { entry in
                    "<item><title>\(escaped(entry.title))</title><enclosure\(attribute("url", entry.url))"
                        + "\(attribute("length", entry.length)) type=\"application/octet-stream\"/></item>"
                }.joined() + "</channel></rss>"
        case .dash:
            let entry = entries[0]
            return "<entry><version>\(escaped(entry.title))</version>"
                + ([entry.url] + entry.mirrors).map { "<url>\(escaped($0))</url>" }.joined() + "</entry>"
        }
    }

    /// An absolute http(s) URL as a server would write it: no dot segments (resolution removes
    /// them), unreserved characters, escapes, a query.
    private static func url(_ random: inout FuzzRandom) -> String {
        let hosts = ["h.example", "cdn.example.org", "127.0.0.1", "xn--bcher-kva.example", "h.example:8443"]
        let pieces = ["a", "Beta", "file-1.0", "x_y", "~user", "%20", "%C3%A9", "docset.xar", "2026", "A%2FB"]
        var url = (random.oneIn(2) ? "https://" : "http://") + hosts[random.below(hosts.count)]
        for _ in 0..<random.below(4) + 1 {
            url += "/" + (0..<random.below(3) + 1).map { _ in pieces[random.below(pieces.count)] }.joined()
        }
        if random.oneIn(3) { url += "?v=\(random.below(100))&source=feed" }
        return url
    }

    private static func title(_ random: inout FuzzRandom) -> String {
        let pieces = ["Alpha", " ", "β", "a & b", "<tag>", "\"q\"", "\u{1F600}", "e\u{301}", "\n", "3.14", "x"]
        return (0..<random.below(5)).map { _ in pieces[random.below(pieces.count)] }.joined()
    }

    private static func trimmed(_ text: String) -> String? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
