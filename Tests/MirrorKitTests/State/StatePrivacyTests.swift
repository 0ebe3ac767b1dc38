import Foundation
import Testing
@testable import MirrorKit

/// What the state keeps of private feeds, and who may read it.
@Suite("The state keeps no password and is the user's alone")
struct StatePrivacyTests {
    /// A database as version 6 (before migration 7) left it, with what it wrote of a private feed.
    private static func makeVersion6Database(at path: String) throws {
        // Closed when it goes, at the end of this function.
        let db = try SQLiteConnection.open(path)
        for migration in StateSchema.migrations where migration.version <= 6 {
            try db.script(migration.sql)
        }
        try db.script("PRAGMA user_version = 6")
        let feed = "feed https://reader:hunter2@feeds.example/private.rss"
        try db.execute(
            "INSERT INTO files (path, item, source, url, bytes, mirrored_at, checked_at) VALUES (?1, ?2, ?3, ?4, 10, 't', 't')",
            [.text("enclosures/a.mp3"), .text("url https://reader:hunter2@feeds.example/a.mp3"), .text(feed),
             .text("https://reader:hunter2@feeds.example/a.mp3")])
        try db.execute(
            "INSERT INTO files (path, item, source, url, bytes, mirrored_at, checked_at) VALUES (?1, ?2, ?3, ?4, 10, 't', 't')",
            [.text("enclosures/b.mp3"), .text("entry https://reader:hunter2@feeds.example/private.rss b"), .text(feed),
             .text("https://cdn.example/b.mp3")])
        try db.execute(
            "INSERT INTO runs (source, started_at, ended_at, exit_status, record) VALUES (?1, 1, 2, 0, ?2)",
            [.text(feed), .text(#"{"source":"feed https:\/\/reader:hunter2@feeds.example\/private.rss"}"#)])
        try db.execute("INSERT INTO removed (url, seen_at) VALUES (?1, 't')", [.text("https://reader:hunter2@feeds.example/gone.mp3")])
    }

    @Test func anEarlierVersionsPasswordsAreWrittenOverWhenTheStateIsOpened() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(".mirror"), withIntermediateDirectories: true)
            let path = dir.appendingPathComponent(".mirror/state.sqlite3").path
            try Self.makeVersion6Database(at: path)
            _ = try StateDatabase(directory: try MirrorDirectory(root: dir))
            let db = try SQLiteConnection.open(path)
            let rows = try db.rows("SELECT path, item, source, url FROM files ORDER BY path")
            #expect(try rows.map { try $0.text("source") } == Array(repeating: "feed https://***@feeds.example/private.rss", count: 2))
            // Fetched URLs lose the userinfo, as this version's never have one; names show `***`.
            #expect(try rows.map { try $0.text("item") } == ["url https://feeds.example/a.mp3", "entry https://***@feeds.example/private.rss b"])
            #expect(try rows.map { try $0.text("url") } == ["https://feeds.example/a.mp3", "https://cdn.example/b.mp3"])
            #expect(try db.rows("SELECT source FROM runs").map { try $0.text("source") } == ["feed https://***@feeds.example/private.rss"])
            #expect(try db.rows("SELECT url FROM removed").map { try $0.text("url") } == ["https://feeds.example/gone.mp3"])
            #expect(try db.rows("SELECT record FROM runs").first?.text("record").contains("hunter2") == false)
                let bytes = try Data(contentsOf: URL(fileURLWithPath: path)) + ((try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data())
            #expect(bytes.firstRange(of: Data("hunter2".utf8)) == nil)
        }
    }

    /// Version 7 stored a guid that is a private feed's link as it came, login and all, in the
    /// entry's item; this version names the entry with the login as `***`. The item an existing
    /// mirror holds must become that name (else its files are fetched again as new ones), and the
    /// password must go from the file.
    @Test func anEntryIDWithALoginThatVersion7StoredIsTheItemThisVersionNames() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(".mirror"), withIntermediateDirectories: true)
            let path = dir.appendingPathComponent(".mirror/state.sqlite3").path
            do {
                let db = try SQLiteConnection.open(path)
                for migration in StateSchema.migrations where migration.version <= 7 { try db.script(migration.sql) }
                try db.script("PRAGMA user_version = 7")
                try db.execute(
                    "INSERT INTO files (path, item, source, url, bytes, mirrored_at, checked_at) VALUES (?1, ?2, ?3, ?4, 10, 't', 't')",
                    [.text("enclosures/ep3.mp3"), .text("entry https://***@feeds.example/private.rss https://reader:s3cret@host.example/ep3.mp3"),
                     .text("feed https://***@feeds.example/private.rss"), .text("https://host.example/ep3.mp3")])
            }
            _ = try StateDatabase(directory: try MirrorDirectory(root: dir))
            let db = try SQLiteConnection.open(path)
            let items = try db.rows("SELECT item FROM files").map { try $0.text("item") }
            let named = URLUserinfo.redacting(in: "https://reader:s3cret@host.example/ep3.mp3")
            #expect(items == ["entry https://***@feeds.example/private.rss \(named)"])
            #expect(!named.contains("s3cret"))
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path)) + ((try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data())
            #expect(bytes.firstRange(of: Data("s3cret".utf8)) == nil)
        }
    }

    @Test func theStateFolderAndDatabaseAreTheUsersAloneWhateverTheUmaskMadeThem() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let folder = dir.appendingPathComponent(".mirror").path
            // What an earlier version left: the folder as umask 022 makes it, the database as umask 000 does.
            #expect(mkdir(folder, 0o755) == 0 && chmod(folder, 0o755) == 0)
            for name in ["state.sqlite3", "state.sqlite3-wal"] {
                #expect(FileManager.default.createFile(atPath: folder + "/" + name, contents: nil))
                #expect(chmod(folder + "/" + name, 0o666) == 0)
            }
            let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
            try await state.recordRemoved("https://h.example/x")
            var info = stat()
            #expect(stat(folder, &info) == 0 && info.st_mode & 0o777 == 0o700)
            for name in ["state.sqlite3", "state.sqlite3-wal", "state.sqlite3-shm"] {
                #expect(stat(folder + "/" + name, &info) == 0 && info.st_mode & 0o777 == 0o600, "\(name)")
            }
            _ = state
        }
    }
}
