import Foundation
import Testing
@testable import MirrorKit

@Suite("Reading Atom, RSS and Dash feeds with libxml2", .timeLimit(.minutes(1)))
struct FeedReaderTests {
    static let base = "http://fixture.invalid"

    private func fixture(_ name: String) throws -> Feed {
        let text = try String(contentsOf: TestSupport.fixtures.appendingPathComponent("feeds/\(name)"), encoding: .utf8)
            .replacingOccurrences(of: "{{base}}", with: Self.base)
        return try FeedReader.parse(Array(text.utf8), url: "\(Self.base)/feeds/\(name)")
    }

    private func real(_ name: String) throws -> Feed {
        let realData = try #require(TestSupport.realData)
        let bytes = try Array(Data(contentsOf: realData.appendingPathComponent("feeds/\(name)")))
        return try FeedReader.parse(bytes, url: "https://feeds.example/\(name)")
    }

    @Test func readsAtomEnclosuresResolvingXMLBase() throws {
        let feed = try fixture("docsets.atom")
        #expect(feed.kind == .atom)
        #expect(feed.title == "Fixture docsets")
        #expect(feed.enclosures == [
            FeedEnclosure(url: "\(Self.base)/files/Alpha-2.1.docset.xar", length: 6_291_456,
                          type: "application/octet-stream", entryTitle: "Alpha", version: "2.1",
                          updated: "2026-11-01T09:00:00+01:00", entryID: "org.example.alpha",
                          entryPage: "\(Self.base)/docs/alpha.html"),
            FeedEnclosure(url: "\(Self.base)/files/beta/Beta%201.0.xar", length: 3_145_728,
                          type: "application/octet-stream", entryTitle: "Beta (relative link, xml:base)", version: "1.0",
                          updated: "2026-10-20T12:00:00-08:00", entryID: "org.example.beta"),
        ])
    }

    @Test func readsRSSEnclosuresTakingLengthZeroAsUnknown() throws {
        let feed = try fixture("podcast.rss")
        #expect(feed.kind == .rss)
        #expect(feed.enclosures.map(\.url) == [
            "\(Self.base)/files/episode-2.mp3?source=feed&v=2", "\(Self.base)/files/episode-1.mp3",
        ])
        #expect(feed.enclosures.map(\.length) == [nil, 1_048_576])
        #expect(feed.enclosures.first?.entryTitle == "Episode 2")
        #expect(feed.enclosures.map(\.entryID) == ["fixture-episode-2", "fixture-episode-1"])
        #expect(feed.enclosures.map(\.entryPage) == ["\(Self.base)/episodes/2", nil])
    }

    @Test func readsADashFeedAsOneArchiveWithMirrors() throws {
        let feed = try fixture("Python.xml")
        #expect(feed.kind == .dash)
        #expect(feed.enclosures == [FeedEnclosure(
            url: "\(Self.base)/files/Python.tgz", mirrors: ["\(Self.base)/mirror-b/Python.tgz"], version: "3.14.6")])
    }

    /// A feed cut short keeps its whole entries, as feed readers keep them, and says where it broke.
    @Test func aFeedCutShortKeepsItsWholeEntriesWithAWarningNamingTheLine() throws {
        let feed = try fixture("broken.atom")
        #expect(feed.enclosures.map(\.url) == ["\(Self.base)/files/Alpha-2.1.docset.xar"])
        #expect(feed.warnings.count == 1)
        #expect(feed.warnings.first?.hasPrefix("not well-formed XML at line 6") == true, "\(feed.warnings)")
        #expect(feed.warnings.first?.hasSuffix("read 1 entry anyway") == true, "\(feed.warnings)")
    }

    @Test func aDocumentWithoutAWholeEntryIsAnErrorWithItsLine() {
        let error = #expect(throws: FeedError.self) {
            try FeedReader.parse(Array("<?xml version=\"1.0\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\"><entry><title>x</ti".utf8), url: "https://x/feed")
        }
        #expect(error?.problem.hasPrefix("not well-formed XML at line 2") == true, "\(String(describing: error))")
    }

    @Test func refusesAnExternalEntity() {
        let xml = #"<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY x SYSTEM "file:///etc/passwd">]><feed xmlns="http://www.w3.org/2005/Atom"><title>&x;</title></feed>"#
        let error = #expect(throws: FeedError.self) { try FeedReader.parse(Array(xml.utf8), url: "https://x/feed") }
        #expect(error?.problem == "uses the external entity &x;, which mirror never loads: entities can reach local files")
    }

    @Test func entitiesWithinTheBudgetExpand() throws {
        let xml = #"<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><rss><channel><title>&c;</title></channel></rss>"#
        #expect(try FeedReader.parse(Array(xml.utf8), url: "https://x/feed").title == String(repeating: "a", count: 1000))
    }

    @Test(arguments: ["<html><body>not a feed</body></html>", "{\"json\": true}", "\u{1F}\u{8B}binary"])
    func refusesWhatIsNoFeed(_ text: String) {
        #expect(throws: FeedError.self) { try FeedReader.parse(Array(text.utf8), url: "https://x/feed") }
    }

    @Test func escapesLinksWithSpacesAndNonASCIICharacters() throws {
        let xml = #"<rss><channel><item><enclosure url="https://h.example/My Episode é.mp3" length="5"/></item><item><enclosure url="%zz://"/></item></channel></rss>"#
        let feed = try FeedReader.parse(Array(xml.utf8), url: "https://h.example/feed")
        #expect(feed.enclosures.map(\.url) == ["https://h.example/My%20Episode%20%C3%A9.mp3"])
        #expect(feed.problems == ["skipped an enclosure whose link is not a URL: %zz://"])
        // Brackets are escaped but around an IPv6 host; an escape is kept, a bare `%` escaped.
        let odd = #"<rss><channel><item><enclosure url="http://[::1]:8080/x [1]%41 5%.mp3"/></item></channel></rss>"#
        #expect(try FeedReader.parse(Array(odd.utf8), url: "https://h.example/feed").enclosures.map(\.url)
            == ["http://[::1]:8080/x%20%5B1%5D%41%205%25.mp3"])
    }

    /// A password with `/`, `?` or `#` unescaped breaks its link (its authority ends there, at a
    /// port that is none): the problem line quoting the link shows no password.
    @Test func aLinkALoginBreaksIsReportedWithoutThePassword() throws {
        let links = [
            "https://alice:s3c/ret@host.example/f.mp3", "https://alice:s3c?ret@host.example/f.mp3",
            "https://alice:s3c#ret@host.example/f.mp3", "//alice:s3c/ret@host.example/f.mp3",
        ]
        let items = links.map { #"<item><title>E</title><enclosure url="\#($0)"/></item>"# }
        let xml = "<rss><channel>" + items.joined() + "</channel></rss>"
        let feed = try FeedReader.parse(Array(xml.utf8), url: "https://h.example/feed")
        #expect(feed.enclosures.isEmpty && feed.problems.count == links.count, "\(feed)")
        for problem in feed.problems {
            #expect(problem.hasPrefix("skipped an enclosure of “E” whose link is not a URL: ") && problem.hasSuffix("***@host.example/f.mp3"), "\(problem)")
            #expect(!problem.contains("s3c") && !problem.contains("ret@"), "\(problem)")
        }
    }

    /// Found by the fuzzer: an `xml:base` that is no URI left a relative link relative, and curl
    /// would have taken "Beta%201.0.xar" for a host name. Other schemes are no download either.
    @Test func skipsLinksThatDoNotResolveToAnHTTPURL() throws {
        let entries = [
            #"<entry><link rel="enclosure" href="ftp://h.example/a.bin"/></entry>"#,
            #"<entry><link rel="enclosure" href="file:///etc/passwd"/></entry>"#,
            #"<entry xml:base="{{base}}/files/beta/"><link rel="enclosure" href="Beta%201.0.xar"/></entry>"#,
            #"<entry><link rel="enclosure" href="HTTPS://h.example/ok.bin"/><link rel="enclosure" href="http:///no-host"/></entry>"#,
        ]
        let xml = #"<feed xmlns="http://www.w3.org/2005/Atom">"# + entries.joined() + "</feed>"
        let feed = try FeedReader.parse(Array(xml.utf8), url: "https://h.example/feed")
        #expect(feed.enclosures.map(\.url) == ["HTTPS://h.example/ok.bin"])
        let skipped = ["ftp://h.example/a.bin", "file:///etc/passwd", "Beta%201.0.xar", "http:///no-host"]
        #expect(feed.problems.count == skipped.count, "\(feed.problems)")
        for link in skipped { #expect(feed.problems.contains { $0.hasSuffix(link) }, "\(link)") }
    }

    @Test func anEntryQuotedInsideAnotherDoesNotReplaceIt() throws {
        let xml = #"<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>outer</title><link rel="enclosure" href="https://h/a.bin"/><content type="application/atom+xml"><entry><title>inner</title></entry></content><link rel="enclosure" href="https://h/b.bin"/></entry></feed>"#
        let feed = try FeedReader.parse(Array(xml.utf8), url: "https://h/feed")
        #expect(feed.enclosures.map(\.url) == ["https://h/a.bin", "https://h/b.bin"])
        #expect(feed.enclosures.allSatisfy { $0.entryTitle == "outer" })
    }

    @Test func namesEnclosureFilesSafely() {
        #expect(FeedSource.fileName(for: FeedEnclosure(url: "http://h/a/Beta%201.0.xar")) == "Beta 1.0.xar")
        #expect(FeedSource.fileName(for: FeedEnclosure(url: "http://h/a/..%2F..%2Fetc%2Fpasswd")) == "_.._etc_passwd")
        #expect(FeedSource.fileName(for: FeedEnclosure(url: "http://h/")).hasPrefix("enclosure-"))
        #expect(FeedSource.fileName(for: FeedEnclosure(url: "http://h/f.mp3?x=1")) == "f.mp3")
    }

    // MARK: - Real feeds

    @Test(.needsRealData) func readsRealAppleDocsetFeeds() throws {
        let fastpdf = try real("apple-docset-fastpdfkit.atom")
        #expect(fastpdf.enclosures == [FeedEnclosure(
            url: "http://doc.fastpdfkit.com/docset.xar", length: 134_254, type: "application/octet-stream",
            entryTitle: "FastPdfKit", version: "3.1.3", updated: "2012-01-04T13:07:28+01:00",
            // Apple's ids name the version; the docset's identifier names it across releases.
            entryID: "com.mobfarm.fastpdfkit")])
        let mapbox = try real("apple-docset-mapbox-ios-sdk.atom")
        #expect(mapbox.enclosures.count == 1)
        #expect(mapbox.enclosures.first?.length == 210_049)
    }

    @Test(.needsRealData) func readsRealDashFeeds() throws {
        let python = try real("dash-kapeli-Python.xml")
        #expect(python.enclosures.first?.url == "http://sanfrancisco.kapeli.com/feeds/Python.tgz")
        #expect(python.enclosures.first?.mirrors.count == 4)
        #expect(python.enclosures.first?.version == "3.14.6")
        #expect(try real("dash-kapeli-Apple_Guides_and_Sample_Code.xml").enclosures.first?.version == "/1.35")
        let android = try real("dash-kapeli-Android-2013.xml")
        #expect(android.enclosures.map(\.url) == ["http://kapeli.com/feeds/Android.tgz"])
        #expect(android.enclosures.first?.version == "4.2.2/3")
    }

    @Test(.needsRealData) func readsRealRSSAndAtomWithManyEnclosures() throws {
        let podcast = try real("rss-podcast-enclosures-length0.xml")
        #expect(podcast.enclosures.count == 21)
        #expect(podcast.enclosures.allSatisfy { $0.length == nil && $0.url.hasPrefix("http") })
        let nasa = try real("atom-nasa-mirador-opensearch-enclosures.xml")
        #expect(nasa.enclosures.count == 8)
    }

    @Test(.needsRealData) func refusesTheRealMalformedFeed() {
        let error = #expect(throws: FeedError.self) { try real("dash-ros_docsets-full-MALFORMED.xml") }
        #expect(error?.problem.hasPrefix("not well-formed XML at line") == true)
    }
}
