import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

@Suite("Mirroring a tag from the fixture server", .timeLimit(.minutes(2)))
struct TagRunTests {
    let engine = TransferEngine()

    private func run(
        _ server: FixtureServer, into dir: URL, clientID: String = "fixture", apiBase: String? = nil,
        pages: Int? = nil, mode: DownloadMode = .skipIfExists
    ) async throws -> MirrorSummary {
        let directory = try MirrorDirectory(root: dir)
        let client = ImgurClient(
            apiBase: apiBase ?? server.baseURL, clientID: clientID, engine: engine, logger: TestSupport.logger)
        let settings = TagRun.Settings(
            crawl: TagCrawler.Options(tag: "cats", maxPages: pages),
            urls: MediaURLBuilder(mediaBase: server.baseURL, thumbnail: .medium),
            mode: mode,
            retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5)))
        return try await TagRun(
            directory: directory, client: client, engine: engine, settings: settings, logger: TestSupport.logger
        ).run()
    }

    /// Serves page 0 of the fixture tag once more with one new image at the top, and that image.
    private func announceNewPost(_ id: String, on server: FixtureServer) throws {
        let page0 = try String(
            contentsOf: TestSupport.fixtures.appendingPathComponent("imgur/gallery-t-cats-0.json"), encoding: .utf8)
        let post = #"{"id":"\#(id)","type":"image\/jpeg","animated":false,"size":5000,"is_album":false},"#
        server.inject(
            .respond(status: 200, body: page0.replacingOccurrences(of: #""items":["#, with: #""items":["# + post)),
            path: "/3/gallery/t/cats/time/all/0")
        server.addMedia(path: "/\(id).jpg", size: 5000, contentType: "image/jpeg")
        server.addMedia(path: "/\(id)m.jpg", size: 1000, contentType: "image/jpeg")
    }

    /// The files a complete mirror of the fixture tag holds, relative path → server path.
    private func expectedFiles(_ server: FixtureServer) -> [String: String] {
        var files: [String: String] = [:]
        for path in server.mediaPaths {
            let name = String(path.dropFirst())
            guard let id = name.split(separator: ".").first.map(String.init) else { continue }
            if TestSupport.catsImageIDs.contains(id) {
                // An animated GIF is served as uploaded too; the mirror fetches its MP4.
                guard !(name.hasSuffix(".gif") && server.mediaPaths.contains("/\(id).mp4")) else { continue }
                files["full/\(name)"] = path
            } else if name.hasSuffix("m.jpg"), TestSupport.catsImageIDs.contains(String(id.dropLast())) {
                files["preview/\(name)"] = path
            }
        }
        return files
    }

    @Test func mirrorsEveryPreviewAndFullSizeFileByteForByte() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, into: dir)
                #expect(summary.isComplete)
                let expected = expectedFiles(server)
                #expect(expected.count == 2 * TestSupport.catsImageIDs.count)
                #expect(summary.downloaded == expected.count)
                // Rm0vEd1 redirects to removed.png: reported, not saved.
                #expect(summary.removed.count == 2)
                #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("full/Rm0vEd1.jpg").path))
                for (relative, served) in expected {
                    #expect(TestSupport.digest(ofFile: dir.appendingPathComponent(relative).path) == TestSupport.digest(server.content(of: served)),
                            "\(relative)")
                }
                let partials = try FileManager.default.contentsOfDirectory(
                    atPath: dir.appendingPathComponent(".mirror/partials").path)
                #expect(partials.isEmpty)
                // Files carry the server's Last-Modified (the fixture serves 2016-01-01T00:00:00Z).
                let attributes = try FileManager.default.attributesOfItem(
                    atPath: dir.appendingPathComponent("full/aB3dE5f.jpg").path)
                #expect((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 == 1_451_606_400)
            }
        }
    }

    @Test func expandsAlbumsOnlyWhenTheirEmbeddedImagesAreIncomplete() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await run(server, into: dir)
                #expect(server.requestCount(path: "/3/album/Ef1gH/images") == 1)  // no `images` at all
                #expect(server.requestCount(path: "/3/album/St6uV/images") == 1)  // 1 of 2 embedded
                #expect(server.requestCount(path: "/3/album/Qr5sT/images") == 0)  // complete
                // Za8bC9d sits in two albums: fetched once.
                #expect(server.requestCount(path: "/Za8bC9d.jpg") == 1)
                // The listing ends at the first empty page.
                #expect(server.requestCount(path: "/3/gallery/t/cats/time/all/2") == 1)
                #expect(server.requestCount(path: "/3/gallery/t/cats/time/all/3") == 0)
                #expect(server.requests.filter { $0.path.hasPrefix("/3/") }.allSatisfy {
                    $0.header("Authorization") == "Client-ID fixture"
                })
            }
        }
    }

    @Test func aSecondRunDownloadsNothing() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let first = try await run(server, into: dir)
                func mediaRequests() -> Int { server.requests.count { !$0.path.hasPrefix("/3/") } }
                let before = mediaRequests()
                let second = try await run(server, into: dir)
                #expect(first.isComplete)
                #expect(second.downloaded == 0)
                #expect(second.alreadyPresent == second.wanted)
                #expect(mediaRequests() == before)
            }
        }
    }

    @Test func removedMediaIsNotAskedForAgain() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await run(server, into: dir, pages: 2)
                let second = try await run(server, into: dir, pages: 2)
                // Settled in the first run (reported there): not even looked at again.
                #expect(second.wanted == 0)
                #expect(server.requestCount(path: "/Rm0vEd1.jpg") == 1)
                #expect(server.requestCount(path: "/Rm0vEd1m.jpg") == 1)
            }
        }
    }

    @Test func newFileModeDoesNotCopyWhatItAlreadyMirrored() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await run(server, into: dir, mode: .newFile)
                let second = try await run(server, into: dir, mode: .newFile)
                #expect(second.downloaded == 0)
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("full").path)
                #expect(!names.contains { $0.contains("(1)") })
            }
        }
    }

    @Test func newFileModeKeepsAFileThatIsNotOurs() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let full = dir.appendingPathComponent("full")
                try FileManager.default.createDirectory(at: full, withIntermediateDirectories: true)
                try TestSupport.write(Array("mine".utf8), to: full.appendingPathComponent("aB3dE5f.jpg").path)
                _ = try await run(server, into: dir, mode: .newFile)
                #expect(TestSupport.bytes(at: full.appendingPathComponent("aB3dE5f.jpg").path) == Array("mine".utf8))
                #expect(TestSupport.digest(ofFile: full.appendingPathComponent("aB3dE5f(1).jpg").path)
                    == TestSupport.digest(server.content(of: "/aB3dE5f.jpg")))
            }
        }
    }

    @Test func aDamagedStateDatabaseIsSetAsideAndNothingMirroredIsLost() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await run(server, into: dir)
                let database = dir.appendingPathComponent(".mirror/state.sqlite3").path
                unlink(database + "-wal")
                unlink(database + "-shm")
                try TestSupport.write(Array("this is not a database, just bytes".utf8), to: database)
                let second = try await run(server, into: dir)
                #expect(second.isComplete)
                #expect(second.downloaded == 0)
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent(".mirror").path)
                #expect(names.contains { $0.hasPrefix("state.sqlite3.damaged-") })
                #expect(TestSupport.digest(ofFile: dir.appendingPathComponent("full/aB3dE5f.jpg").path)
                    == TestSupport.digest(server.content(of: "/aB3dE5f.jpg")))
            }
        }
    }

    @Test func afterOneCompleteRunLaterRunsStopAtThePageWithNothingNew() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await run(server, into: dir)
                // A new post appears at the top of the newest-first listing.
                try announceNewPost("NewOne1", on: server)
                let second = try await run(server, into: dir)
                #expect(second.downloaded == 2)
                // Page 0 had news and entries the complete pass saw: nothing below it is asked for again.
                #expect(server.requestCount(path: "/3/gallery/t/cats/time/all/1") == 1)
                #expect(server.requestCount(path: "/3/gallery/t/cats/time/all/2") == 1)
                #expect(TestSupport.digest(ofFile: dir.appendingPathComponent("full/NewOne1.jpg").path)
                    == TestSupport.digest(server.content(of: "/NewOne1.jpg")))
            }
        }
    }

    @Test func anIncompleteFirstRunMakesTheNextReadEverything() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                _ = try await run(server, into: dir, pages: 1)
                _ = try await run(server, into: dir)
                #expect(server.requestCount(path: "/3/gallery/t/cats/time/all/1") == 1)
                #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("full/Qr5sT6u.jpg").path))
                // That second run read to the end: now a third can stop early.
                _ = try await run(server, into: dir)
                #expect(server.requestCount(path: "/3/gallery/t/cats/time/all/1") == 1)
            }
        }
    }

    @Test func cancellingARunStopsEveryDownloadPromptly() async throws {
        try await TestSupport.withServer { server in
            for path in server.mediaPaths where path.hasSuffix("m.jpg") {
                // Every request for it, a retry's or a restarted preview's too.
                server.inject(.throttle(bytesPerSecond: 16), path: path, times: 8)
            }
            try await TestSupport.withTemporaryDirectory { dir in
                let running = Task { try await run(server, into: dir) }
                try await eventually("thumbnails are downloading", within: .seconds(20)) {
                    server.requests.contains { $0.path.hasSuffix("m.jpg") }
                }
                let start = ContinuousClock.now
                running.cancel()
                let summary = try await running.cancellableValue
                // Left to finish, the thumbnails alone would take minutes at 16 B/s. Alone this
                // takes well under a second; in a full run on two loaded cores, 6 s and more were
                // seen, 15.5 s once: the bound tells stopping from waiting, not fast from slow.
                #expect(ContinuousClock.now - start < .seconds(60))
                #expect(summary.interrupted)
                for path in server.mediaPaths where path.hasSuffix("m.jpg") {
                    #expect(server.bodyBytesSent(path: path) < server.content(of: path)?.count ?? 0, "\(path) was sent whole")
                }
            }
        }
    }

    @Test func stopsAfterTheRequestedNumberOfPages() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, into: dir, pages: 1)
                #expect(summary.isComplete)
                #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("full/Qr5sT6u.jpg").path))
                #expect(server.requestCount(path: "/3/gallery/t/cats/time/all/1") == 0)
            }
        }
    }

    @Test func aRejectedClientIDStopsWithTheAPIsMessage() async throws {
        try await TestSupport.withServer { server in
            server.setAcceptedClientID("the-right-one")
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, into: dir, clientID: "wrong")
                let error = try #require(summary.stoppedBy?.imgurError)
                #expect(error.kind == .status(403))
                #expect(error.message == "Authentication required")
                #expect(summary.wanted == 0)
            }
        }
    }

    @Test func aPageOfTheWrongShapeStopsWithTheFieldNamed() async throws {
        try await TestSupport.withServer { server in
            server.inject(
                .respond(status: 200, body: #"{"data":{"items":[{"is_album":false,"title":"no id"}]},"success":true}"#),
                path: "/3/gallery/t/cats/time/all/0")
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, into: dir)
                let error = try #require(summary.stoppedBy?.imgurError)
                #expect(error.kind == .malformedResponse)
                #expect(error.message == "missing key 'id' at data.items[0]")
            }
        }
    }

    @Test func aGatewayTooManyRequestsIsWaitedOut() async throws {
        try await TestSupport.withServer { server in
            server.inject(.imgurGatewayTooManyRequests(retryAfter: 1), path: "/3/gallery/t/cats/time/all/1")
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, into: dir)
                #expect(summary.isComplete)
                #expect(server.requestCount(path: "/3/gallery/t/cats/time/all/1") == 2)
                #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("full/Qr5sT6u.jpg").path))
            }
        }
    }

    @Test func anUnreachableAPIIsReportedNotCrashedOn() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, into: dir, apiBase: "http://127.0.0.1:9")
                let error = try #require(summary.stoppedBy?.imgurError)
                #expect(error.kind == .unreachable)
            }
        }
    }

    @Test func aMissingFileFailsAloneAndNeverAppearsUnderItsName() async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 404, body: "gone"), path: "/aB3dE5f.jpg")
            server.inject(.dropAfter(bytes: 1000), path: "/Lm3nO4p.jpg", times: 3)
            try await TestSupport.withTemporaryDirectory { dir in
                let summary = try await run(server, into: dir)
                #expect(summary.failures.count == 2)
                #expect(summary.failures.contains { $0.reason == .httpStatus(404) })
                #expect(server.requestCount(path: "/Lm3nO4p.jpg") == 3)
                #expect(summary.downloaded == summary.wanted - 2 - summary.removed.count)
                #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("full/aB3dE5f.jpg").path))
                #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("full/Lm3nO4p.jpg").path))
            }
        }
    }
}
