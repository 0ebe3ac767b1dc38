import Foundation

/// The fuzz targets' first inputs: the repository's fixtures and, when the checkout has it,
/// ../shared/real-data, read where it lies (it is never copied into the repository).
enum FuzzCorpus {
    /// The files of `folder` with one of `extensions`, fixtures first; provenance notes are not
    /// inputs.
    static func files(in folder: String, extensions: Set<String>) -> [[UInt8]] {
        var directories = [TestSupport.fixtures.appendingPathComponent(folder)]
        if let realData = TestSupport.realData { directories.append(realData.appendingPathComponent(folder)) }
        return directories.flatMap { directory in
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.sorted()
                .filter { extensions.contains(URL(fileURLWithPath: $0).pathExtension) }
                .compactMap { FileManager.default.contents(atPath: directory.appendingPathComponent($0).path) }
                .map { Array($0) }
        }
    }

    /// Fixture feeds name their server `{{base}}`: both the filled-in and the raw form are inputs.
    static let feeds: [[UInt8]] = files(in: "feeds", extensions: ["xml", "atom", "rss"]).flatMap { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("{{base}}") else { return [bytes] }
        return [Array(text.replacingOccurrences(of: "{{base}}", with: "http://fixture.invalid").utf8), bytes]
    }

    static let imgur: [[UInt8]] = files(in: "imgur", extensions: ["json"])

    /// Dates as the corpus feeds write them (RSS's RFC 822 dates, Atom's RFC 3339 ones: HTTP
    /// must refuse those), each of HTTP's three forms, and a Retry-After in seconds.
    static let dates: [[UInt8]] = {
        let written = feeds.flatMap { feed -> [String] in
            let text = String(decoding: feed, as: UTF8.self)
            let pattern = #"[A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d [A-Z+\-0-9]+|\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+\-]\d\d:\d\d)"#
            guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
            let range = NSRange(text.startIndex..., in: text)
            return expression.matches(in: text, range: range).compactMap { Range($0.range, in: text).map { String(text[$0]) } }
        }
        let examples = [
            "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
            "Thu, 29 Feb 2024 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "120",
        ]
        return Array(Set(written)).sorted().map { Array($0.utf8) } + examples.map { Array($0.utf8) }
    }()

    static let contentRanges: [[UInt8]] = [
        "bytes 100-199/1000", "bytes */4096", "bytes 0-9/*", "bytes 0-0/1", "bytes 42-42/43", "BYTES 0-9/10",
        " bytes 0-9/10 ", "bytes 0-9223372036854775806/9223372036854775807", "bytes 5-1/10", "bytes 0-10/10",
        "items 0-1/2", "bytes */*", "bytes 0-1", "bytes 1-2/3, bytes 4-5/6",
    ].map { Array($0.utf8) }

    // MARK: - Dictionaries

    static let jsonTokens = [[UInt8]](tokens: [
        "{", "}", "[", "]", ",", ":", "\"", "null", "true", "false", "{}", "[]", "\"\"", "\"\\u0000\"", "\"\\ud800\"",
        "\"\\\"", "\"id\":", "\"id\":\"\"", "\"id\":\"abcdefg\"", "\"is_album\":true", "\"is_album\":false",
        "\"images\":[", "\"images\":null", "\"images_count\":", "\"cover\":", "\"data\":", "\"items\":[",
        "\"total_items\":", "\"animated\":true", "\"type\":\"video/mp4\"", "\"type\":\"image/gif\"", "\"mp4_size\":",
        "\"size\":", "\"link\":\"https://i.imgur.com/x.gifv\"", "\"error\":", "\"error\":\"\"", "\"errors\":[{",
        "\"status\":", "\"detail\":", "\"message\":", "\"code\":\"429\"", "\"success\":false",
    ])

    static let xmlTokens = [[UInt8]](tokens: [
        "<", ">", "</", "/>", "=\"", "\"", "<?xml version=\"1.0\"?>", "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>",
        "<?xml version=\"1.0\" encoding=\"UTF-16\"?>", "<!DOCTYPE feed>", "<!ENTITY a \"b\">", "&amp;", "&lt;", "&#0;",
        "&#x10FFFF;", "&#xD800;", "&unknown;", "<![CDATA[", "]]>", "<!--", "-->", "<?pi x?>",
        "xmlns=\"http://www.w3.org/2005/Atom\"", "xmlns:docset=\"http://developer.apple.com/rss/docset_extensions\"",
        "xmlns:a=\"http://www.w3.org/2005/Atom\"", "<a:link rel=\"enclosure\" href=\"x\"/>", "xml:base=\"",
        "xml:base=\"ftp://h.example/\"", "xml:base=\"../\"", "<entry>", "</entry>", "<item>", "</item>",
        "<link rel=\"enclosure\" href=\"", "<enclosure url=\"", "length=\"", "<url>", "</url>", "<version>",
        "</version>", "<title>", "</title>", "<feed>", "<rss>", "<channel>", "href=\"//other.example/x\"",
        "href=\"file:///etc/passwd\"", "url=\"javascript:alert(1)\"", "href=\"../../../etc/passwd\"",
        "href=\"%2e%2e%2f%2e%2e%2f\"", "url=\"data:,x\"", "ftp://", "https://", "http://[::1]:99999/", "mailto:a@b",
        "https://h.example/a b", "https://h.example/%zz", "https://h.example/..%2F..%2Fetc%2Fpasswd",
    ])

    static let headerTokens = [[UInt8]](tokens: ["bytes ", "bytes */", "*", "/", "-", " ", "\t", "BYTES ", "bytes=", ","])

    static let dateTokens = [[UInt8]](tokens: [
        "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Sunday", "Wednesday", "Jan", "Feb", "Sep", "Dec", "GMT", "UTC",
        "+0000", "-0800", ", ", ":", "-", " ", "  ", "00:00:00", "23:59:59", "23:59:60", "24:00:00", "29 Feb", "31 Apr",
        "0000", "9999", "10000", "1582", "94", "69", "70",
    ])
}
