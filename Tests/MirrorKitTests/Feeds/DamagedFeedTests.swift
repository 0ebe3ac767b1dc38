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

    @Test func aDocumentWithNothingReadableIsStillAnError() async throws {
        try await MirrorProcess.mirrorFeed("<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>x</ti", files: []) { run, _, _ in
            #expect(run.status == 65, "\(run.stderr)")
            #expect(run.stderr.contains("not well-formed XML at line 1"), "\(run.stderr)")
        }
    }
}
