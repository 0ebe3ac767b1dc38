import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// Damage feed readers read past, read past here too with a warning (exit 0 when every file found
/// was mirrored): HTML's named entities, a bare `&`, a document cut short or with a tag left open.
@Suite("Damaged feeds read as feed readers read them", .timeLimit(.minutes(2)))
struct DamagedFeedTests {
    private static func item(_ number: Int, title: String = "Episode", url: String? = nil) -> String {
        """
        <item><title>\(title) \(number)</title><guid>episode-\(number)</guid>
          <enclosure url="\(url ?? "BASE/files/episode-\(number).mp3")" length="1000" type="audio/mpeg"/></item>
        """
    }

    @Test func htmlEntitiesAndABareAmpersandAreReadAsHTMLReadsThem() async throws {
        // WordPress-era damage: HTML's entities in text, an unescaped & in a URL.
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0"><channel><title>Caf&eacute; &amp; Co&nbsp;Radio</title>
            \(Self.item(1, title: "L&rsquo;&eacute;t&eacute; &", url: "BASE/files/get?id=1&amp;format=mp3&kind=audio"))
            </channel></rss>
            """
        try await MirrorProcess.mirrorFeed(feed, files: [("/files/get", 1000)], arguments: ["--log-format", "json"]) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("\"level\":\"warning\"") && run.stderr.contains("references XML does not know"), "\(run.stderr)")
            #expect(server.requests.contains { $0.path == "/files/get" })
            let sidecar = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/get.json") ?? [], as: UTF8.self)
            #expect(sidecar.contains("\"title\" : \"L\u{2019}été & 1\""), "\(sidecar)")
            #expect(sidecar.contains("Café & Co\u{A0}Radio"), "\(sidecar)")
            #expect(sidecar.contains("get?id=1&format=mp3&kind=audio"), "\(sidecar)")
        }
    }

    /// Bytes in another encoding than the feed says, and UTF-32, as old CMSs and odd exporters
    /// serve them: read, with one warning for the wrong declaration.
    @Test func aWrongDeclaredEncodingAndUTF32AreRead() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/files/episode-1.mp3", size: 1000)
            // WordPress on a Latin-1 database: Windows-1252 bytes under a UTF-8 declaration.
            let cp1252 = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"><channel><title>Caf".utf8) + [0xE9, 0x92, UInt8(ascii: "s")]
                + Array("</title>\(Self.item(1).replacingOccurrences(of: "BASE", with: server.baseURL))</channel></rss>".utf8)
            server.setFeed(path: "/feeds/cp1252.xml", bytes: cp1252)
            let utf32 = "<?xml version=\"1.0\" encoding=\"UTF-32\"?><rss version=\"2.0\"><channel><title>Caf\u{E9} \u{1F408}</title>\(Self.item(1).replacingOccurrences(of: "BASE", with: server.baseURL))</channel></rss>"
            server.setFeed(path: "/feeds/utf32.xml", bytes: utf32.unicodeScalars.flatMap { scalar in
                (0..<4).map { UInt8((scalar.value >> (8 * UInt32($0))) & 0xFF) }
            })
            for (feed, warning) in [("cp1252", "declares the encoding UTF-8 but is not UTF-8: read as Windows-1252"), ("utf32", nil)] {
                try await TestSupport.withTemporaryDirectory { dir in
                    let out = dir.appendingPathComponent("out").path
                    let run = try await MirrorProcess.run(["feed", "\(server.baseURL)/feeds/\(feed).xml", "--out", out, "--metadata"])
                    #expect(run.status == 0, "\(feed): \(run.stderr)")
                    #expect(warning.map { run.stderr.contains($0) } ?? run.stderr.isEmpty, "\(feed): \(run.stderr)")
                    let sidecar = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/episode-1.mp3.json") ?? [], as: UTF8.self)
                    #expect(sidecar.contains(feed == "utf32" ? "Café \u{1F408}" : "Café\u{2019}s"), "\(feed): \(sidecar)")
                    #expect(TestSupport.digest(ofFile: out + "/enclosures/episode-1.mp3") == TestSupport.digest(server.content(of: "/files/episode-1.mp3")))
                }
            }
        }
    }

    /// One byte that is not UTF-8 in a UTF-8 feed (a quote pasted from Word), or a feed cut inside
    /// a character, leaves the rest of it UTF-8: not the whole read as Windows-1252.
    @Test func aStrayByteOrACutCharacterLeavesTheRestUTF8() throws {
        let head = #"<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>Café</title>"#
        let first = #"<item><title>Café</title><description>It"#
        let rest = #"s</description><guid>1</guid><enclosure url="https://s.example/épisode-1.mp3"/></item>"#
        let second = #"<item><title>Zürich</title><guid>2</guid><enclosure url="https://s.example/e2.mp3"/></item>"#
        let stray = Array((head + first).utf8) + [0x92] + Array((rest + second + "</channel></rss>").utf8)
        let feed = try FeedReader.parse(stray, url: "https://s.example/feed")
        #expect(feed.title == "Café" && feed.enclosures.first?.entryTitle == "Café")
        #expect(feed.enclosures.map(\.url) == ["https://s.example/%C3%A9pisode-1.mp3", "https://s.example/e2.mp3"])
        #expect(feed.warnings == ["declares the encoding UTF-8 but 1 byte of it is not UTF-8: read as Windows-1252's character"], "\(feed.warnings)")
        // Cut inside the ü of the second item's title: the first item is read, as UTF-8.
        let whole = Array((head + first + "’" + rest + second).utf8)
        let cut = Array(whole[..<(whole.firstRange(of: Array("ü".utf8))!.lowerBound + 1)])
        let cutFeed = try FeedReader.parse(cut, url: "https://s.example/feed")
        #expect(cutFeed.title == "Café" && cutFeed.enclosures.map(\.entryTitle) == ["Café"])
        #expect(cutFeed.enclosures.map(\.url) == ["https://s.example/%C3%A9pisode-1.mp3"])
        #expect(!cutFeed.warnings.contains { $0.contains("Windows-1252") }, "\(cutFeed.warnings)")
    }

    @Test func aFeedCutShortKeepsTheEntriesReadBeforeTheCut() async throws {
        let whole = """
            <?xml version="1.0"?><rss version="2.0"><channel><title>Cut</title>
            \(Self.item(1))\(Self.item(2))\(Self.item(3))
            </channel></rss>
            """
        let cut = String(whole[..<whole.range(of: "<guid>episode-3")!.lowerBound])
        try await MirrorProcess.mirrorFeed(cut, files: (1...3).map { ("/files/episode-\($0).mp3", 1000) }) { run, out, _ in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("entries anyway"), "\(run.stderr)")
            #expect(run.stderr.contains("not well-formed XML at line"), "\(run.stderr)")
            #expect(Set((try? FileManager.default.contentsOfDirectory(atPath: out + "/enclosures")) ?? []) == ["episode-1.mp3", "episode-2.mp3"])
        }
    }

    @Test func aTagLeftOpenKeepsWhatCameBefore() async throws {
        let feed = """
            <?xml version="1.0"?><rss version="2.0"><channel><title>Open</title>
            \(Self.item(1))
            <item><title>Episode 2<guid>episode-2</guid><enclosure url="BASE/files/episode-2.mp3" length="1000"/></item>
            \(Self.item(3))
            </channel></rss>
            """
        try await MirrorProcess.mirrorFeed(feed, files: (1...3).map { ("/files/episode-\($0).mp3", 1000) }) { run, out, _ in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("entries anyway"), "\(run.stderr)")
            #expect(FileManager.default.fileExists(atPath: out + "/enclosures/episode-1.mp3"))
            // libxml2's recovery nests the items after the open tag inside it: each is its own
            // entry all the same, not filed under the damaged one.
            let third = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/episode-3.mp3.json") ?? [], as: UTF8.self)
            #expect(third.contains("\"title\" : \"Episode 3\"") && third.contains("\"id\" : \"episode-3\""), "\(third)")
        }
    }

    /// libxml2's recovery, once started, drops every named reference after it, `&amp;` too:
    /// a stray `<br>` in one item must not cost a later title its `&` nor a guid its query.
    @Test func xmlsOwnReferencesAfterTheDamageAreKept() throws {
        let feed = try FeedReader.parse(Array("""
            <?xml version="1.0"?><rss version="2.0"><channel><title>Open</title>
            <item><title>One</title><description>a<br>b</description><guid>one</guid>
              <enclosure url="https://s.example/one.mp3" length="1000"/></item>
            <item><title>Tom &amp; Jerry &lt;3 &quot;&apos;&gt;</title><guid>https://s.example/?p=2&amp;lang=en</guid>
              <enclosure url="https://s.example/two.mp3?a=1&amp;b=2" length="1000"/></item>
            </channel></rss>
            """.utf8), url: "https://s.example/feed")
        #expect(feed.warnings.contains { $0.hasSuffix("read 2 entries anyway") }, "\(feed.warnings)")
        let second = try #require(feed.enclosures.last)
        #expect(second.entryTitle == "Tom & Jerry <3 \"'>")
        #expect(second.entryID == "https://s.example/?p=2&lang=en")
        #expect(second.url == "https://s.example/two.mp3?a=1&b=2")
        // An entity the DOCTYPE declares, expanded before parsing, keeps its markup characters too.
        let declared = try FeedReader.parse(Array("""
            <?xml version="1.0"?><!DOCTYPE rss [<!ENTITY show "R&amp;B <live> 'x'">]><rss version="2.0"><channel>
            <item><title>One</title><description>a<br>b</description><enclosure url="https://s.example/one.mp3"/></item>
            <item><title>&show;</title><enclosure url="https://s.example/two.mp3"/></item>
            </channel></rss>
            """.utf8), url: "https://s.example/feed")
        #expect(declared.enclosures.map(\.entryTitle) == ["One", "R&B <live> 'x'"], "\(declared.warnings)")
    }

    /// libxml2 stops at a NUL byte even in recovery: one in the first item must not cost the rest,
    /// read past as other characters XML forbids are.
    @Test func aNULByteInAnEarlyItemLosesNoLaterEntry() throws {
        let items = (1...3).map { number in
            "<item><title>E\(number)</title><description>a\(number == 1 ? "\0" : "")b</description>"
                + #"<guid>e\#(number)</guid><enclosure url="https://s.example/e\#(number).mp3" length="1000"/></item>"#
        }
        let xml = #"<?xml version="1.0"?><rss version="2.0"><channel><title>NUL</title>"# + items.joined() + "</channel></rss>"
        let feed = try FeedReader.parse(Array(xml.utf8), url: "https://s.example/feed")
        #expect(feed.enclosures.map(\.url) == (1...3).map { "https://s.example/e\($0).mp3" }, "\(feed.warnings)")
        #expect(feed.warnings.contains { $0.hasSuffix("read 3 entries anyway") }, "\(feed.warnings)")
    }

    @Test func aDocumentWithNothingReadableIsStillAnError() async throws {
        try await MirrorProcess.mirrorFeed("<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>x</ti", files: []) { run, _, _ in
            #expect(run.status == 65, "\(run.stderr)")
            #expect(run.stderr.contains("not well-formed XML at line 1"), "\(run.stderr)")
        }
    }
}
