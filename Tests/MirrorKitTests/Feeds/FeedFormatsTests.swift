import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// Feeds as their generators write them, through the real executable: Media RSS (Mastodon,
/// PeerTube), RSS 1.0 and 0.90 (RDF, mod_enclosure), RSS 0.92 and 2.0 in Userland's namespace, and
/// Atom 0.3 (Blogger).
@Suite("Feed formats: Media RSS, RSS 0.9x and 1.0, Atom 0.3", .timeLimit(.minutes(2)))
struct FeedFormatsTests {
    private func same(_ out: String, _ relativePath: String, _ server: FixtureServer, _ path: String) -> Bool {
        TestSupport.digest(ofFile: out + "/" + relativePath) == TestSupport.digest(server.content(of: path))
    }

    @Test func mastodonsMediaContentsAreTheFilesAndTheirThumbnailsThePreviews() async throws {
        // Mastodon 4.3's account feed: a content per attachment, its thumbnail and alt text inside.
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:webfeeds="http://webfeeds.org/rss/1.0" xmlns:media="http://search.yahoo.com/mrss/">
              <channel><title>someone</title><link>BASE/@someone</link>
                <item><guid isPermaLink="true">BASE/@someone/1</guid><link>BASE/@someone/1</link>
                  <pubDate>Sat, 17 Feb 2024 23:51:02 +0000</pubDate><description>&lt;p&gt;two cats&lt;/p&gt;</description>
                  <media:content url="BASE/system/media_attachments/files/original/a1.jpeg" type="image/jpeg" fileSize="40000" medium="image">
                    <media:rating scheme="urn:simple">nonadult</media:rating>
                    <media:description type="plain">A cat on a chair</media:description>
                    <media:thumbnail url="BASE/system/media_attachments/files/small/a1.jpeg"/>
                  </media:content>
                  <media:content url="BASE/system/media_attachments/files/original/a2.mp4" type="video/mp4" fileSize="90000" medium="video">
                    <media:rating scheme="urn:simple">nonadult</media:rating>
                    <media:thumbnail url="BASE/system/media_attachments/files/small/a2.png"/>
                  </media:content>
                </item>
              </channel>
            </rss>
            """
        try await MirrorProcess.mirrorFeed(feed, files: [
            ("/system/media_attachments/files/original/a1.jpeg", 40000), ("/system/media_attachments/files/small/a1.jpeg", 3000),
            ("/system/media_attachments/files/original/a2.mp4", 90000), ("/system/media_attachments/files/small/a2.png", 2000),
        ]) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(same(out, "enclosures/a1.jpeg", server, "/system/media_attachments/files/original/a1.jpeg"))
            #expect(same(out, "enclosures/a2.mp4", server, "/system/media_attachments/files/original/a2.mp4"))
            #expect(same(out, "previews/a1.jpeg", server, "/system/media_attachments/files/small/a1.jpeg"))
            #expect(same(out, "previews/a2.png", server, "/system/media_attachments/files/small/a2.png"))
            let sidecar = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/a1.jpeg.json") ?? [], as: UTF8.self)
            #expect(sidecar.contains("\"medium\" : \"image\""), "\(sidecar)")
            #expect(sidecar.contains("\"description\" : \"A cat on a chair\""), "\(sidecar)")
            #expect(sidecar.contains("\"rating\" : \"nonadult\""), "\(sidecar)")
        }
    }

    /// PeerTube's video feed: the renditions of one video in a group, an enclosure naming one of
    /// them again, and the thumbnail, alt text and rating on the item.
    private static let peerTube = """
        <?xml version="1.0" encoding="utf-8"?>
        <rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/" xmlns:content="http://purl.org/rss/1.0/modules/content/">
          <channel><title>PeerTube videos</title>
            <item><title>A talk</title><guid>BASE/w/abc</guid><link>BASE/w/abc</link>
              <pubDate>Mon, 12 Feb 2024 03:44:00 GMT</pubDate>
              <enclosure url="BASE/static/web-videos/abc-720.mp4" length="70000" type="video/mp4"/>
              <media:group>
                <media:content url="BASE/static/web-videos/abc-240.mp4" type="video/mp4" fileSize="20000" height="240" framerate="25"/>
                <media:content url="BASE/static/web-videos/abc-720.mp4" type="video/mp4" fileSize="70000" height="720" framerate="25" isDefault="true"/>
                <media:content url="BASE/static/web-videos/abc-1080.mp4" type="video/mp4" fileSize="120000" height="1080" framerate="25"/>
              </media:group>
              <media:thumbnail url="BASE/lazy-static/thumbnails/abc.jpg" height="122" width="223"/>
              <media:title type="plain">A talk</media:title>
              <media:description type="plain">A talk about archives</media:description>
              <media:rating>nonadult</media:rating>
            </item>
          </channel>
        </rss>
        """
    private static let peerTubeFiles = [
        ("/static/web-videos/abc-240.mp4", 20000), ("/static/web-videos/abc-720.mp4", 70000),
        ("/static/web-videos/abc-1080.mp4", 120000), ("/lazy-static/thumbnails/abc.jpg", 5000),
    ]

    @Test func aGroupGivesOneRenditionTheDefaultOneAndAURLListedTwiceIsFetchedOnce() async throws {
        try await MirrorProcess.mirrorFeed(Self.peerTube, files: Self.peerTubeFiles) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: out + "/enclosures")) == ["abc-720.mp4"])
            #expect(same(out, "previews/abc.jpg", server, "/lazy-static/thumbnails/abc.jpg"))
            let sidecar = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/abc-720.mp4.json") ?? [], as: UTF8.self)
            #expect(sidecar.contains("\"description\" : \"A talk about archives\""), "\(sidecar)")
            #expect(sidecar.contains("\"rating\" : \"nonadult\""), "\(sidecar)")
            #expect(server.requestCount(path: "/static/web-videos/abc-720.mp4") == 1)
            #expect(server.requestCount(path: "/static/web-videos/abc-1080.mp4") == 0)
        }
        for (choice, file) in [("largest", "abc-1080.mp4"), ("smallest", "abc-240.mp4")] {
            try await MirrorProcess.mirrorFeed(Self.peerTube, files: Self.peerTubeFiles, arguments: ["--media-rendition", choice]) { run, out, _ in
                #expect(run.status == 0, "\(run.stderr)")
                // One rendition: the enclosure naming another of the group's is not mirrored beside it.
                #expect(Set((try? FileManager.default.contentsOfDirectory(atPath: out + "/enclosures")) ?? []) == [file])
            }
        }
    }

    @Test func rss10AndRss090AsRDFWithModEnclosure() async throws {
        // Movable Type's RSS 1.0 template, with mod_enclosure added.
        let rss10 = """
            <?xml version="1.0" encoding="utf-8"?>
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:dc="http://purl.org/dc/elements/1.1/"
              xmlns:enc="http://purl.oclc.org/net/rss_2.0/enc#" xmlns="http://purl.org/rss/1.0/">
              <channel rdf:about="BASE/"><title>A lab's news</title><link>BASE/</link>
                <items><rdf:Seq><rdf:li rdf:resource="BASE/2024/02/talk.html"/></rdf:Seq></items>
              </channel>
              <item rdf:about="BASE/2024/02/talk.html"><title>The talk's slides</title><link>BASE/2024/02/talk.html</link>
                <dc:date>2024-02-12T03:44:00+00:00</dc:date>
                <enc:enclosure rdf:resource="BASE/files/slides.pdf" enc:type="application/pdf" enc:length="30000"/>
              </item>
            </rdf:RDF>
            """
        try await MirrorProcess.mirrorFeed(rss10, files: [("/files/slides.pdf", 30000)]) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(same(out, "enclosures/slides.pdf", server, "/files/slides.pdf"))
            let sidecar = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/slides.pdf.json") ?? [], as: UTF8.self)
            #expect(sidecar.contains("\"updated\" : \"2024-02-12T03:44:00+00:00\""), "\(sidecar)")
            #expect(sidecar.contains("The talk's slides"), "\(sidecar)")
        }
        let rss090 = """
            <?xml version="1.0"?>
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://my.netscape.com/rdf/simple/0.9/"
              xmlns:enc="http://purl.oclc.org/net/rss_2.0/enc#">
              <channel><title>Old news</title><link>BASE/</link><description>RSS 0.90</description></channel>
              <item><title>Episode</title><link>BASE/episode.html</link>
                <enc:enclosure rdf:resource="BASE/files/episode.mp3" enc:type="audio/mpeg" enc:length="25000"/></item>
            </rdf:RDF>
            """
        try await MirrorProcess.mirrorFeed(rss090, files: [("/files/episode.mp3", 25000)]) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(same(out, "enclosures/episode.mp3", server, "/files/episode.mp3"))
        }
    }

    @Test func rss092AndRss20InUserlandsNamespaceAndAtom03() async throws {
        let rss092 = """
            <?xml version="1.0"?>
            <rss version="0.92"><channel><title>0.92</title><link>BASE/</link><description>d</description>
              <item><title>Show 1</title><enclosure url="BASE/files/show-1.mp3" length="11000" type="audio/mpeg"/></item>
            </channel></rss>
            """
        try await MirrorProcess.mirrorFeed(rss092, files: [("/files/show-1.mp3", 11000)]) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(same(out, "enclosures/show-1.mp3", server, "/files/show-1.mp3"))
        }
        let userland = """
            <?xml version="1.0"?>
            <rss version="2.0" xmlns="http://backend.userland.com/rss2"><channel><title>Radio UserLand</title><link>BASE/</link>
              <item><title>Show 2</title><guid>show-2</guid><pubDate>Tue, 03 Jun 2003 09:39:21 GMT</pubDate>
                <enclosure url="BASE/files/show-2.mp3" length="12000" type="audio/mpeg"/></item>
            </channel></rss>
            """
        try await MirrorProcess.mirrorFeed(userland, files: [("/files/show-2.mp3", 12000)]) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(same(out, "enclosures/show-2.mp3", server, "/files/show-2.mp3"))
        }
        // Blogger's Atom 0.3.
        let atom03 = """
            <?xml version="1.0" encoding="UTF-8"?>
            <feed version="0.3" xmlns="http://purl.org/atom/ns#">
              <title mode="escaped" type="text/html">A blog</title>
              <link rel="alternate" type="text/html" href="BASE/"/>
              <modified>2005-01-01T00:00:00Z</modified>
              <entry><title mode="escaped" type="text/html">Podcast 3</title>
                <link rel="alternate" type="text/html" href="BASE/2005/01/podcast-3.html"/>
                <link rel="enclosure" type="audio/mpeg" length="13000" href="BASE/files/podcast-3.mp3"/>
                <id>tag:blogger.com,1999:blog-1.post-3</id><issued>2005-01-01T00:00:00Z</issued>
                <modified>2005-01-02T00:00:00Z</modified></entry>
            </feed>
            """
        try await MirrorProcess.mirrorFeed(atom03, files: [("/files/podcast-3.mp3", 13000)]) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(same(out, "enclosures/podcast-3.mp3", server, "/files/podcast-3.mp3"))
            let sidecar = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/podcast-3.mp3.json") ?? [], as: UTF8.self)
            #expect(sidecar.contains("\"updated\" : \"2005-01-02T00:00:00Z\""), "\(sidecar)")
            #expect(sidecar.contains("\"feed_title\" : \"A blog\""), "\(sidecar)")
        }
    }

    /// The real Mastodon 4.2 account feed (../shared/real-data), its media host served here.
    @Test(.needsRealData) func theRealMastodonFeedMirrorsItsSixImages() async throws {
        let real = try #require(TestSupport.realData).appendingPathComponent("feeds/rss-mastodon-4.2-media-content.xml")
        let text = try String(contentsOf: real, encoding: .utf8)
        let pattern = #/url="https://media\.cmx\.edu\.kg(?<path>[^"]+)" type="[^"]*" fileSize="(?<size>\d+)"/#
        let files = text.matches(of: pattern).map { (String($0.output.path), Int($0.output.size)!) }
        #expect(files.count == 6)
        // The account's avatar, as the channel's image and its webfeeds:icon both.
        let avatar = "/accounts/avatars/000/079/074/original/c4beaaa4e61512f0.png"
        try await MirrorProcess.mirrorFeed(text.replacingOccurrences(of: "https://media.cmx.edu.kg", with: "BASE"), files: files + [(avatar, 3000)]) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            for (path, _) in files {
                let name = String(path.split(separator: "/").last!)
                #expect(same(out, "enclosures/\(name)", server, path), "\(name)")
            }
            #expect(same(out, "previews/c4beaaa4e61512f0.png", server, avatar))
            #expect(server.requestCount(path: avatar) == 1)
        }
    }

    @Test func aPodcastsCoverIsSavedOnceAsTheFeedsPreview() async throws {
        let feed = """
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel><title>A show</title>
              <itunes:image href="BASE/art/cover.jpg"/>
              <item><title>One</title><guid>one</guid><enclosure url="BASE/files/one.mp3" length="9000" type="audio/mpeg"/></item>
            </channel></rss>
            """
        try await TestSupport.withServer { server in
            server.addMedia(path: "/art/cover.jpg", size: 4000)
            server.addMedia(path: "/files/one.mp3", size: 9000)
            server.setFeed(path: "/feeds/feed.xml", text: feed.replacingOccurrences(of: "BASE", with: server.baseURL))
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                for _ in 1...2 {
                    let run = try await MirrorProcess.run(["feed", "\(server.baseURL)/feeds/feed.xml", "--out", out])
                    #expect(run.status == 0, "\(run.stderr)")
                }
                #expect(same(out, "previews/cover.jpg", server, "/art/cover.jpg"))
                #expect(server.requestCount(path: "/art/cover.jpg") == 1)
                #expect((try? FileManager.default.contentsOfDirectory(atPath: out + "/previews")) == ["cover.jpg"])
            }
        }
    }

    /// Reading Media RSS must not rename an enclosure's item: a mirror made before it keeps its
    /// files, whether the feed lists the enclosure before or after its Media RSS content.
    @Test(arguments: [true, false]) func aMediaRSSFileBesideAnEnclosureLeavesTheEnclosuresItemAsItWas(enclosureFirst: Bool) throws {
        let enclosure = #"<enclosure url="https://h.example/ep-1.mp3" length="10" type="audio/mpeg"/>"#
        let content = """
            <media:content url="https://h.example/ep-1.mp3" medium="audio" fileSize="99" type="audio/x-other">\
            <media:thumbnail url="https://h.example/ep-1.jpg"/></media:content>
            """
        let text = """
            <rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>t</title>
              <item><guid>ep-1</guid>\(enclosureFirst ? enclosure + content : content + enclosure)
                <media:content url="https://gravatar.example/avatar.jpg" medium="image"/>
              </item></channel></rss>
            """
        let feed = try FeedReader.parse(Array(text.utf8), url: "https://h.example/feed")
        #expect(feed.enclosures.map(\.url) == ["https://h.example/ep-1.mp3", "https://gravatar.example/avatar.jpg"])
        let first = try #require(feed.enclosures.first)
        #expect(first.entryID == "ep-1" && !first.isMediaRSS)
        #expect(first.type == "audio/mpeg" && first.length == 10)
        // The duplicate's thumbnail and medium are kept on the enclosure.
        #expect(first.preview == "https://h.example/ep-1.jpg")
        #expect(first.medium == "audio")
        #expect(feed.enclosures.last?.entryID?.hasPrefix("ep-1#media:") == true)
    }
}
