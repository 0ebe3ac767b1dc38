import Foundation
import Testing
@testable import MirrorKit

@Suite("The state database: migrations, the crawl store", .timeLimit(.minutes(1)))
struct StateDatabaseTests {
    @Test func aVersion1DatabaseIsMigratedAndKeepsWhatItRecorded() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try MirrorDirectory(root: dir)
            let path = directory.stateDirectory.appendingPathComponent("state.sqlite3").path
            do {
                // A database as the first release wrote it.
                let v1 = try SQLiteConnection.open(path)
                try v1.script(StateSchema.migrations[0].sql + "PRAGMA user_version = 1;")
                try v1.execute(
                    "INSERT INTO mirrored (url, path, bytes, mirrored_at) VALUES ('https://i.test/a.jpg', 'full/a.jpg', 5, 'x')")
                try v1.execute("INSERT INTO listings (source, completed_at) VALUES ('imgur tag cats', 'x')")
            }
            let state = try StateDatabase(directory: directory)
            #expect(try await state.latestFile(of: "https://i.test/a.jpg")?.path == "full/a.jpg")
            let cursor = try await state.cursor(for: "imgur tag cats time all")
            #expect(cursor.pass == 0 && cursor.nextPage == nil && !cursor.reachedEnd)
            let version = try SQLiteConnection.open(path).rows("PRAGMA user_version").first?.first?.integer
            #expect(version == Int64(StateSchema.latest))
        }
    }

    /// A statement's column names are read once and kept with it; a schema change (a migration
    /// adding a column to what `t.*` selects, a column renamed here or by another connection) is
    /// seen, and text of every length binds as itself, short (inline) and long, with non-ASCII
    /// and empty text among it.
    @Test func aQueryRunAgainSeesItsColumnsAfterASchemaChangeAndTextBindsWhole() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let db = try SQLiteConnection.open(dir.appendingPathComponent("t.sqlite3").path)
            try db.script("CREATE TABLE t (a TEXT);")
            let texts = ["", "x", "fifteen bytes!!", "sixteen bytes!!!", "ünïcödé", String(repeating: "long ", count: 100)]
            for text in texts { try db.execute("INSERT INTO t (a) VALUES (?1)", [.text(text)]) }
            let select = "SELECT t.* FROM t WHERE a = ?1"
            for text in texts {
                let rows = try db.rows(select, [.text(text)])
                let read = try rows.first?.text("a")
                #expect(rows.count == 1 && rows.first?.names == ["a"] && read == text, "\(text)")
            }
            try db.script("ALTER TABLE t ADD COLUMN b INTEGER; UPDATE t SET b = length(a);")
            for text in texts {
                let row = try #require(try db.rows(select, [.text(text)]).first)
                #expect(row.names == ["a", "b"])
                let length = try row.value("b")
                #expect(length == .integer(Int64(text.count)), "\(text)")
            }
            // As many columns as before, named otherwise, here and by another connection.
            try db.script("ALTER TABLE t RENAME COLUMN b TO length;")
            #expect(try db.rows(select, [.text("x")]).first?.names == ["a", "length"])
            try SQLiteConnection.open(dir.appendingPathComponent("t.sqlite3").path).script("ALTER TABLE t RENAME COLUMN length TO size;")
            #expect(try db.rows(select, [.text("x")]).first?.names == ["a", "size"])
        }
    }

    @Test func aDatabaseFromANewerMirrorIsRefusedAndLeftAlone() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try MirrorDirectory(root: dir)
            let path = directory.stateDirectory.appendingPathComponent("state.sqlite3").path
            try SQLiteConnection.open(path).script("CREATE TABLE future (x); PRAGMA user_version = 99;")
            #expect(throws: MirrorError.self) { try StateDatabase(directory: directory) }
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.stateDirectory.path)
            #expect(!names.contains { $0.contains("damaged") })
        }
    }

    /// Files that finish together share a transaction: rows written one statement each cost a
    /// write of every page they touch per file (two or more frames in the write-ahead log each).
    /// A row the database refuses fails its own caller only.
    @Test func filesFinishingTogetherAreRecordedInSharedTransactionsAndARefusedRowFailsAlone() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
            _ = try await state.read("PRAGMA wal_checkpoint(TRUNCATE)")
            let count = 200
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<count {
                    group.addTask {
                        try await state.record(MirroredFile(
                            path: "full/\(index).jpg", item: "https://i.test/\(index).jpg", source: "tag cats",
                            url: "https://i.test/\(index).jpg", etag: "\"\(index)\"", lastModified: nil, bytes: 42, md5: nil))
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await state.filePaths().files.count == count)
            let frames = try #require(try await state.read("PRAGMA wal_checkpoint(PASSIVE)").first?.optionalInteger("log"))
            #expect(frames < Int64(count), "\(frames) pages written to the log for \(count) rows")

            try await state.write("CREATE TRIGGER refuse_one BEFORE INSERT ON files WHEN NEW.path = 'full/refused.jpg' "
                + "BEGIN SELECT RAISE(ABORT, 'refused'); END", [])
            let failures = await withTaskGroup(of: Bool.self) { group in
                for name in ["refused"] + (0..<30).map({ "more-\($0)" }) {
                    group.addTask {
                        do {
                            try await state.record(MirroredFile(
                                path: "full/\(name).jpg", item: name, source: nil, url: name, etag: nil, lastModified: nil, bytes: 1, md5: nil))
                            return false
                        } catch {
                            return true
                        }
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(failures == 1)
            #expect(try await state.filePaths().files.count == count + 30)
        }
    }

    @Test func entriesShownBeforeAreFoundAmongManyAskedAtOnce() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
            let shown = (0..<1_100).map { "e\($0)" }
            for (source, ids) in [("s", shown), ("t", ["other1", "other2"])] {
                var cursor = CrawlCursor(source: source)
                cursor.pass = source == "s" ? 3 : 1
                _ = try await state.recordPage(
                    ListedPage(newEntryIDs: ids, images: [], pendingAlbumIDs: [], cursor: cursor,
                               lister: Lister(listing: source, owner: source, wants: [])),
                    source: source)
            }
            // More than one query's worth, with entries never shown, another listing's, and repeats.
            let asked = shown + (0..<200).map { "new\($0)" } + ["other1", "e7", "e1099"]
            let known = try await state.knownEntries(asked.reversed(), source: "s")
            #expect(known == Dictionary(uniqueKeysWithValues: shown.map { ($0, 3) }))
            #expect(try await state.knownEntries([], source: "s").isEmpty)
        }
    }

    @Test func aPageIsRecordedWithItsCursorInOneStep() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
            var cursor = CrawlCursor(source: "s")
            cursor.nextPage = 1
            let images = [ImgurImage(id: "aaaaa1"), ImgurImage(id: "aaaaa2")]
            let added = try await state.recordPage(
                ListedPage(newEntryIDs: ["aaaaa1", "aaaaa2", "album1"], images: images.map { ImgurCrawlStore.found($0, albumID: nil) },
                           pendingAlbumIDs: ["album1"], cursor: cursor, lister: Lister(listing: "s", owner: "s", wants: [])),
                source: "s")
            #expect(added.map(\.id) == ["aaaaa1", "aaaaa2"])
            // Recording the same images again adds nothing: they are queued already.
            let again = try await state.recordPage(
                ListedPage(newEntryIDs: [], images: images.map { ImgurCrawlStore.found($0, albumID: nil) }, pendingAlbumIDs: [], cursor: cursor, lister: Lister(listing: "s", owner: "s", wants: [])),
                source: "s")
            #expect(again.isEmpty)
            #expect(try await state.cursor(for: "s").nextPage == 1)
            #expect(try await state.knownEntries(["aaaaa1", "zzz"], source: "s") == ["aaaaa1": 0])
            #expect(try await state.pendingAlbums().map(\.id) == ["album1"])
            try await state.markImagesDone(["aaaaa1"])
            #expect(try await state.pendingImages().images.map(\.id) == ["aaaaa2"])
            // Paged in the order found, whatever is marked done meanwhile.
            let more = (3...7).map { ImgurImage(id: "aaaaa\($0)") }
            _ = try await state.recordPage(
                ListedPage(newEntryIDs: more.map(\.id), images: more.map { ImgurCrawlStore.found($0, albumID: nil) }, pendingAlbumIDs: [], cursor: cursor, lister: Lister(listing: "s", owner: "s", wants: [])),
                source: "s")
            var pages: [[String]] = []
            var position: Int64? = 0
            while let after = position {
                let page = try await state.pendingImages(after: after, limit: 2)
                pages.append(page.images.map(\.id))
                if pages.count == 1 { try await state.markImagesDone(["aaaaa4"]) }
                position = page.next
            }
            #expect(pages == [["aaaaa2", "aaaaa3"], ["aaaaa5", "aaaaa6"], ["aaaaa7"]])
            let crawl = ImgurCrawlStore(state)
            let cached = try await crawl.recordAlbum("album1", images: [ImgurImage(id: "bbbbb1")], holder: "s", listing: "s", wants: [])
            #expect(cached.map(\.id) == ["bbbbb1"])
            #expect(try await crawl.cachedAlbum("album1")?.map(\.id) == ["bbbbb1"])
            #expect(try await state.pendingAlbums().isEmpty)
        }
    }

    @Test func aLyingTotalDoesNotOverflowThePageEstimate() {
        var cursor = CrawlCursor(source: "s")
        cursor.pageSize = 60
        cursor.totalItems = Int.max
        #expect(cursor.estimatedPages == Int.max / 60 + 1)
        cursor.totalItems = 120
        #expect(cursor.estimatedPages == 2)
    }
}
