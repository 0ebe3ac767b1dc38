import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

@Suite("Mirroring feed enclosures from the fixture server", .timeLimit(.minutes(2)))
struct FeedRunTests {
    let engine = TransferEngine()

    private func run(_ server: FixtureServer, feed: String, into dir: URL) async throws -> MirrorSummary {
        let mirror = try FeedRun(
            directory: try MirrorDirectory(root: dir), engine: engine,
            settings: .init(feedURL: "\(server.baseURL)/feeds/\(feed)", retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5))),
            logger: TestSupport.logger)
        return await mirror.run()
    }

    @Test(arguments: [
        ("docsets.atom", ["Alpha-2.1.docset.xar": "/files/Alpha-2.1.docset.xar", "Beta 1.0.xar": "/files/beta/Beta 1.0.xar"]),
        ("podcast.rss", ["episode-1.mp3": "/files/episode-1.mp3", "episode-2.mp3": "/files/episode-2.mp3"]),
        ("Python.xml", ["Python.tgz": "/files/Python.tgz"]),
    ])
    func mirrorsEveryEnclosureByteForByte(_ feed: String, _ expected: [String: String]) async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, feed: feed, into: dir)
                #expect(summary.isComplete)
                #expect(summary.downloaded == expected.count)
                // Named by the path alone (episode-2.mp3 has a query), nothing else saved.
                let saved = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("enclosures").path)
                #expect(Set(saved) == Set(expected.keys))
                for (name, path) in expected {
                    #expect(TestSupport.digest(ofFile: dir.appendingPathComponent("enclosures/\(name)").path)
                        == TestSupport.digest(server.content(of: path)), "\(name)")
                }
                // The feed and each enclosure once, and nothing else: not an entry's alternate link
                // (docsets.atom), not the channel's link (podcast.rss), not a Dash archive's second
                // mirror, which is the same file (Python.xml).
                #expect(server.requests.map(\.path).sorted() == (["/feeds/\(feed)"] + expected.values).sorted())
            }
        }
    }

    @Test func aFeedAnswering503WithAnHTTPDateRetryAfterIsFetchedAfterThatDate() async throws {
        try await TestSupport.withServer { server in
            let date = HTTPDate.format(Date().addingTimeInterval(2))
            server.inject(.respond(status: 503, headers: ["Retry-After": date], body: "busy"), path: "/feeds/podcast.rss")
            try await TestSupport.withTemporaryDirectory { dir in
                let start = ContinuousClock.now
                let summary = try await run(server, feed: "podcast.rss", into: dir)
                #expect(summary.isComplete)
                #expect(ContinuousClock.now - start >= .milliseconds(900))
                #expect(server.requestCount(path: "/feeds/podcast.rss") == 2)
            }
        }
    }

    @Test func aFeedCutShortIsMirroredAsFarAsItsWholeEntriesGo() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, feed: "broken.atom", into: dir)
                #expect(summary.stoppedBy == nil)
                #expect(summary.isComplete)
                #expect(server.requestCount(path: "/files/Alpha-2.1.docset.xar") == 1)
            }
        }
    }

    @Test func aDroppedEnclosureResumesAndAnEmptyOneFails() async throws {
        try await TestSupport.withServer { server in
            server.inject(.dropAfter(bytes: 2 << 20), path: "/files/Alpha-2.1.docset.xar")
            server.inject(.respond(status: 200, body: ""), path: "/files/beta/Beta 1.0.xar", times: 2)
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, feed: "docsets.atom", into: dir)
                #expect(summary.downloaded == 1)
                #expect(summary.failures.map(\.reason) == [.emptyBody])
                #expect(server.requests.last { $0.path == "/files/Alpha-2.1.docset.xar" }?.header("Range") == "bytes=\(2 << 20)-")
                #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("enclosures/Beta 1.0.xar").path))
            }
        }
    }

    /// A server that states no length (a chunked body) leaves the feed's `length` as the only
    /// word on the size: a body that ends cleanly but short of it is refused, not saved.
    @Test func anEnclosureWithoutAContentLengthMustHaveTheLengthTheFeedDeclares() async throws {
        try await TestSupport.withServer { server in
            let size = 5000
            var items = ""
            for (name, declared) in [("right", size), ("short", size + 1000), ("stale", size + 4999)] {
                server.addMedia(path: "/files/declared-\(name).bin", size: size)
                items += """
                    <item><title>\(name)</title><guid>\(name)</guid>
                    <enclosure url="{{base}}/files/declared-\(name).bin" length="\(declared)" type="application/octet-stream"/></item>
                    """
            }
            server.setFeed(path: "/feeds/declared.rss", text: """
                <?xml version="1.0"?><rss version="2.0"><channel><title>declared</title>\(items)</channel></rss>
                """)
            // Chunked, cleanly ended, no Content-Length: only the stale one says its own length.
            for name in ["right", "short"] {
                server.inject(.chunkedDrop(afterBytes: .max), path: "/files/declared-\(name).bin", times: 4)
            }
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, feed: "declared.rss", into: dir)
                let saved = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("enclosures").path)
                #expect(Set(saved) == ["declared-right.bin", "declared-stale.bin"])
                #expect(summary.failures.map(\.reason) == [.declaredSizeMismatch(declared: Int64(size + 1000), actual: Int64(size))])
                // Not fetched whole again and again: the next run asks.
                #expect(server.requestCount(path: "/files/declared-short.bin") == 1)
                #expect(server.requests.last { $0.path == "/files/declared-right.bin" }?.header("Range") == nil)
            }
        }
    }

    @Test func aDashArchiveComesFromTheNextMirrorWhenTheFirstFails() async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 404), path: "/files/Python.tgz")
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, feed: "Python.xml", into: dir)
                #expect(summary.isComplete)
                #expect(TestSupport.digest(ofFile: dir.appendingPathComponent("enclosures/Python.tgz").path)
                    == TestSupport.digest(server.content(of: "/mirror-b/Python.tgz")))
            }
        }
    }

    @Test func aWebPageIsNotSavedAsAnEnclosure() async throws {
        try await TestSupport.withServer { server in
            server.inject(
                .respond(status: 200, headers: ["Content-Type": "text/html; charset=utf-8"], body: "<html>sign in</html>"),
                path: "/files/episode-1.mp3")
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, feed: "podcast.rss", into: dir)
                #expect(summary.failures.map(\.reason) == [.htmlPage])
                #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("enclosures/episode-1.mp3").path))
                #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("enclosures/episode-2.mp3").path))
            }
        }
    }

    /// Brackets and a bare `%`, which RFC 3986 forbids there and libxml2 refuses, are in real
    /// links (`[HD]` releases, PHP's `ids[]=`, `100%`): escaped, they are fetched.
    @Test func linksWithBracketsOrABarePercentAreMirrored() async throws {
        let links = ["BASE/files/[HD] ep.mp4", "BASE/files/a.mp3?ids[]=1", "BASE/files/100%.mp3", "BASE/files/%5B1%5D 50%.mp3"]
        let items = links.enumerated().map { index, link in
            #"<item><title>E\#(index)</title><guid>e\#(index)</guid><enclosure url="\#(link)" length="1000"/></item>"#
        }
        let feed = #"<?xml version="1.0"?><rss version="2.0"><channel><title>Odd links</title>"# + items.joined() + "</channel></rss>"
        let paths = ["/files/[HD] ep.mp4", "/files/a.mp3", "/files/100%.mp3", "/files/[1] 50%.mp3"]
        try await MirrorProcess.mirrorFeed(feed, files: paths.map { ($0, 1000) }) { run, out, server in
            #expect(run.status == 0 && !run.stderr.contains("not a URL"), "\(run.stderr)")
            for (path, name) in zip(paths, ["[HD] ep.mp4", "a.mp3", "100%.mp3", "[1] 50%.mp3"]) {
                #expect(TestSupport.digest(ofFile: out + "/enclosures/" + name) == TestSupport.digest(server.content(of: path)), "\(name)")
            }
        }
    }

    @Test func aFeedThatIsBrieflyUnavailableIsFetchedAgain() async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 503, headers: ["Retry-After": "0"]), path: "/feeds/docsets.atom")
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, feed: "docsets.atom", into: dir)
                #expect(summary.isComplete)
                #expect(server.requestCount(path: "/feeds/docsets.atom") == 2)
            }
        }
    }

    @Test func anotherEntrysFileWithAnOldFilesNameIsKeptApart() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await run(server, feed: "docsets.atom", into: dir)
                // The feed now has another entry whose file has the same name.
                let nightly = """
                    <entry><id>tag:fixture:org.example.alpha-nightly</id><title>Alpha nightly</title>
                    <link rel="enclosure" href="\(server.baseURL)/files/v2/Alpha-2.1.docset.xar"/></entry></feed>
                    """
                let feed = try String(contentsOf: TestSupport.fixtures.appendingPathComponent("feeds/docsets.atom"), encoding: .utf8)
                    .replacingOccurrences(of: "{{base}}", with: server.baseURL)
                    .replacingOccurrences(of: "</feed>", with: nightly)
                server.inject(.respond(status: 200, headers: ["Content-Type": "application/atom+xml"], body: feed), path: "/feeds/docsets.atom")
                server.addMedia(path: "/files/v2/Alpha-2.1.docset.xar", size: 4096)
                let second = try await run(server, feed: "docsets.atom", into: dir)
                #expect(second.downloaded == 1)
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("enclosures").path)
                let apart = try #require(names.first { $0.hasPrefix("Alpha-2.1.docset-") && $0.hasSuffix(".xar") })
                #expect(TestSupport.digest(ofFile: dir.appendingPathComponent("enclosures/\(apart)").path)
                    == TestSupport.digest(server.content(of: "/files/v2/Alpha-2.1.docset.xar")))
                #expect(TestSupport.digest(ofFile: dir.appendingPathComponent("enclosures/Alpha-2.1.docset.xar").path)
                    == TestSupport.digest(server.content(of: "/files/Alpha-2.1.docset.xar")))
            }
        }
    }

    @Test func aFeedAskingForADaysPauseIsNotWaitedFor() async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 503, headers: ["Retry-After": "86400"]), path: "/feeds/docsets.atom")
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, feed: "docsets.atom", into: dir)
                #expect((summary.stoppedBy?.feedError)?.problem == "HTTP 503")
                #expect(server.requestCount(path: "/feeds/docsets.atom") == 1)
            }
        }
    }
}
