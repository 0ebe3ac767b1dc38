import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// Runs of the real `mirror` executable that end early on purpose: a media host that is down, a
/// deadline, a spent budget; and what `mirror status` says afterwards.
@Suite("Cron runs that stop early and carry on", .timeLimit(.minutes(2)))
struct CronRunTests {
    @Test func aMediaHostThatIsDownEndsTheRunWith75QuicklyAndTheNextRunCompletes() async throws {
        try await TestSupport.withServer { api in
            // A media host that was there, then went away: its port now refuses connections.
            let media = try await FixtureServer.start(fixtures: TestSupport.fixtures)
            let port = media.port
            try await media.stop()
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = [
                    "cats", "--out", out, "--client-id-file", idFile,
                    "--api-base", api.baseURL, "--media-base", "http://127.0.0.1:\(port)",
                ]
                let down = try await MirrorProcess.run(arguments)
                #expect(down.status == 75, "\(down.stderr)")
                #expect(down.elapsed < .seconds(60))
                let lines = down.stderr.split(separator: "\n")
                #expect(lines.count <= 2, "\(down.stderr)")
                #expect(lines.contains { $0.contains("127.0.0.1:\(port) is down") && $0.contains("left for the next run") })
                #expect(!FileManager.default.fileExists(atPath: out + "/full/aB3dE5f.jpg"))

                // The host is back: the next run mirrors everything, and asks for no album twice.
                let back = try await FixtureServer.start(fixtures: TestSupport.fixtures, port: port)
                let again = try await MirrorProcess.run(arguments)
                try await back.stop()
                #expect(again.status == 0, "\(again.stderr)")
                #expect(api.requestCount(path: "/3/album/Ef1gH/images") <= 1)
                #expect(api.requestCount(path: "/3/album/St6uV/images") <= 1)
                for id in TestSupport.catsImageIDs {
                    #expect(FileManager.default.fileExists(atPath: out + "/preview/\(id)m.jpg"), "\(id)")
                }
            }
        }
    }

    @Test func theDeadlineStopsTheRunWithZeroKeepsThePartialAndTheNextRunResumes() async throws {
        try await TestSupport.withServer { server in
            let size = 64 << 20
            // 64 s for the whole file against a 20 s deadline: room on both sides on a loaded machine.
            // The fixture server runs in the test process, whose few threads a full run keeps busy:
            // with 5 s, and later with 10 s, a full run on two cores sent no byte before the deadline.
            server.inject(.throttle(bytesPerSecond: 1 << 20), path: "/B1gF1le.jpg")
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = [
                    "bigfile", "--out", out, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ]
                let cut = try await MirrorProcess.run(arguments + ["--max-duration", "20s"])
                #expect(cut.status == 0, "\(cut.stderr)")
                // The deadline plus start-up and wind-down, on a loaded machine.
                #expect(cut.elapsed < .seconds(32))
                #expect(cut.stdout.contains("stopped at the --max-duration deadline"))
                #expect(!FileManager.default.fileExists(atPath: out + "/full/B1gF1le.jpg"))
                let partials = try FileManager.default.contentsOfDirectory(atPath: out + "/.mirror/partials")
                #expect(partials.contains { $0.hasSuffix(".part") })
                let sentBefore = server.bodyBytesSent(path: "/B1gF1le.jpg")
                #expect(sentBefore > 0 && sentBefore < size)

                let rest = try await MirrorProcess.run(arguments + ["--quiet"])
                #expect(rest.status == 0, "\(rest.stderr)")
                #expect(rest.stdout.isEmpty && rest.stderr.isEmpty)
                #expect(TestSupport.digest(ofFile: out + "/full/B1gF1le.jpg") == TestSupport.digest(server.content(of: "/B1gF1le.jpg")))
                #expect(Double(server.bodyBytesSent(path: "/B1gF1le.jpg")) <= Double(size) * 1.05)
            }
        }
    }

    @Test func filesThatFailedOutrankTheBudgetStop() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("many", pages: 12, perPage: 12, albumEvery: 2, imagesPerAlbum: 3, imageSize: 1024)
            server.setRateLimit(userRemaining: 30, userReset: 1800, userLimit: 500)
            let lost = try #require(server.generatedImageIDs("many").first)
            server.inject(.respond(status: 404, headers: [:], body: "gone"), path: "/\(lost).jpg", times: 10)
            try await MirrorProcess.withClientID { dir, idFile in
                let run = try await MirrorProcess.run([
                    "many", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile, "--quiet",
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                // The budget stopped the listing too, but a lost file is what cron must hear of.
                #expect(run.status == 1, "\(run.stderr)")
                #expect(run.stdout.contains("1 failed"), "\(run.stdout)")
                #expect(run.stdout.contains("the next run carries on"), "\(run.stdout)")
            }
        }
    }

    @Test func statusShowsTheCursorTheAlbumCacheAndTheBudget() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("many", pages: 12, perPage: 12, albumEvery: 2, imagesPerAlbum: 3, imageSize: 1024)
            server.setRateLimit(userRemaining: 30, userReset: 1800, userLimit: 500)
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run([
                    "many", "--out", out, "--client-id-file", idFile, "--quiet",
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(run.status == 75)
                // An expected stop for the budget says nothing under --quiet: the next run carries on.
                #expect(run.stdout.isEmpty && run.stderr.isEmpty, "\(run.stdout)\(run.stderr)")
                let status = try await MirrorProcess.run(["status", "--out", out])
                #expect(status.status == 0)
                #expect(status.stdout.contains("imgur tag many time all:"))
                #expect(status.stdout.contains(" of about 12 (newest entry at the head: G"), "\(status.stdout)")
                #expect(status.stdout.contains("albums: "))
                #expect(status.stdout.contains(" cached"))
                #expect(status.stdout.contains("5 of 500 calls left this hour"), "\(status.stdout)")
            }
        }
    }
}
