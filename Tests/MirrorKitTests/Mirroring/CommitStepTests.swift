import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// The steps of a commit (synced, named and dated, recorded, its record taken off, announced) in
/// the order a kill between any two of them needs: what the next run finds is either finished or
/// tells it what is left.
@Suite("A commit's steps, in the order a kill needs", .timeLimit(.minutes(2)))
struct CommitStepTests {
    /// A file has the server's date from its name on, before its row: once the row is written
    /// nothing dates a recorded file later, so a kill before the rest of the commit (a group of
    /// rows written, the files' continuations not yet run) left it dated as downloaded. One row
    /// is made slow to write (a trigger counting a large cross join) and its file watched
    /// meanwhile: it must carry the server's date before its row is there.
    @Test func aFileIsDatedBeforeItsRowIsWritten() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let path = "enclosures/episode-1.mp3"
                let served = try #require(server.lastModified(of: "/files/episode-1.mp3").flatMap { HTTPDate.parse($0) })
                #expect(served < Date().addingTimeInterval(-86_400), "a date no download could be mistaken for")
                _ = try StateDatabase(directory: try MirrorDirectory(root: dir))
                let databasePath = dir.appendingPathComponent(".mirror/state.sqlite3").path
                try SQLiteConnection.open(databasePath).script("""
                    CREATE TABLE slow(n INTEGER);
                    WITH RECURSIVE c(n) AS (VALUES(1) UNION ALL SELECT n + 1 FROM c WHERE n < 400) INSERT INTO slow SELECT n FROM c;
                    CREATE TRIGGER slow_row BEFORE INSERT ON files WHEN NEW.path = '\(path)'
                        BEGIN SELECT count(*) FROM slow a, slow b, slow c; END;
                    """)
                let settings = FeedRun.Settings(feedURL: "\(server.baseURL)/feeds/podcast.rss", mode: .skipIfExists, retry: RetryPolicy(maxAttempts: 1))
                let run = try FeedRun(directory: try MirrorDirectory(root: dir), engine: TransferEngine(), settings: settings, logger: TestSupport.logger)
                let running = Task { await run.run() }
                let reader = try SQLiteConnection.open(databasePath, readOnly: true)
                let file = dir.appendingPathComponent(path).path
                var seen = "nothing"
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    let dated = (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate] as? Date == served
                    let recorded = try !reader.rows("SELECT 1 FROM files WHERE path = ?1", [.text(path)]).isEmpty
                    if dated, !recorded {
                        seen = "dated, no row yet"
                        break
                    }
                    if recorded {
                        seen = "the row before the date"
                        break
                    }
                    try await Task.sleep(for: .milliseconds(1))
                }
                #expect(seen == "dated, no row yet")
                #expect(await running.value.isComplete)
            }
        }
    }
    /// A file fetched from a mirror (its own URL failing) carries the mirror's record: a kill
    /// between its name and its row left it for the next run, whose job is the entry's own URL
    /// again, to find by that record rather than take for somebody else's file.
    @Test(arguments: [DownloadMode.skipIfExists, .newFile])
    func aFileFetchedFromAMirrorAndNamedBeforeAKillIsRecordedByTheNextRun(mode: DownloadMode) async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 404), path: "/files/Python.tgz")
            try await TestSupport.withTemporaryDirectory { dir in
                let settings = FeedRun.Settings(feedURL: "\(server.baseURL)/feeds/Python.xml", mode: mode, retry: RetryPolicy(maxAttempts: 1))
                let first = try FeedRun(directory: try MirrorDirectory(root: dir), engine: TransferEngine(), settings: settings, logger: TestSupport.logger)
                #expect(await first.run().isComplete)
                let path = "enclosures/Python.tgz"
                let mirrorURL = server.baseURL + "/mirror-b/Python.tgz"
                let bytes = try #require(server.content(of: "/mirror-b/Python.tgz"))
                // As a kill between the rename and the row leaves it: named, carrying its record.
                let database = try SQLiteConnection.open(dir.appendingPathComponent(".mirror/state.sqlite3").path)
                try database.execute("DELETE FROM files WHERE path = ?1", [.text(path)])
                let record = PartialRecord(
                    url: mirrorURL, etag: server.etag(of: "/mirror-b/Python.tgz"), lastModified: server.lastModified(of: "/mirror-b/Python.tgz"),
                    totalLength: Int64(bytes.count))
                let fd = open(dir.appendingPathComponent(path).path, O_WRONLY)
                try #require(fd >= 0)
                #expect(PartialStore.attachForCommit(record, toFile: fd))
                close(fd)
                let requested = server.requestCount(path: "/mirror-b/Python.tgz")
                let second = try FeedRun(directory: try MirrorDirectory(root: dir), engine: TransferEngine(), settings: settings, logger: TestSupport.logger)
                let summary = await second.run()
                #expect(summary.isComplete)
                let rows = try database.rows("SELECT url FROM files WHERE path = ?1", [.text(path)])
                #expect(rows.count == 1, "recorded again")
                let recordedURL = try rows.first?.text("url")
                // A new-file run asks the entry's own URL by the record's ETag, which confirms the
                // file as that URL's; a skip-if-exists run asks nothing and keeps the mirror's.
                #expect(recordedURL == (mode == .newFile ? server.baseURL + "/files/Python.tgz" : mirrorURL))
                #expect(server.requestCount(path: "/mirror-b/Python.tgz") == requested, "not fetched again")
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("enclosures").path)
                #expect(names == ["Python.tgz"], "no second copy")
                let enclosures = try MirrorDirectory(root: dir).rootFolder.folder("enclosures")
                #expect(enclosures.attribute(PartialStore.attribute, of: "Python.tgz", limit: 4096) == nil, "its record taken off")
            }
        }
    }
    /// A file over the compact record's size carries the full record, URL and all: a URL of
    /// kilobytes (a signed CDN link) does not fit an attribute. The file is saved; the run says,
    /// once, that a kill before its row would have the next run fetch it again.
    @Test func aFileNamedWithoutItsRecordIsSaidOnceARun() async throws {
        try await TestSupport.withServer { server in
            let signature = String(repeating: "s", count: 2_100)
            var items = ""
            for number in 1...2 {
                server.addMedia(path: "/files/long-\(number).bin", size: 1_500_000)
                items += """
                    <item><guid>long-\(number)</guid><enclosure url="\(server.baseURL)/files/long-\(number).bin?sig=\(signature)" \
                    length="1500000" type="application/octet-stream"/></item>
                    """
            }
            server.setFeed(path: "/feeds/signed.rss", bytes: Array(#"<?xml version="1.0"?><rss version="2.0"><channel><title>Signed</title>\#(items)</channel></rss>"#.utf8))
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run(["feed", "\(server.baseURL)/feeds/signed.rss", "--out", out])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stderr.components(separatedBy: "cannot attach the record").count == 2, "said once: \(run.stderr)")
                for number in 1...2 {
                    #expect(TestSupport.digest(ofFile: out + "/enclosures/long-\(number).bin") == TestSupport.digest(server.content(of: "/files/long-\(number).bin")))
                }
            }
        }
    }
}
