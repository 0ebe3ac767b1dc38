import Foundation
import PostgresNIO
import Testing
@testable import MirrorKit
@testable import MirrorPostgreSQL

/// The backends a mirror's state can be kept in.
enum StoreKind: Sendable {
    case sqlite
    case postgresql
}

/// One storage contract: every store method, run against SQLite and a real PostgreSQL, must
/// read back what was written, the same way in both.
@Suite("One storage contract: SQLite and PostgreSQL", .timeLimit(.minutes(3)))
struct StoreContractTests {
    /// Runs `body` with a fresh store of `kind`, and `raw` to change its rows behind its back.
    private func withStore(
        _ kind: StoreKind, _ body: (any MirrorStore, _ raw: @escaping @Sendable (String) async throws -> Void) async throws -> Void
    ) async throws {
        switch kind {
        case .sqlite:
            try await TestSupport.withTemporaryDirectory { dir in
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                try await body(state) { sql in try await state.write(sql, []) }
            }
        case .postgresql:
            try await PostgresServer.with { server in
                let state = try await PostgresState(try PostgresLocation(server.url), logger: TestSupport.logger)
                do {
                    try await body(state) { sql in try await state.execute(PostgresQuery(unsafeSQL: sql)) }
                    await state.close()
                } catch {
                    await state.close()
                    throw error
                }
            }
        }
    }

    private func file(_ path: String, item: String, source: String? = "tag cats", etag: String? = nil) -> MirroredFile {
        MirroredFile(
            path: path, item: item, source: source, url: item, etag: etag, lastModified: "Fri, 01 Jan 2016 00:00:00 GMT",
            bytes: 42, md5: nil)
    }

    private func found(_ id: String, album: String? = nil) -> FoundImage {
        FoundImage(id: id, payload: #"{"id":"\#(id)","size":1000}"#, albumID: album)
    }

    /// One store of each kind for every check: a PostgreSQL server is started once, not per check.
    @Test func everyMethodReadsBackWhatWasWrittenInSQLite() async throws {
        try await everyCheck(.sqlite)
    }

    @Test(.enabled(if: PostgresServer.isAvailable, "PostgreSQL is not installed (scripts/setup installs it)"))
    func everyMethodReadsBackWhatWasWrittenInPostgreSQL() async throws {
        try await everyCheck(.postgresql)
    }

    private func everyCheck(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, raw in
            try await filesVersionsAndTheirFate(store)
            try await aCrawlItsPagesAlbumsAndImages(store)
            try await runsAndTheBudget(store)
            try await anUnexpectedNullIsAnErrorNotADefault(store, raw)
            try await sweepsComeInPages(store, raw)
            try await aSweepNamesVersionsAfterTheFile(store)
        }
    }

    /// A version made the newest again (the server went back to its bytes) is recorded after the
    /// others: a sweep gives every version's path, so that new versions are still named after the
    /// file, not after the first row left.
    private func aSweepNamesVersionsAfterTheFile(_ store: any MirrorStore) async throws {
        let item = "https://i/named.jpg"
        for path in ["named/x.jpg", "named/x(1).jpg", "named/x.jpg"] {
            try await store.record(file(path, item: item, source: "tag named"))
        }
        #expect(try await store.latestFile(of: item)?.path == "named/x.jpg")
        let sweep = try await store.filesToRevalidate(source: "tag named", claiming: [], after: nil, limit: 10).files
        #expect(sweep.map(\.latest.path) == ["named/x.jpg"])
        #expect(sweep.first?.paths == ["named/x(1).jpg", "named/x.jpg"], "in the order recorded, the one made newest again last")
    }

