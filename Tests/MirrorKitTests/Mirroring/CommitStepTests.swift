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
}
