import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

@Suite("mirror status: the run going on, or the last one, and what the next will retry", .timeLimit(.minutes(2)))
struct StatusCommandTests {
    @Test func duringTheCrawlItSaysTheCrawlIsRunning() async throws {
        try await TestSupport.withServer { server in
            // Page 0 takes long to come: no download starts while the test looks.
            server.inject(.stall(afterBytes: 0, seconds: 30), path: "/3/gallery/t/cats/time/all/0")
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try ChildProcess(
                    executable: MirrorProcess.executable.path,
                    arguments: MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile)
                ).start()
                var seen: MirrorProcess.Run?
                for _ in 0..<30 {
                    try await Task.sleep(for: .milliseconds(100))
                    guard FileManager.default.fileExists(atPath: out + "/.mirror") else { continue }
                    let status = try await MirrorProcess.run(["status", "--out", out])
                    // The first status a run writes may come before the crawl has asked for a page.
                    if status.stdout.hasPrefix("running:"), status.stdout.contains("page 0") {
                        seen = status
                        break
                    }
                }
                let status = try #require(seen, "status never said a run was going on")
                #expect(status.stdout.contains("running: tag cats, pid "), "\(status.stdout)")
                #expect(status.stdout.contains("phase: crawling, page 0"), "\(status.stdout)")
                #expect(server.requestCount(path: "/aB3dE5f.jpg") == 0)
                let json = try await MirrorProcess.run(["status", "--out", out, "--json"])
                let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
                let running = try #require(object["running"] as? [String: Any])
                #expect((running["progress"] as? [String: Any])?["phase"] as? String == "crawling")
                // Stopped as a person would: the crawl is cut short, nothing is lost.
                run.signal(SIGTERM)
                #expect(await run.wait() == .exited(143))
            }
        }
    }

    @Test func afterARunItShowsTheLastRunAndTheFailuresToRetry() async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 500), path: "/Gh7iJ9k.png")
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + [
                    "--retries", "1",
                ])
                #expect(run.status == 1)
                let status = try await MirrorProcess.run(["status", "--out", out])
                #expect(status.status == 0)
                let lines = status.stdout.split(separator: "\n").map(String.init)
                #expect(lines.first == "no run in progress")
                #expect(lines.contains { $0.hasPrefix("last run: tag cats, ") && $0.hasSuffix("exit status 1") }, "\(lines)")
                let summaryLine = try #require(run.stdout.split(separator: "\n").first)
                #expect(lines.contains("  " + summaryLine.dropFirst("cats: ".count)), "\(lines)")
                #expect(lines.contains("  failed, to be tried again by the next run:"), "\(lines)")
                #expect(lines.contains("    \(server.baseURL)/Gh7iJ9k.png: HTTP 500"), "\(lines)")
                #expect(lines.contains { $0.hasPrefix("imgur tag cats time all:") }, "\(lines)")
                #expect(lines.contains { $0.hasPrefix("Imgur API budget at the last call") }, "\(lines)")

                let json = try await MirrorProcess.run(["status", "--out", out, "--json"])
                let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
                #expect(object["running"] is NSNull)
                #expect(object["older_schema"] is NSNull)
                let last = try #require((object["last_runs"] as? [[String: Any]])?.first)
                #expect(last["exit_status"] as? Int == 1)
                #expect(last["files_failed"] as? Int == 1)
                let retry = try #require(object["failures_to_retry"] as? [[String: String]])
                #expect(retry.map { $0["url"] } == ["\(server.baseURL)/Gh7iJ9k.png"])
                // The image whose file failed is still pending: the next run tries it first.
                #expect(object["images_pending"] as? Int == 1)
                let crawls = try #require(object["crawls"] as? [[String: Any]])
                #expect(crawls.first?["source"] as? String == "imgur tag cats time all")
                #expect((object["budget"] as? [String: Any])?["user_remaining"] != nil)
                #expect((object["files"] as? [String: Int])?["files"] == 25)
            }
        }
    }

    @Test func aMirrorLastRunByTheVersionBeforeStillShowsItsCrawlsAndFiles() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile))
                #expect(run.status == 0)
                // Back to schema 3: as the previous version of mirror left it.
                let db = try SQLiteConnection.open(out + "/.mirror/state.sqlite3")
                try db.script("DROP TABLE runs; ALTER TABLE albums DROP COLUMN context; PRAGMA user_version = 3;")
                let status = try await MirrorProcess.run(["status", "--out", out])
                #expect(status.status == 0)
                #expect(status.stdout.contains("imgur tag cats time all:"), "\(status.stdout)")
                #expect(status.stdout.contains("mirrored: 26 files of 26 items"), "\(status.stdout)")
                #expect(status.stdout.contains("schema 3, from an older mirror; the next run upgrades it"), "\(status.stdout)")
                let versions = try await MirrorProcess.run(["status", "--out", out, "--versions", "aB3dE5f.jpg"])
                #expect(versions.status == 0, "\(versions.stderr)")
            }
        }
    }
}