    /// A sweep holds a page, not the source: every file once, in order, across pages.
    private func sweepsComeInPages(_ store: any MirrorStore, _ raw: @Sendable (String) async throws -> Void) async throws {
        let paths = (0..<7).map { "pages/\($0).jpg" }
        for path in paths { try await store.record(file(path, item: "https://i/" + path, source: "tag pages")) }
        // Confirmed in the reverse order of recording, two of them at the same moment.
        for (index, path) in paths.enumerated() {
            let checked = "2026-01-0\(min(7 - index, 6))T00:00:00Z"
            try await raw("UPDATE files SET checked_at = '\(checked)' WHERE path = '\(path)'")
        }
        var swept: [[String]] = []
        try await SweepPage.read { position throws(MirrorError) in
            try await store.filesToRevalidate(source: "tag pages", claiming: [], after: position, limit: 3)
        } each: { files in
            swept.append(files.map(\.latest.path))
            return swept.count < 10
        }
        #expect(swept == [["pages/6.jpg", "pages/5.jpg", "pages/4.jpg"], ["pages/3.jpg", "pages/2.jpg", "pages/0.jpg"], ["pages/1.jpg"]],
                "least recently confirmed first, the row breaking a tie")
        swept = []
        try await SweepPage.read { position throws(MirrorError) in
            try await store.latestFiles(source: "tag pages", claiming: [], after: position, limit: 7)
        } each: { files in
            swept.append(files.map(\.path))
            return swept.count < 10
        }
        #expect(swept == [paths, []], "a full last page is followed by an empty one")
        var recorded: [String] = []
        try await SweepPage.read { position throws(MirrorError) in
            try await store.filePaths(after: position, limit: 4)
        } each: { files in
            recorded += files
            return recorded.count < 100
        }
        #expect(Array(recorded.suffix(7)) == paths, "every path once, in the order recorded")
        #expect(Set(recorded).count == recorded.count)
    }

    private func filesVersionsAndTheirFate(_ store: any MirrorStore) async throws {
        do {
            let first = file("full/a.jpg", item: "https://i/a.jpg", etag: "\"1\"")
            try await store.record(first)
            var second = first
            second.path = "full/a(1).jpg"
            second.etag = "\"2\""
            try await store.record(second)
            try await store.record(file("full/b.jpg", item: "https://i/b.jpg", source: nil))
            #expect(try await store.versions(of: first.item).map(\.path) == ["full/a.jpg", "full/a(1).jpg"])
            let latest = try #require(try await store.latestFile(of: first.item))
            #expect(latest.path == "full/a(1).jpg" && latest.etag == "\"2\"" && latest.bytes == 42)
            #expect(latest.lastModified == "Fri, 01 Jan 2016 00:00:00 GMT" && latest.source == "tag cats")
            #expect(try await store.item(owning: "full/a.jpg") == first.item)
            #expect(try await store.item(owning: "full/none.jpg") == nil)
            #expect(try await store.item(named: "a(1).jpg") == first.item)
            #expect(try await store.item(named: "nothing") == nil)
            #expect(try await store.latestFile(of: "https://i/none") == nil)

            var fate = try await store.fate(of: first.item, url: first.url)
            #expect(fate.latest?.path == "full/a(1).jpg" && !fate.removed)
            fate = try await store.fate(of: "https://i/none", url: "https://i/none")
            #expect(fate.latest == nil && !fate.removed)
            try await store.recordRemoved(first.url)
            fate = try await store.fate(of: first.item, url: first.url)
            #expect(fate.latest?.path == "full/a(1).jpg" && fate.removed)
            // Known removed, never mirrored.
            try await store.recordRemoved("https://i/gone.jpg")
            fate = try await store.fate(of: "https://i/gone", url: "https://i/gone.jpg")
            #expect(fate.latest == nil && fate.removed)

            try await store.confirm(
                "full/a(1).jpg", url: first.url, etag: "\"3\"", lastModified: nil,
                release: FeedRelease(version: "2.0", updated: nil), replacingValidators: true)
            let confirmed = try #require(try await store.latestFile(of: first.item))
            #expect(confirmed.etag == "\"3\"" && confirmed.version == "2.0")
            try await store.setMD5("0123456789abcdef0123456789abcdef", of: "full/a(1).jpg")
            #expect(try await store.latestFile(of: first.item)?.md5 == "0123456789abcdef0123456789abcdef")
            try await store.adopt(
                item: first.item, as: "entry feed 1", source: "feed f", release: FeedRelease(version: "3", updated: "today"))
            #expect(try await store.versions(of: "entry feed 1").count == 2)
            #expect(try await store.versions(of: first.item).isEmpty)

            // A file recorded before sources were is claimed by the first source that sweeps its folder.
            let sweep = try await store.filesToRevalidate(source: "tag cats", claiming: ["full"], after: nil, limit: 100).files
            #expect(sweep.map(\.latest.path) == ["full/b.jpg"], "the removed URL's file is not asked after")
            #expect(sweep.first?.paths == ["full/b.jpg"])
            let newest = try await store.latestFiles(source: "tag cats", claiming: ["full"], after: nil, limit: 100).files
            #expect(newest.map(\.path) == ["full/b.jpg"], "the newest version of each item, not a removed URL's")
            #expect(newest.first?.url == sweep.first?.latest.url && newest.first?.item == sweep.first?.latest.item)
            #expect(try await store.latestFiles(source: "feed f", claiming: [], after: nil, limit: 100).files.isEmpty, "its URL is known removed")
            #expect(try await store.versionFigures() == VersionFigures(items: 2, files: 3, itemsWithVersions: 1))
            #expect(try await store.filePaths(after: nil, limit: 100).files.count == 3)
            let host = URLAuthority.of(first.url)
            #expect(try await store.hasFiles(fromHost: host))
            #expect(try await !store.hasFiles(fromHost: host + ".other"))
            #expect(try await store.hasFiles(fromHost: host.uppercased()), "a host name has no case, in either store")
            #expect(Set(try await store.filePaths(after: nil, limit: 100).files).isSuperset(of: ["full/b.jpg"]))
        }
    }

    private func aCrawlItsPagesAlbumsAndImages(_ store: any MirrorStore) async throws {
        do {
            var cursor = try await store.cursor(for: "imgur tag cats time all")
            #expect(cursor.pass == 0 && cursor.nextPage == nil && cursor.pagesRead == 0)
            cursor.pass = 2
            cursor.nextPage = 7
            cursor.headID = "abc"
            cursor.totalItems = 11_000
            cursor.pageSize = 60
            cursor.pagesRead = 40
            cursor.lastFullPass = 1
            let cats = "imgur tag cats "
            let catsWant = { (ids: Set<String>) in Lister(listing: cursor.source, owner: cats, wants: ids) }
            let added = try await store.recordPage(
                ListedPage(
                    newEntryIDs: ["x", "y", "A1"], images: [found("x"), found("y")], pendingAlbumIDs: ["A1"],
                    pendingAlbumContexts: ["A1": #"{"id":"A1","title":"ducks"}"#], cursor: cursor, lister: catsWant(["x"])),
                source: cursor.source)
            #expect(added.map(\.id) == ["x", "y"], "new images are the lister's, wanted or not")
            #expect(added.first == found("x"), "the payload reads back byte for byte")
            let again = try await store.recordPage(
                ListedPage(newEntryIDs: [], images: [found("x")], pendingAlbumIDs: [], cursor: cursor, lister: catsWant(["x"])),
                source: cursor.source)
            #expect(again.isEmpty, "an image is queued once")
            let read = try await store.cursor(for: cursor.source)
            #expect(read.pass == 2 && read.nextPage == 7 && read.headID == "abc" && read.estimatedPages == 184)
            #expect(read.pagesRead == 40 && read.lastFullPass == 1 && read.updatedAt != nil)
            #expect(try await store.knownEntries(["x", "z"], source: cursor.source) == ["x": 2])
            #expect(try await store.crawlSources() == [cursor.source])

            #expect(try await store.pendingAlbums(listedBy: cats, orShownBy: []).map(\.id) == ["A1"])
            #expect(try await store.pendingAlbums(listedBy: cats, orShownBy: []).map(\.listing) == [cursor.source])
            #expect(try await store.pendingAlbums(listedBy: "imgur tag cat ", orShownBy: []).isEmpty, "another tag's albums are its own")
            let shown = try await store.pendingAlbums(listedBy: "imgur tag dogs ", orShownBy: ["imgur tag dogs time all", cursor.source])
            #expect(shown.map(\.id) == ["A1"] && shown.map(\.listing) == [cursor.source], "an album a listing has shown is its to expand too")
            #expect(try await store.albumContext("A1") == #"{"id":"A1","title":"ducks"}"#)
            #expect(try await store.albumContext("nope") == nil)
            #expect(try await store.cachedAlbum("A1") == nil)
            #expect(try await store.recordAlbumFailure("A1", problem: "HTTP 500") == 1)
            #expect(try await store.recordAlbumFailure("A1", problem: "HTTP 500") == 2)
            let albumAdded = try await store.recordAlbum(
                "A1", images: [found("x", album: "A1"), found("w", album: "A1")], list: "[1,2]", source: cursor.source,
                lister: catsWant(["w"]))
            #expect(albumAdded.map(\.id) == ["w"])
            #expect(try await store.cachedAlbum("A1") == "[1,2]")
            #expect(try await store.pendingAlbums(listedBy: cats, orShownBy: []).isEmpty)
            try await store.recordAlbumGone("G1", problem: "HTTP 404", source: cursor.source)
            #expect(try await store.pendingAlbums(listedBy: "", orShownBy: []).isEmpty)

            // Paged in the order found, `limit` at a time, whatever is marked done meanwhile.
            var pages: [[FoundImage]] = []
            var position: Int64? = 0
            while let after = position {
                let page = try await store.pendingImages(listedBy: cats, after: after, limit: 2)
                pages.append(page.images)
                if pages.count == 1 { try await store.markImagesDone(["w"]) }
                position = page.next
            }
            #expect(pages.map { $0.map(\.id) } == [["x", "y"], []])
            #expect(pages.first?.first == found("x"))
            #expect(try await store.pendingImages(listedBy: "imgur tag cat ", after: 0, limit: 10).images.isEmpty)

            // Another tag's listing that shows an unfinished image it wants takes it over; one it
            // does not want, or a finished one, stays where it is.
            var dogs = try await store.cursor(for: "imgur tag dogs time all")
            dogs.nextPage = 1
            try await store.markImagesDone(["x"])
            let dogsWant = { (ids: Set<String>) in Lister(listing: dogs.source, owner: "imgur tag dogs ", wants: ids) }
            let takenOver = try await store.recordPage(
                ListedPage(newEntryIDs: ["x", "y", "w"], images: [found("x"), found("y"), found("w")], pendingAlbumIDs: [], cursor: dogs,
                           lister: dogsWant(["x", "y", "w"])),
                source: dogs.source)
            #expect(takenOver.map(\.id) == ["y"])
            #expect(try await store.pendingImages(listedBy: "imgur tag dogs ", after: 0, limit: 10).images.map(\.id) == ["y"])
            #expect(try await store.pendingImages(listedBy: cats, after: 0, limit: 10).images.isEmpty, "w is done")
            // Within one tag, its listings share: nothing changes hands.
            let sameTag = try await store.recordPage(
                ListedPage(newEntryIDs: ["y"], images: [found("y")], pendingAlbumIDs: [], cursor: dogs, lister: Lister(
                    listing: "imgur tag dogs top week", owner: "imgur tag dogs ", wants: ["y"])),
                source: "imgur tag dogs top week")
            #expect(sameTag.isEmpty)
            // An album's new images: the lister's where it wants them, else the album holder's.
            let forDogs = try await store.recordAlbum(
                "A3", images: [found("v", album: "A3"), found("u", album: "A3")], list: "[]", source: cursor.source,
                lister: dogsWant(["v"]))
            #expect(forDogs.map(\.id) == ["v"])
            #expect(try await store.pendingImages(listedBy: cats, after: 0, limit: 10).images.map(\.id) == ["u"])
            // An unfinished image another tag holds and this lister does not want stays its holder's,
            // from a page or an album alike; one it wants is taken over from an album too.
            let unwanted = try await store.recordPage(
                ListedPage(newEntryIDs: ["u"], images: [found("u")], pendingAlbumIDs: [], cursor: dogs, lister: dogsWant([])),
                source: dogs.source)
            #expect(unwanted.isEmpty)
            #expect(try await store.recordAlbum("A4", images: [found("u", album: "A4")], list: "[]", source: cursor.source,
                                                lister: dogsWant([])).isEmpty)
            #expect(try await store.pendingImages(listedBy: cats, after: 0, limit: 10).images.map(\.id) == ["u"])
            let wanted = try await store.recordAlbum(
                "A4", images: [found("u", album: "A4")], list: "[]", source: cursor.source, lister: dogsWant(["u"]))
            #expect(wanted.map(\.id) == ["u"])
            #expect(try await store.pendingImages(listedBy: cats, after: 0, limit: 10).images.isEmpty)
            try await store.markImagesDone(["x", "y", "w", "v", "u", "unknown"])
            #expect(try await store.pendingImages(listedBy: "", after: 0, limit: 10).images.isEmpty)
            let figures = try await store.figures(source: cursor.source)
            // y and u went over to dogs.
            #expect(figures.entriesKnown == 3 && figures.imagesKnown == 2 && figures.imagesPending == 0)
            #expect(figures.albumsCached == 3 && figures.albumsPending == 0 && figures.albumsGone == 1)
            // More entries than one query of the SQLite store asks for, with unknown ones among them.
            let many = (0..<600).map { "many\($0)" }
            _ = try await store.recordPage(
                ListedPage(newEntryIDs: many, images: [], pendingAlbumIDs: [], cursor: cursor, lister: catsWant([])),
                source: cursor.source)
            #expect(try await store.knownEntries(many + ["x", "z", "never"], source: cursor.source)
                == Dictionary(uniqueKeysWithValues: (many + ["x"]).map { ($0, 2) }))
        }
    }

    private func runsAndTheBudget(_ store: any MirrorStore) async throws {
        do {
            #expect(try await store.lastSuccess(of: "tag cats") == nil)
            #expect(try await store.lastRun(of: "tag cats") == nil)
            #expect(try await store.budget(api: "imgur") == nil)
            let start = Date(timeIntervalSince1970: 1_700_000_000)
            for (offset, status) in [(0, Int32(0)), (100, 75), (200, 1)] {
                try await store.recordRun(RunRecord(
                    source: "tag cats", startedAt: start + Double(offset), endedAt: start + Double(offset + 50),
                    exitStatus: status, summary: MirrorSummary()))
            }
            var album = RunRecord(
                source: "album Ef1gH", startedAt: start, endedAt: start + 10, exitStatus: 0, summary: MirrorSummary())
            album.failures = [RunRecord.FailedFile(url: "https://i/x.jpg", problem: "HTTP 500")]
            try await store.recordRun(album)
            #expect(try await store.lastRun(of: "album Ef1gH") == album, "a record reads back whole")
            #expect(try await store.lastRun(of: "tag cats")?.exitStatus == 1)
            #expect(try await store.lastSuccess(of: "tag cats") == start + 50)
            #expect(Set(try await store.lastRuns().map(\.source)) == ["tag cats", "album Ef1gH"])
            let budget = APIBudget(
                userRemaining: 12, userLimit: 500, userResetAt: start + 3600, clientRemaining: 9000,
                observedAt: start)
            try await store.saveBudget(budget, api: "imgur")
            #expect(try await store.budget(api: "imgur") == budget)
        }
    }

    /// A row that breaks the schema's promises (a damaged file, a hand edit) is an error naming the
    /// column, not an empty string or a zero taken for data.
    private func anUnexpectedNullIsAnErrorNotADefault(
        _ store: any MirrorStore, _ raw: @escaping @Sendable (String) async throws -> Void
    ) async throws {
        do {
            _ = try await store.recordAlbum("N1", images: [], list: "[]", source: "s", lister: Lister(listing: "s", owner: "s", wants: []))
            try await raw("UPDATE albums SET images = NULL WHERE id = 'N1'")
            let error = await #expect(throws: MirrorError.self) { _ = try await store.cachedAlbum("N1") }
            #expect(error?.description.contains("'images'") == true, "\(String(describing: error))")
        }
    }

    @Test func aNumberColumnHoldingTextIsAnError() async throws {
        try await withStore(.sqlite) { store, raw in
            try await store.record(file("full/a.jpg", item: "https://i/a.jpg"))
            try await raw("UPDATE files SET bytes = 'lots'")
            let error = await #expect(throws: MirrorError.self) { _ = try await store.latestFile(of: "https://i/a.jpg") }
            #expect(error?.description.contains("'bytes'") == true, "\(String(describing: error))")
        }
    }
}
