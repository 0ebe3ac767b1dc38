import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

@Suite("Versions of a feed's releases: new ones kept beside (new-file) or reported (skip-if-exists)", .timeLimit(.minutes(2)))
struct FeedVersionTests {
    let engine = TransferEngine()

    private func run(_ server: FixtureServer, feed: String, into dir: URL, mode: DownloadMode) async throws -> MirrorSummary {
        let mirror = try FeedRun(
            directory: try MirrorDirectory(root: dir), engine: engine,
            settings: .init(
                feedURL: "\(server.baseURL)/feeds/\(feed)", mode: mode,
                retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5))),
            logger: TestSupport.logger)
        return await mirror.run()
    }

    private func enclosures(_ dir: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("enclosures").path).sorted()
    }

    private func file(_ dir: URL, _ name: String) -> String {
        TestSupport.digest(ofFile: dir.appendingPathComponent("enclosures/\(name)").path)
    }

    /// The fixture Dash feed with its version set to `version`.
    private func publishPython(_ version: String, on server: FixtureServer) throws {
        let feed = try String(contentsOf: TestSupport.fixtures.appendingPathComponent("feeds/Python.xml"), encoding: .utf8)
            .replacingOccurrences(of: "<version>3.14.6</version>", with: "<version>\(version)</version>")
        server.setFeed(path: "/feeds/Python.xml", text: feed)
    }

    /// A new-file run kept two versions; the newest is deleted by hand; a skip-if-exists run
    /// restores it where it was. The older version has the name the feed gives the file, which
    /// the run took for somebody else's and left the mirror a file short, every run.
    @Test func aSkipIfExistsRunRestoresADeletedNewestVersionBesideAnOlderOne() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, feed: "podcast.rss", into: dir, mode: .newFile).isComplete)
                let first = server.content(of: "/files/episode-1.mp3")
                server.changeContent(path: "/files/episode-1.mp3")
                #expect(try await run(server, feed: "podcast.rss", into: dir, mode: .newFile).newVersions == 1)
                #expect(try enclosures(dir) == ["episode-1(1).mp3", "episode-1.mp3", "episode-2.mp3"])
                try FileManager.default.removeItem(at: dir.appendingPathComponent("enclosures/episode-1(1).mp3"))
                let restoring = try await run(server, feed: "podcast.rss", into: dir, mode: .skipIfExists)
                #expect(restoring.isComplete)
                #expect(restoring.missingFetchedAgain == 1, "\(restoring)")
                #expect(try enclosures(dir) == ["episode-1(1).mp3", "episode-1.mp3", "episode-2.mp3"])
                #expect(file(dir, "episode-1(1).mp3") == TestSupport.digest(server.content(of: "/files/episode-1.mp3")))
                #expect(file(dir, "episode-1.mp3") == TestSupport.digest(first))
                // Restored, and then left alone.
                let after = try await run(server, feed: "podcast.rss", into: dir, mode: .skipIfExists)
                #expect(after.downloaded == 0 && after.isComplete)
            }
        }
    }

    @Test func aDashReleaseAtAStableURLIsKeptBesideTheOldInNewFileMode() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, feed: "Python.xml", into: dir, mode: .newFile).isComplete)
                let old = server.content(of: "/files/Python.tgz")
                // Unchanged: one conditional request, answered 304.
                let sent = server.bodyBytesSent(path: "/files/Python.tgz")
                let same = try await run(server, feed: "Python.xml", into: dir, mode: .newFile)
                #expect(same.unchanged == 1 && same.downloaded == 0)
                #expect(server.bodyBytesSent(path: "/files/Python.tgz") == sent)
                #expect(server.requests.last { $0.path == "/files/Python.tgz" }?.header("If-None-Match") == server.etag(of: "/files/Python.tgz"))
                // 3.14.7 comes out at the same URL.
                try publishPython("3.14.7", on: server)
                server.changeContent(path: "/files/Python.tgz")
                let next = try await run(server, feed: "Python.xml", into: dir, mode: .newFile)
                #expect(next.isComplete)
                #expect(next.downloaded == 1 && next.newVersions == 1)
                #expect(try enclosures(dir) == ["Python(1).tgz", "Python.tgz"])
                #expect(file(dir, "Python.tgz") == TestSupport.digest(old))
                #expect(file(dir, "Python(1).tgz") == TestSupport.digest(server.content(of: "/files/Python.tgz")))
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                let item = try #require(try await state.item(named: "Python.tgz"))
                let versions = try await state.versions(of: item)
                #expect(versions.map(\.path) == ["enclosures/Python.tgz", "enclosures/Python(1).tgz"])
                #expect(versions.map(\.version) == ["3.14.6", "3.14.7"])
                #expect(versions.map(\.md5) == [old, server.content(of: "/files/Python.tgz")].map { TestSupport.digest($0) })
            }
        }
    }

    @Test func aNewDashReleaseIsReportedSkippedAndNothingIsAskedInSkipIfExistsMode() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, feed: "Python.xml", into: dir, mode: .skipIfExists).isComplete)
                let old = file(dir, "Python.tgz")
                try publishPython("3.14.7", on: server)
                server.changeContent(path: "/files/Python.tgz")
                let next = try await run(server, feed: "Python.xml", into: dir, mode: .skipIfExists)
                #expect(next.downloaded == 0)
                #expect(next.skippedReleases.count == 1)
                #expect(next.skippedReleases.first?.contains("3.14.7") == true)
                #expect(next.line.contains("1 new release skipped"))
                #expect(server.requestCount(path: "/files/Python.tgz") == 1)
                #expect(try enclosures(dir) == ["Python.tgz"])
                #expect(file(dir, "Python.tgz") == old)
            }
        }
    }

    @Test func aDashArchiveFromItsSecondMirrorIsOneFileInEitherMode() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                server.inject(.respond(status: 404, body: "not here"), path: "/files/Python.tgz")
                let first = try await run(server, feed: "Python.xml", into: dir, mode: .skipIfExists)
                #expect(first.downloaded == 1)
                let refusal = server.bodyBytesSent(path: "/files/Python.tgz")
                #expect(server.bodyBytesSent(path: "/mirror-b/Python.tgz") == 4_194_304)
                // The first mirror is back: the archive is the entry's, whichever mirror served it.
                let skip = try await run(server, feed: "Python.xml", into: dir, mode: .skipIfExists)
                #expect(skip.downloaded == 0 && skip.alreadyPresent == 1)
                #expect(server.requestCount(path: "/files/Python.tgz") == 1)
                let newFile = try await run(server, feed: "Python.xml", into: dir, mode: .newFile)
                #expect(newFile.downloaded == 0 && newFile.unchanged == 1)
                // Asked by the ETag the second mirror sent: the same bytes, so 304, no body.
                #expect(server.bodyBytesSent(path: "/files/Python.tgz") == refusal)
                #expect(try enclosures(dir) == ["Python.tgz"])
            }
        }
    }

    @Test func anAtomEntryWhoseReleaseMovedToANewURLIsFetchedOrReported() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { newFileDir in
                try await TestSupport.withTemporaryDirectory { skipDir in
                    #expect(try await run(server, feed: "docsets.atom", into: newFileDir, mode: .newFile).isComplete)
                    #expect(try await run(server, feed: "docsets.atom", into: skipDir, mode: .skipIfExists).isComplete)
                    let feed = try String(contentsOf: TestSupport.fixtures.appendingPathComponent("feeds/docsets.atom"), encoding: .utf8)
                        .replacingOccurrences(of: "Alpha-2.1.docset.xar", with: "Alpha-2.2.docset.xar")
                        .replacingOccurrences(of: "<ds:version>2.1</ds:version>", with: "<ds:version>2.2</ds:version>")
                        .replacingOccurrences(of: "2026-11-01T09:00:00+01:00", with: "2026-11-20T09:00:00+01:00")
                    server.setFeed(path: "/feeds/docsets.atom", text: feed)
                    server.addMedia(path: "/files/Alpha-2.2.docset.xar", size: 7000)
                    let next = try await run(server, feed: "docsets.atom", into: newFileDir, mode: .newFile)
                    #expect(next.isComplete)
                    #expect(next.downloaded == 1 && next.newVersions == 1 && next.unchanged == 1)
                    #expect(try enclosures(newFileDir) == ["Alpha-2.1.docset.xar", "Alpha-2.2.docset.xar", "Beta 1.0.xar"])
                    let skipped = try await run(server, feed: "docsets.atom", into: skipDir, mode: .skipIfExists)
                    #expect(skipped.downloaded == 0 && skipped.skippedReleases.count == 1)
                    #expect(server.requestCount(path: "/files/Alpha-2.2.docset.xar") == 1)
                    #expect(try enclosures(skipDir) == ["Alpha-2.1.docset.xar", "Beta 1.0.xar"])
                }
            }
        }
    }

    @Test func anRSSItemWhosePubDateChangedIsAskedAfterAndTheSameBytesAreNotSavedTwice() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let feed = try String(contentsOf: TestSupport.fixtures.appendingPathComponent("feeds/podcast.rss"), encoding: .utf8)
                server.setFeed(path: "/feeds/podcast.rss", text: feed.replacingOccurrences(
                    of: "<guid>fixture-episode-1</guid>", with: "<guid>fixture-episode-1</guid><pubDate>Mon, 02 Nov 2026 08:00:00 GMT</pubDate>"))
                #expect(try await run(server, feed: "podcast.rss", into: dir, mode: .newFile).isComplete)
                // Re-published, same bytes, and a server that ignores If-None-Match.
                server.setFeed(path: "/feeds/podcast.rss", text: feed.replacingOccurrences(
                    of: "<guid>fixture-episode-1</guid>", with: "<guid>fixture-episode-1</guid><pubDate>Tue, 03 Nov 2026 08:00:00 GMT</pubDate>"))
                server.inject(.unconditional(etag: "\"a-new-tag\""), path: "/files/episode-1.mp3")
                let next = try await run(server, feed: "podcast.rss", into: dir, mode: .newFile)
                #expect(next.isComplete)
                #expect(next.downloaded == 0 && next.unchanged == 2)
                #expect(try enclosures(dir) == ["episode-1.mp3", "episode-2.mp3"])
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                let item = try #require(try await state.item(named: "episode-1.mp3"))
                #expect(try await state.versions(of: item).map(\.updated) == ["Tue, 03 Nov 2026 08:00:00 GMT"])
            }
        }
    }
}
