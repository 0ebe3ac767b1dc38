import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// A tag larger than one hour of the API budget, mirrored over several runs from the cursor.
@Suite("Crawling a tag larger than the API budget across runs", .timeLimit(.minutes(2)))
struct IncrementalCrawlTests {
    let engine = TransferEngine()
    /// The runs' time: an hour passes between two of them when a test says so.
    let clock = TestClock()

    /// One run as cron would start it: a new client (no memory but the state database), waiting
    /// for no reset (the "hour" passes between runs).
    private func run(
        _ tag: String, _ server: FixtureServer, into dir: URL, pages: Int? = nil, sort: GallerySort = .time
    ) async throws -> (summary: MirrorSummary, apiCalls: Int) {
        let before = server.apiRequestCount
        let client = ImgurClient(
            apiBase: server.baseURL, clientID: "fixture", engine: engine,
            politeness: .init(maxWait: .zero, retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5))),
            clock: clock, logger: TestSupport.logger)
        let settings = TagRun.Settings(
            crawl: TagCrawler.Options(tag: tag, sort: sort, maxPages: pages),
            urls: MediaURLBuilder(mediaBase: server.baseURL, thumbnail: .medium),
            concurrency: 8,
            retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5)))
        let summary = try await TagRun(
            directory: try MirrorDirectory(root: dir), client: client, engine: engine, settings: settings,
            logger: TestSupport.logger
        ).run()
        return (summary, server.apiRequestCount - before)
    }

    /// A new hour: the budget is full again, and the reset the last run saw has passed.
    private func newHour(_ server: FixtureServer, calls: Int) async throws {
        clock.advance(by: .seconds(3600))
        server.setRateLimit(userRemaining: calls, userReset: 1, userLimit: calls, refills: false)
    }

    private func mirroredFiles(in dir: URL) -> Int {
        ["full", "preview"].reduce(0) { count, folder in
            count + ((try? FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent(folder).path))?.count ?? 0)
        }
    }

    private func expectWholeMirror(of tag: String, _ server: FixtureServer, in dir: URL) {
        let ids = server.generatedImageIDs(tag)
        var missing = 0
        for id in ids {
            for (folder, path) in [("full", "/\(id).jpg"), ("preview", "/\(id)m.jpg")] {
                let file = dir.appendingPathComponent(folder + path).path
                if TestSupport.digest(ofFile: file) != TestSupport.digest(server.content(of: path)) { missing += 1 }
            }
        }
        #expect(missing == 0, "\(missing) of \(ids.count * 2) files missing or wrong")
    }

    @Test func aTagOf24PagesCompletesWithin7RunsOf40CallsAndNoAlbumIsAskedForTwice() async throws {
        try await TestSupport.withServer { server in
            // 24 pages of 12 entries; every second entry an album of 3 images the page does not embed.
            server.addGeneratedTag("huge", pages: 24, perPage: 12, albumEvery: 2, imagesPerAlbum: 3, imageSize: 2048)
            server.setRateLimit(userRemaining: 40, userReset: 1, userLimit: 40, refills: false)
            try await TestSupport.withTemporaryDirectory { dir in
                var runs: [(summary: MirrorSummary, apiCalls: Int, files: Int)] = []
                while runs.count < 7 {
                    let (summary, calls) = try await run("huge", server, into: dir)
                    runs.append((summary, calls, mirroredFiles(in: dir)))
                    if summary.isComplete { break }
                    // Stopped by the budget, not by anything else, and nothing failed.
                    #expect((summary.stoppedBy?.imgurError)?.kind == .rateLimited)
                    #expect(summary.failures.isEmpty)
                    try await newHour(server, calls: 40)
                }
                #expect(runs.last?.summary.isComplete == true, "not complete after \(runs.count) runs")
                #expect(runs.count <= 7)
                for (index, run) in runs.enumerated() {
                    #expect(run.apiCalls <= 40, "run \(index + 1) made \(run.apiCalls) API calls")
                    if index > 0 { #expect(run.files > runs[index - 1].files, "run \(index + 1) mirrored nothing new") }
                }
                // Every one of the 144 albums was asked for exactly once over all runs.
                let albums = server.generatedAlbumIDs("huge")
                #expect(albums.count == 144)
                let askedTwice = albums.filter { server.requestCount(path: "/3/album/\($0)/images") != 1 }
                #expect(askedTwice.isEmpty, "albums not asked for exactly once: \(askedTwice.prefix(5))")
                expectWholeMirror(of: "huge", server, in: dir)

                // Once complete, a run reads the head of the listing only and fetches no media.
                try await newHour(server, calls: 40)
                let mediaBefore = server.requests.count { !$0.path.hasPrefix("/3/") }
                let (rerun, calls) = try await run("huge", server, into: dir)
                #expect(rerun.isComplete)
                #expect(calls == 1)
                #expect(server.requests.count { !$0.path.hasPrefix("/3/") } == mediaBefore)
            }
        }
    }

    @Test func newPostsPushedOntoTheHeadDuringAPassAreNotSkipped() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("busy", pages: 10, perPage: 12, albumEvery: 4, imagesPerAlbum: 2, imageSize: 1024)
            server.setRateLimit(userRemaining: 16, userReset: 1, userLimit: 16, refills: false)
            try await TestSupport.withTemporaryDirectory { dir in
                // The first pass: 30 new posts arrive between each of its first three runs, moving
                // every entry two and a half pages down the listing.
                for _ in 0..<3 {
                    let (summary, _) = try await run("busy", server, into: dir)
                    #expect(summary.failures.isEmpty)
                    #expect(summary.listing?.nextPage != nil, "the first pass should need more runs")
                    server.prependToGeneratedTag("busy", count: 30, albumEvery: 4, imagesPerAlbum: 2, imageSize: 1024)
                    try await newHour(server, calls: 16)
                }
                // Then runs until one finds the head of the listing already known.
                var settled = false
                for _ in 0..<15 {
                    let (summary, _) = try await run("busy", server, into: dir)
                    #expect(summary.failures.isEmpty)
                    if summary.isComplete, summary.listing?.pagesRead == 1 {
                        settled = true
                        break
                    }
                    try await newHour(server, calls: 16)
                }
                #expect(settled)
                expectWholeMirror(of: "busy", server, in: dir)
            }
        }
    }

    @Test func aDeletedAlbumIsReportedOnceAndKeepsTheEarlyStop() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("gone", pages: 3, perPage: 12, albumEvery: 3, imagesPerAlbum: 2, imageSize: 1024)
            let deleted = try #require(server.generatedAlbumIDs("gone").first)
            server.inject(
                .imgurLegacyError(status: 404, message: "Unable to find an album with the id, \(deleted)"),
                path: "/3/album/\(deleted)/images", times: 100)
            try await TestSupport.withTemporaryDirectory { dir in
                let (first, _) = try await run("gone", server, into: dir)
                #expect(first.removedAlbums == [deleted])
                #expect(first.isComplete)
                // New posts arrive; the next run reads only the head, and says nothing of the album.
                server.prependToGeneratedTag("gone", count: 3, albumEvery: 0, imageSize: 1024)
                let (second, calls) = try await run("gone", server, into: dir)
                #expect(second.removedAlbums.isEmpty)
                #expect(second.isComplete)
                #expect(second.downloaded == 6)
                #expect(calls == 1)
                #expect(server.requestCount(path: "/3/album/\(deleted)/images") == 1)
                #expect(server.requestCount(path: "/3/gallery/t/gone/time/all/1") == 1)
            }
        }
    }

    @Test func imagesListedBeforeACancelAreMirroredByTheNextRunWithoutListingThemAgain() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("slow", pages: 2, perPage: 12, albumEvery: 0, imageSize: 64 << 10)
            for id in server.generatedImageIDs("slow") {
                server.inject(.throttle(bytesPerSecond: 8 << 10), path: "/\(id).jpg")
            }
            try await TestSupport.withTemporaryDirectory { dir in
                let running = Task { try await run("slow", server, into: dir) }
                // Alone this takes a fifth of a second; in a full test run on two cores it once
                // took over 30 s. The bound only ends a run that never lists: the images of the
                // second page start after it is listed and take 8 s, so the cancel still cuts them.
                try await eventually("the listing is read", within: .seconds(180)) {
                    guard let state = (try? MirrorDirectory(root: dir)).flatMap(StateDatabase.forReading) else { return false }
                    return (try? await state.cursor(for: "imgur tag slow time all"))?.pass == 1
                }
                running.cancel()
                let (cut, _) = try await running.cancellableValue
                #expect(cut.interrupted)
                server.clearFaults()
                let (next, calls) = try await run("slow", server, into: dir)
                #expect(next.isComplete)
                // The listing was complete: only the head is read again, yet every image arrives.
                #expect(calls == 1)
                expectWholeMirror(of: "slow", server, in: dir)
            }
        }
    }

    @Test func downloadsStartAfterTheFirstPageNotAfterTheLast() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("stream", pages: 3, perPage: 12, albumEvery: 0, imageSize: 1024)
            // The second page takes a second to come: the first page's files need not wait for it.
            server.inject(.stall(afterBytes: 0, seconds: 1), path: "/3/gallery/t/stream/time/all/1")
            try await TestSupport.withTemporaryDirectory { dir in
                let (summary, _) = try await run("stream", server, into: dir)
                #expect(summary.isComplete)
                let paths = server.requests.map(\.path)
                let thirdPage = try #require(paths.firstIndex(of: "/3/gallery/t/stream/time/all/2"))
                let media = paths.enumerated().filter { !$0.element.hasPrefix("/3/") }.map(\.offset)
                #expect(media.count == 2 * 36)
                // Downloading began before the listing went past the second page, which took a
                // second to come (how many files in that second depends on the machine's load).
                #expect(!media.filter { $0 < thirdPage }.isEmpty)
                expectWholeMirror(of: "stream", server, in: dir)
            }
        }
    }

    @Test func theDailyBudgetIsKeptEvenWhenTheAPISaysNothingOfItsReset() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("daily", pages: 4, perPage: 12, albumEvery: 0, imageSize: 1024)
            server.setRateLimit(userRemaining: 500, clientRemaining: 7)
            try await TestSupport.withTemporaryDirectory { dir in
                let (first, calls) = try await run("daily", server, into: dir)
                // 7 left, 5 kept in hand: two calls, then stop ("try later").
                #expect(calls == 2)
                #expect((first.stoppedBy?.imgurError)?.kind == .rateLimited)
                #expect(first.downloaded == 48)
                // The next run knows the daily budget is spent without asking.
                let (second, again) = try await run("daily", server, into: dir)
                #expect(again == 0)
                #expect((second.stoppedBy?.imgurError)?.kind == .rateLimited)
            }
        }
    }

    @Test func anAlbumThatKeepsFailingIsRetriedForThreeRunsThenReportedOnceAndNeverBlocksThePages() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("broken", pages: 2, perPage: 12, albumEvery: 4, imagesPerAlbum: 2, imageSize: 1024)
            let album = try #require(server.generatedAlbumIDs("broken").first)
            server.inject(.imgurLegacyError(status: 500, message: "Internal error"), path: "/3/album/\(album)/images", times: 1000)
            try await TestSupport.withTemporaryDirectory { dir in
                let (first, _) = try await run("broken", server, into: dir)
                // The pages are read past it, and every other album is expanded.
                #expect(server.requestCount(path: "/3/gallery/t/broken/time/all/2") == 1)
                #expect(first.problems.isEmpty)
                #expect(first.stoppedBy == nil)
                let (second, _) = try await run("broken", server, into: dir)
                #expect(second.problems.isEmpty)
                let (third, _) = try await run("broken", server, into: dir)
                #expect(third.problems.count == 1)
                #expect(third.problems.first?.contains(album) == true)
                let asked = server.requestCount(path: "/3/album/\(album)/images")
                let (fourth, calls) = try await run("broken", server, into: dir)
                #expect(fourth.problems.isEmpty)
                #expect(fourth.isComplete)
                #expect(calls == 1)
                #expect(server.requestCount(path: "/3/album/\(album)/images") == asked)
                let others = server.generatedAlbumIDs("broken").filter { $0 != album }
                #expect(others.allSatisfy { server.requestCount(path: "/3/album/\($0)/images") == 1 })
            }
        }
    }

    @Test func anAlbumWhoseWaitIsCutShortByACancelStaysPending() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("wait", pages: 1, perPage: 4, albumEvery: 4, imagesPerAlbum: 2, imageSize: 1024)
            let album = try #require(server.generatedAlbumIDs("wait").first)
            server.inject(.imgurGatewayTooManyRequests(retryAfter: 30), path: "/3/album/\(album)/images")
            try await TestSupport.withTemporaryDirectory { dir in
                let client = ImgurClient(
                    apiBase: server.baseURL, clientID: "fixture", engine: engine,
                    politeness: .init(maxWait: .seconds(60)), logger: TestSupport.logger)
                let settings = TagRun.Settings(
                    crawl: TagCrawler.Options(tag: "wait"), urls: MediaURLBuilder(mediaBase: server.baseURL))
                let mirror = try TagRun(
                    directory: try MirrorDirectory(root: dir), client: client, engine: engine, settings: settings,
                    logger: TestSupport.logger)
                let running = Task { await mirror.run() }
                try await eventually("the album is asked for", within: .seconds(30)) { server.requestCount(path: "/3/album/\(album)/images") == 1 }
                running.cancel()
                #expect(await running.value.interrupted)
                #expect(try await mirror.driver.runner.state.pendingAlbums(listedBy: "", orShownBy: []).map(\.id) == [album])
                // Nor does the cancel count against the album, as a failure of its own would.
                let failures = try await (mirror.driver.runner.state as! StateDatabase).read("SELECT failures FROM albums WHERE id = ?1", [.text(album)])
                #expect(failures.first?.first?.integer == 0)
                let (next, _) = try await run("wait", server, into: dir)
                #expect(next.isComplete)
                expectWholeMirror(of: "wait", server, in: dir)
            }
        }
    }

    @Test func aPassCutByPagesLeavesNoGapForALaterFullRun() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("gap", pages: 3, perPage: 12, albumEvery: 0, imageSize: 1024)
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await run("gap", server, into: dir)
                // Three pages of new posts; a run limited to two pages reads only the first two.
                server.prependToGeneratedTag("gap", count: 36, albumEvery: 0, imageSize: 1024)
                _ = try await run("gap", server, into: dir, pages: 2)
                // A full run must still reach the third page of new posts, and stop at the page
                // where what the first, full pass saw begins (page 3), not read the rest again.
                let (full, _) = try await run("gap", server, into: dir)
                #expect(full.isComplete)
                expectWholeMirror(of: "gap", server, in: dir)
                #expect(server.requestCount(path: "/3/gallery/t/gap/time/all/3") == 2)
                #expect(server.requestCount(path: "/3/gallery/t/gap/time/all/4") == 0)
            }
        }
    }

    @Test func whatOneListingLeftIsMirroredByAnotherListingsRunInTheSameDirectory() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("two", pages: 3, perPage: 12, albumEvery: 2, imagesPerAlbum: 2, imageSize: 1024)
            server.setRateLimit(userRemaining: 12, userReset: 1, userLimit: 12, refills: false)
            try await TestSupport.withTemporaryDirectory { dir in
                let (top, _) = try await run("two", server, into: dir, sort: .top)
                #expect((top.stoppedBy?.imgurError)?.kind == .rateLimited)
                try await newHour(server, calls: 500)
                // The same tag by time: its run expands the albums and mirrors the images the
                // top listing found, as well as its own.
                let (time, _) = try await run("two", server, into: dir, sort: .time)
                #expect(time.isComplete)
                expectWholeMirror(of: "two", server, in: dir)
                #expect(server.generatedAlbumIDs("two").allSatisfy { server.requestCount(path: "/3/album/\($0)/images") == 1 })
            }
        }
    }

    @Test func anOutageOfTheAPIDoesNotCountAgainstThePendingAlbums() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("outage", pages: 1, perPage: 4, albumEvery: 4, imagesPerAlbum: 2, imageSize: 1024)
            let album = try #require(server.generatedAlbumIDs("outage").first)
            let albumPath = "/3/album/\(album)/images"
            try await TestSupport.withTemporaryDirectory { dir in
                // The album fails once while the API answers otherwise: that counts.
                server.inject(.imgurLegacyError(status: 500, message: "Internal error"), path: albumPath, times: 2)
                _ = try await run("outage", server, into: dir)
                // Then the whole API is down for five runs: the album is tried first each time,
                // and the listing fails too; none of that is the album's fault.
                for _ in 0..<5 {
                    server.inject(.imgurLegacyError(status: 500, message: "Internal error"), path: albumPath, times: 2)
                    server.inject(.imgurLegacyError(status: 503, message: "Down"), path: "/3/gallery/t/outage/time/all/0", times: 2)
                    let (down, _) = try await run("outage", server, into: dir)
                    #expect(down.stoppedBy != nil)
                    #expect(down.problems.isEmpty)
                }
                // Back up: the album is still pending, and now mirrored.
                let (back, _) = try await run("outage", server, into: dir)
                #expect(back.isComplete)
                expectWholeMirror(of: "outage", server, in: dir)
            }
        }
    }

    /// A tag page with no items, as Imgur sends one, stating the tag's size as `total`.
    private static func emptyPage(of tag: String, statingTotal total: Int) -> String {
        #"{"data":{"name":"\#(tag)","total_items":\#(total),"items":[]},"success":true,"status":200}"#
    }

    @Test func anEmptyPageInTheMiddleOfTheListingIsNotTakenForItsEnd() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("glitch", pages: 4, perPage: 12, albumEvery: 0, imageSize: 1024)
            let empty = Self.emptyPage(of: "glitch", statingTotal: 48)
            server.inject(.respond(status: 200, body: empty), path: "/3/gallery/t/glitch/time/all/2")
            try await TestSupport.withTemporaryDirectory { dir in
                let (first, _) = try await run("glitch", server, into: dir)
                #expect(first.listing?.nextPage != nil, "the pass must stay open")
                let (second, _) = try await run("glitch", server, into: dir)
                #expect(second.isComplete)
                #expect(second.listing?.nextPage == nil)
                expectWholeMirror(of: "glitch", server, in: dir)
            }
        }
    }

    @Test func anEmptyPageSeenTwiceIsTheEndWhateverTheStatedSize() async throws {
        try await TestSupport.withServer { server in
            // Page 0 says 36 entries; page 1 comes back empty in two runs running.
            server.addGeneratedTag("stale", pages: 3, perPage: 12, albumEvery: 0, imageSize: 1024)
            let empty = Self.emptyPage(of: "stale", statingTotal: 36)
            server.inject(.respond(status: 200, body: empty), path: "/3/gallery/t/stale/time/all/1", times: 2)
            try await TestSupport.withTemporaryDirectory { dir in
                let (first, _) = try await run("stale", server, into: dir)
                #expect(first.listing?.nextPage == 1)
                let (second, _) = try await run("stale", server, into: dir)
                #expect(second.listing?.nextPage == nil, "seen empty twice: the end")
            }
        }
    }

    @Test func anOverstatedTagWhoseEndMovesDownWithNewPostsStillCompletes() async throws {
        try await TestSupport.withServer { server in
            // The API says 120 entries and lists 36; new posts arrive between runs, moving the
            // empty page down a page each time.
            server.addGeneratedTag("moving", pages: 3, perPage: 12, albumEvery: 0, imageSize: 1024)
            server.overstateGeneratedTag("moving", by: 84)
            try await TestSupport.withTemporaryDirectory { dir in
                var complete = false
                for _ in 0..<4 {
                    let (summary, _) = try await run("moving", server, into: dir)
                    if summary.listing?.nextPage == nil { complete = true; break }
                    server.prependToGeneratedTag("moving", count: 12, albumEvery: 0, imageSize: 1024)
                }
                #expect(complete, "the pass never completed")
            }
        }
    }

    @Test func aSuspicionProvedWrongDoesNotConfirmALaterGlitch() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("twice", pages: 4, perPage: 12, albumEvery: 0, imageSize: 1024)
            // An empty page that even states a total of 0: no proof of the end either.
            let empty = Self.emptyPage(of: "twice", statingTotal: 0)
            server.inject(.respond(status: 200, body: empty), path: "/3/gallery/t/twice/time/all/1")
            try await TestSupport.withTemporaryDirectory { dir in
                let (first, _) = try await run("twice", server, into: dir)
                #expect(first.listing?.nextPage == 1)
                // Page 1 has its entries after all; then page 2 glitches once.
                server.inject(.respond(status: 200, body: empty), path: "/3/gallery/t/twice/time/all/2")
                let (second, _) = try await run("twice", server, into: dir)
                #expect(second.listing?.nextPage == 2, "a new suspicion, not a confirmed end")
                let (third, _) = try await run("twice", server, into: dir)
                #expect(third.isComplete)
                expectWholeMirror(of: "twice", server, in: dir)
            }
        }
    }
}
