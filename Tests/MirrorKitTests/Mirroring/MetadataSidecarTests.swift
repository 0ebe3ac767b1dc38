import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

@Suite("Metadata sidecars: what the API or feed said, beside each file", .timeLimit(.minutes(2)))
struct MetadataSidecarTests {
    let engine = TransferEngine()

    private func runTag(_ server: FixtureServer, into dir: URL, metadata: Bool = true, pages: Int? = nil) async throws -> MirrorSummary {
        let client = ImgurClient(apiBase: server.baseURL, clientID: "fixture", engine: engine, logger: TestSupport.logger)
        let settings = TagRun.Settings(
            crawl: TagCrawler.Options(tag: "cats", maxPages: pages), urls: MediaURLBuilder(mediaBase: server.baseURL, thumbnail: .medium),
            retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5)), metadata: metadata)
        return try await TagRun(
            directory: try MirrorDirectory(root: dir), client: client, engine: engine, settings: settings,
            logger: TestSupport.logger
        ).run()
    }

    private func sidecar(_ dir: URL, _ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: dir.appendingPathComponent(path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func everyImageGetsItsSidecarWithItsAlbum() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await runTag(server, into: dir)
                #expect(summary.isComplete, "\(summary.line)")
                for id in TestSupport.catsImageIDs {
                    let fields = try sidecar(dir, "meta/\(id).json")
                    #expect(fields["id"] as? String == id)
                    let files = try #require(fields["files"] as? [String: String])
                    #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(try #require(files["full"])).path))
                    #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(try #require(files["preview"])).path))
                }
                // A top-level image, with what the page said of it.
                let image = try sidecar(dir, "meta/aB3dE5f.json")
                #expect(image["title"] as? String == "Fixture aB3dE5f")
                #expect(image["type"] as? String == "image/jpeg")
                #expect(image["gallery_link"] as? String == "https://imgur.com/gallery/aB3dE5f")
                #expect(image["album"] == nil)
                let timestamp = try #require(image["timestamp"] as? Int)
                #expect(image["datetime"] as? String == Date(timeIntervalSince1970: TimeInterval(timestamp)).formatted(.iso8601))
                for key in ["size", "width", "height", "animated"] { #expect(image[key] != nil, "\(key)") }
                // An image of an album the page did not embed (asked for later): the album and its
                // title come from the page that listed it, kept with the album meanwhile.
                let inAlbum = try sidecar(dir, "meta/Ij2kL3m.json")
                let album = try #require(inAlbum["album"] as? [String: String])
                #expect(album == ["id": "Ef1gH", "title": "Album Ef1gH"])
                #expect(inAlbum["gallery_link"] as? String == "https://imgur.com/gallery/Ef1gH")
            }
        }
    }

    @Test func aRemovedImagesSidecarNamesNoFileTheMirrorLacks() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await runTag(server, into: dir)
                // Rm0vEd1's media redirects to removed.png: reported, not saved.
                let removed = try sidecar(dir, "meta/Rm0vEd1.json")
                let files = try #require(removed["files"] as? [String: String])
                #expect(files.isEmpty, "\(files)")
                #expect(removed["removed_upstream"] as? [String] == ["full", "preview"])
                // An image that is there keeps both.
                let present = try #require(try sidecar(dir, "meta/aB3dE5f.json")["files"] as? [String: String])
                #expect(Set(present.keys) == ["full", "preview"])
                #expect(try sidecar(dir, "meta/aB3dE5f.json")["removed_upstream"] == nil)
            }
        }
    }

    /// A page read again (a pass cut short by `--pages` is read again from its start) rewrites
    /// the sidecars of what it lists: the removal said before stands, and no file it lacks is named.
    @Test func aRemovalStaysInTheSidecarWhenThePageIsReadAgain() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await runTag(server, into: dir, pages: 2)
                #expect(try sidecar(dir, "meta/Rm0vEd1.json")["removed_upstream"] as? [String] == ["full", "preview"])
                let requests = server.requestCount(path: "/3/gallery/t/cats/time/all/1")
                _ = try await runTag(server, into: dir, pages: 2)
                #expect(server.requestCount(path: "/3/gallery/t/cats/time/all/1") > requests, "the page listing Rm0vEd1 was read again")
                let removed = try sidecar(dir, "meta/Rm0vEd1.json")
                #expect(removed["removed_upstream"] as? [String] == ["full", "preview"])
                #expect((removed["files"] as? [String: String])?.isEmpty == true, "\(String(describing: removed["files"]))")
            }
        }
    }

    @Test func aFileGoneUpstreamThatTheMirrorKeptIsStillNamedBesideTheRemovalInNewFileMode() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("https://imgur.com/a/Ef1gH", out: out, server: server, idFile: idFile)
                    + ["--mode", "new-file", "--metadata"]
                #expect(try await MirrorProcess.run(arguments).status == 0)
                server.inject(.respond(status: 404, headers: [:], body: "gone"), path: "/Ij2kL3m.jpg", times: 10)
                let asked = try await MirrorProcess.run(arguments)
                #expect(asked.stdout.contains("1 removed upstream"), "\(asked.stdout)")
                #expect(FileManager.default.fileExists(atPath: out + "/full/Ij2kL3m.jpg"), "the copy from before stays")
                let removed = try sidecar(URL(fileURLWithPath: out), "meta/Ij2kL3m.json")
                let files = try #require(removed["files"] as? [String: String])
                #expect(files["full"] == "full/Ij2kL3m.jpg", "the sidecar names the copy the mirror kept: \(files)")
                #expect(removed["removed_upstream"] as? [String] == ["full"])
                // Then its thumbnail goes too: the removal said before stays beside the new one
                // (the full-size file's job found its copy held and said nothing of it).
                server.inject(.respond(status: 404, headers: [:], body: "gone"), path: "/Ij2kL3mm.jpg", times: 10)
                let again = try await MirrorProcess.run(arguments)
                #expect(again.status == 0, "\(again.stderr)")
                let both = try sidecar(URL(fileURLWithPath: out), "meta/Ij2kL3m.json")
                #expect(both["removed_upstream"] as? [String] == ["full", "preview"], "\(both)")
                #expect((both["files"] as? [String: String])?["full"] == "full/Ij2kL3m.jpg")
            }
        }
    }

    @Test func aSidecarFollowsAnEditAndIsNotRewrittenWithoutOne() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await runTag(server, into: dir)
                let path = dir.appendingPathComponent("meta/aB3dE5f.json").path
                let untouched = dir.appendingPathComponent("meta/Gh7iJ9k.json").path
                let before = try FileManager.default.attributesOfItem(atPath: untouched)[.systemFileNumber] as? Int
                let beforeText = try String(contentsOfFile: untouched, encoding: .utf8)
                // The post's title and description are edited and it is tagged.
                let page0 = try String(
                    contentsOf: TestSupport.fixtures.appendingPathComponent("imgur/gallery-t-cats-0.json"), encoding: .utf8)
                var edited = page0.replacingOccurrences(
                    of: #""title":"Fixture aB3dE5f","description":null"#,
                    with: #""title":"A new title","description":"Now described\nover two lines""#)
                // The first entry's tags only: aB3dE5f's.
                let tags = try #require(edited.range(of: #""tags":[]"#))
                edited.replaceSubrange(tags, with: #""tags":[{"name":"cats","display_name":"Cats"},{"name":"caturday"}]"#)
                #expect(edited != page0)
                server.inject(.respond(status: 200, body: edited), path: "/3/gallery/t/cats/time/all/0")
                let second = try await runTag(server, into: dir)
                #expect(second.isComplete, "\(second.line)")
                let fields = try sidecar(dir, "meta/aB3dE5f.json")
                #expect(fields["title"] as? String == "A new title")
                #expect(fields["description"] as? String == "Now described\nover two lines")
                #expect(fields["tags"] as? [String] == ["cats", "caturday"])
                #expect(FileManager.default.fileExists(atPath: path))
                // Unchanged data: the same file, not a rewrite (a rename would give a new inode).
                let after = try FileManager.default.attributesOfItem(atPath: untouched)[.systemFileNumber] as? Int
                #expect(before == after, "\(beforeText) → \((try? String(contentsOfFile: untouched, encoding: .utf8)) ?? "")")
            }
        }
    }

    @Test func anImageResumedFromAnEarlierRunDoesNotUndoANewerSidecar() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                // aB3dE5f's file fails: the image stays pending, described as the first run saw it.
                server.inject(.respond(status: 500), path: "/aB3dE5f.jpg", times: 1000)
                let first = try await runTag(server, into: dir)
                #expect(first.failures.count == 1, "\(first.line)")
                // The second run reads the page again, with a new title.
                let page0 = try String(
                    contentsOf: TestSupport.fixtures.appendingPathComponent("imgur/gallery-t-cats-0.json"), encoding: .utf8)
                let edited = page0.replacingOccurrences(of: #""title":"Fixture aB3dE5f""#, with: #""title":"Edited""#)
                server.inject(.respond(status: 200, body: edited), path: "/3/gallery/t/cats/time/all/0")
                _ = try await runTag(server, into: dir)
                #expect(try sidecar(dir, "meta/aB3dE5f.json")["title"] as? String == "Edited")
                // The third run resumes the image first, then cannot read the listing at all.
                server.inject(.respond(status: 403, body: #"{"data":{"error":"forbidden"},"success":false,"status":403}"#),
                              path: "/3/gallery/t/cats/time/all/0", times: 10)
                let third = try await runTag(server, into: dir)
                #expect(third.stoppedBy?.imgurError != nil, "\(third.line)")
                // It was asked for again (the 500s go on), from what the first run stored of it.
                #expect(third.failures.map(\.url) == ["\(server.baseURL)/aB3dE5f.jpg"], "\(third.line)")
                #expect(try sidecar(dir, "meta/aB3dE5f.json")["title"] as? String == "Edited")
            }
        }
    }

    /// Sidecars are renamed into place unsynced: a power cut before their write-back leaves one
    /// empty, and a run that writes only missing ones (a resumed image's) must not take it for one.
    @Test func anEmptySidecarIsWrittenAgainWhereOnlyMissingOnesAre() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let sidecars = MetadataSidecars(directory: try MirrorDirectory(root: dir))
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("meta"), withIntermediateDirectories: true)
            // Empty (ext4), or zeros as long as what was written (XFS).
            for (name, leftover) in [("aB3dE5f.json", Data()), ("cD4eF6g.json", Data(count: 40))] {
                #expect(FileManager.default.createFile(atPath: dir.appendingPathComponent("meta/\(name)").path, contents: leftover))
                #expect(try sidecars.write(["title": "Fixture aB3dE5f"], as: name, replacing: false))
                #expect(try sidecar(dir, "meta/\(name)")["title"] as? String == "Fixture aB3dE5f")
            }
            // One that says something stays as it is.
            #expect(try !sidecars.write(["title": "Edited"], as: "aB3dE5f.json", replacing: false))
            #expect(try sidecar(dir, "meta/aB3dE5f.json")["title"] as? String == "Fixture aB3dE5f")
        }
    }

    @Test func withoutTheOptionThereAreNone() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await runTag(server, into: dir, metadata: false)
                #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("meta").path))
            }
        }
    }

    @Test func aPlantedLinkAsTheMetaFolderIsRefused() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let elsewhere = dir.appendingPathComponent("elsewhere")
                let out = dir.appendingPathComponent("out")
                try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
                try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent("meta").path, withDestinationPath: elsewhere.path)
                let summary = try await runTag(server, into: out)
                #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
                #expect(summary.stoppedBy?.mirrorError != nil || !summary.problems.isEmpty, "\(summary.line)")
            }
        }
    }

    @Test func aFeedEnclosureGetsItsEntry() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let mirror = try FeedRun(
                    directory: try MirrorDirectory(root: dir), engine: engine,
                    settings: .init(feed: .url("\(server.baseURL)/feeds/docsets.atom"), metadata: true),
                    logger: TestSupport.logger)
                let summary = await mirror.run()
                #expect(summary.isComplete, "\(summary.line)")
                let alpha = try sidecar(dir, "meta/enclosures/Alpha-2.1.docset.xar.json")
                #expect(alpha["title"] as? String == "Alpha")
                #expect(alpha["id"] as? String == "org.example.alpha")
                #expect(alpha["version"] as? String == "2.1")
                #expect(alpha["updated"] as? String == "2026-11-01T09:00:00+01:00")
                #expect(alpha["feed_title"] as? String == "Fixture docsets")
                #expect(alpha["file"] as? String == "enclosures/Alpha-2.1.docset.xar")
                #expect(alpha["links"] as? [String] == ["\(server.baseURL)/files/Alpha-2.1.docset.xar"])
                #expect(alpha["page"] as? String == "\(server.baseURL)/docs/alpha.html")
                let beta = try sidecar(dir, "meta/enclosures/Beta 1.0.xar.json")
                #expect(beta["title"] as? String == "Beta (relative link, xml:base)")
            }
        }
    }
}
