import FoundationEssentials

extension StateDatabase: CrawlStore {
    package func cursor(for source: String) throws(MirrorError) -> CrawlCursor {
        let cursors = try read(
            "SELECT pass, next_page, head_id, total_items, page_size, pages_read, updated_at, last_full_pass, suspected_end FROM crawl_cursors WHERE source = ?1",
            [.text(source)]
        ) { row throws(SQLiteError) in
            var cursor = CrawlCursor(source: source)
            cursor.pass = Int(try row.integer("pass"))
            cursor.nextPage = try row.optionalInt("next_page")
            cursor.headID = try row.optionalText("head_id")
            cursor.totalItems = try row.optionalInt("total_items")
            cursor.pageSize = try row.optionalInt("page_size")
            cursor.pagesRead = Int(try row.integer("pages_read"))
            cursor.updatedAt = try row.optionalText("updated_at").flatMap { try? Date($0, strategy: .iso8601) }
            cursor.lastFullPass = try row.optionalInt("last_full_pass")
            cursor.suspectedEnd = try row.optionalInt("suspected_end")
            return cursor
        }
        return cursors.first ?? CrawlCursor(source: source)
    }

    package func saveCursor(_ cursor: CrawlCursor) throws(MirrorError) {
        try write(Self.saveCursorSQL, Self.arguments(of: cursor))
    }

    package func recordPage(_ page: ListedPage, source: String) throws(MirrorError) -> [FoundImage] {
        try inTransaction { () throws(SQLiteError) in
            for id in page.newEntryIDs {
                try db.execute(
                    "INSERT OR IGNORE INTO listing_entries (source, entry_id, pass) VALUES (?1, ?2, ?3)",
                    [.text(source), .text(id), .integer(Int64(page.cursor.pass))])
            }
            for id in page.pendingAlbumIDs {
                try db.execute(
                    "INSERT OR IGNORE INTO albums (id, source, state, updated_at, context) VALUES (?1, ?2, 'pending', ?3, ?4)",
                    [.text(id), .text(source), .text(Self.now()), SQLiteValue(page.pendingAlbumContexts[id])])
            }
            let added = try queue(page.images, holder: source, for: page.lister)
            try db.execute(Self.saveCursorSQL, Self.arguments(of: page.cursor))
            return added
        }
    }

    /// Entries looked up by one query, well under SQLite's limit of arguments (999 before 3.32).
    private static let entriesPerQuery = 500
    /// The one other width of the query's list, a page's (60 at most on Imgur): a list is padded to
    /// a width, so that a run prepares two statements rather than one for every length of list.
    private static let entriesOfAPage = 64

    package func knownEntries(_ entryIDs: [String], source: String) throws(MirrorError) -> [String: Int] {
        // One query for a page's entries, not one each: the statement's run, not its seek into the
        // key, was most of what a page's bookkeeping cost.
        var known: [String: Int] = [:]
        let ids = Array(Set(entryIDs))
        for start in stride(from: 0, to: ids.count, by: Self.entriesPerQuery) {
            let chunk = ids[start..<min(start + Self.entriesPerQuery, ids.count)]
            let width = chunk.count <= Self.entriesOfAPage ? Self.entriesOfAPage : Self.entriesPerQuery
            let list = (2..<(width + 2)).map { "?\($0)" }.joined(separator: ", ")
            // NULL, the padding, is in no list.
            let padding = [SQLiteValue](repeating: .null, count: width - chunk.count)
            let rows = try read(
                "SELECT entry_id, pass FROM listing_entries WHERE source = ?1 AND entry_id IN (\(list))",
                [.text(source)] + chunk.map { .text($0) } + padding
            ) { row throws(SQLiteError) in (try row.text("entry_id"), Int(try row.integer("pass"))) }
            for (id, pass) in rows { known[id] = pass }
        }
        return known
    }

    package func cachedAlbum(_ albumID: String) throws(MirrorError) -> String? {
        try read("SELECT images FROM albums WHERE id = ?1 AND state = 'cached'", [.text(albumID)]) { row throws(SQLiteError) in
            try row.text("images")
        }.first
    }

    package func albumContext(_ albumID: String) throws(MirrorError) -> String? {
        try read("SELECT context FROM albums WHERE id = ?1", [.text(albumID)]) { row throws(SQLiteError) in
            try row.optionalText("context")
        }.first ?? nil
    }

    package func pendingAlbums(listedBy prefix: String = "", orShownBy listings: [String] = []) throws(MirrorError) -> [(id: String, listing: String)] {
        let shown = listings.indices.map { "?\($0 + 2)" }.joined(separator: ", ")
        return try read(
            "SELECT id, source FROM albums WHERE state = 'pending' AND (substr(source, 1, length(?1)) = ?1"
                + (listings.isEmpty ? ")" : " OR EXISTS (SELECT 1 FROM listing_entries AS e WHERE e.source IN (\(shown)) AND e.entry_id = albums.id))")
                + " ORDER BY rowid",
            [.text(prefix)] + listings.map { .text($0) }
        ) { row throws(SQLiteError) in (try row.text("id"), try row.text("source")) }
    }

    package func recordAlbumFailure(_ albumID: String, problem: String) throws(MirrorError) -> Int {
        try write(
            "UPDATE albums SET failures = failures + 1, problem = ?2, updated_at = ?3 WHERE id = ?1",
            [.text(albumID), .text(problem), .text(Self.now())])
        // An album never recorded has no row, and no failures.
        return try read("SELECT failures FROM albums WHERE id = ?1", [.text(albumID)]) { row throws(SQLiteError) in
            Int(try row.integer("failures"))
        }.first ?? 0
    }

    package func recordAlbum(
        _ albumID: String, images: [FoundImage], list json: String, source: String, lister: Lister
    ) throws(MirrorError) -> [FoundImage] {
        try inTransaction { () throws(SQLiteError) in
            try db.execute(
                "INSERT INTO albums (id, source, state, images, updated_at) VALUES (?1, ?2, 'cached', ?3, ?4) "
                    + "ON CONFLICT(id) DO UPDATE SET state = 'cached', images = excluded.images, problem = NULL, updated_at = excluded.updated_at",
                [.text(albumID), .text(source), .text(json), .text(Self.now())])
            return try queue(images, holder: source, for: lister)
        }
    }

    package func recordAlbumGone(_ albumID: String, problem: String, source: String) throws(MirrorError) {
        try write(
            "INSERT INTO albums (id, source, state, problem, updated_at) VALUES (?1, ?2, 'gone', ?3, ?4) "
                + "ON CONFLICT(id) DO UPDATE SET state = 'gone', problem = excluded.problem, updated_at = excluded.updated_at",
            [.text(albumID), .text(source), .text(problem), .text(Self.now())])
    }

    /// Images a listing whose key starts with `prefix` holds and no run finished, in the order
    /// found, `limit` at a time: pass the last page's `next` as `after` for the next page; `next`
    /// is nil after the last one. Paged, so that resuming a big tag does not hold every pending
    /// image at once.
    package func pendingImages(
        listedBy prefix: String = "", after position: Int64 = 0, limit: Int = 1000
    ) throws(MirrorError) -> (images: [FoundImage], next: Int64?) {
        let rows = try read(
            "SELECT rowid AS position, id, image, album_id FROM images "
                + "WHERE done = 0 AND rowid > ?1 AND substr(source, 1, length(?3)) = ?3 ORDER BY rowid LIMIT ?2",
            [.integer(position), .integer(Int64(limit)), .text(prefix)]
        ) { row throws(SQLiteError) in
            (try row.integer("position"),
             FoundImage(id: try row.text("id"), payload: try row.text("image"), albumID: try row.optionalText("album_id")))
        }
        return (rows.map(\.1), rows.count == limit ? rows.last?.0 : nil)
    }

    package func markImagesDone(_ imageIDs: [String]) throws(MirrorError) {
        guard !imageIDs.isEmpty else { return }
        try inTransaction { () throws(SQLiteError) in
            for id in imageIDs { try db.execute("UPDATE images SET done = 1 WHERE id = ?1", [.text(id)]) }
        }
    }

    package func budget(api: String) throws(MirrorError) -> APIBudget? {
        let budgets = try read("SELECT budget FROM api_budgets WHERE api = ?1", [.text(api)]) { row throws(SQLiteError) in
            try row.text("budget")
        }
        guard let json = budgets.first else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(APIBudget.self, from: Data(json.utf8))
    }

    package func saveBudget(_ budget: APIBudget, api: String) throws(MirrorError) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard let data = try? encoder.encode(budget) else { return }
        try write(
            "INSERT INTO api_budgets (api, budget) VALUES (?1, ?2) ON CONFLICT(api) DO UPDATE SET budget = excluded.budget",
            [.text(api), .text(String(decoding: data, as: UTF8.self))])
    }

    package func figures(source: String) throws(MirrorError) -> CrawlFigures {
        func count(_ sql: String, _ arguments: [SQLiteValue] = [.text(source)]) throws(MirrorError) -> Int {
            try read(sql, arguments) { row throws(SQLiteError) in Int(try row.integer("count")) }.first ?? 0
        }
        return CrawlFigures(
            cursor: try cursor(for: source),
            entriesKnown: try count("SELECT count(*) AS count FROM listing_entries WHERE source = ?1"),
            imagesKnown: try count("SELECT count(*) AS count FROM images WHERE source = ?1"),
            imagesPending: try count("SELECT count(*) AS count FROM images WHERE done = 0", []),
            albumsCached: try count("SELECT count(*) AS count FROM albums WHERE source = ?1 AND state = 'cached'"),
            albumsPending: try count("SELECT count(*) AS count FROM albums WHERE state = 'pending'", []),
            albumsGone: try count("SELECT count(*) AS count FROM albums WHERE source = ?1 AND state = 'gone'"))
    }

    package func crawlSources() throws(MirrorError) -> [String] {
        try read("SELECT source FROM crawl_cursors ORDER BY source") { row throws(SQLiteError) in try row.text("source") }
    }

    // MARK: - Helpers

    /// Queues images not queued before, held by the lister when it wants them or `holder` is its
    /// own listing, else by `holder`; takes over those it wants that another owner holds and no run
    /// finished. Returns what the lister now holds of them.
    private func queue(_ images: [FoundImage], holder: String, for lister: Lister) throws(SQLiteError) -> [FoundImage] {
        var added: [FoundImage] = []
        let now = Self.now()
        for image in images {
            let wanted = lister.wants.contains(image.id)
            let source = wanted ? lister.listing : holder
            try db.execute(
                "INSERT OR IGNORE INTO images (id, source, album_id, image, listed_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                [.text(image.id), .text(source), SQLiteValue(image.albumID), .text(image.payload), .text(now)])
            if db.changes > 0 {
                if source == lister.listing { added.append(image) }
                continue
            }
            guard wanted else { continue }
            try db.execute(
                "UPDATE images SET source = ?2 WHERE id = ?1 AND done = 0 AND substr(source, 1, length(?3)) <> ?3",
                [.text(image.id), .text(lister.listing), .text(lister.owner)])
            if db.changes > 0 { added.append(image) }
        }
        return added
    }

    private static let saveCursorSQL = """
        INSERT INTO crawl_cursors (source, pass, next_page, head_id, total_items, page_size, pages_read, updated_at, last_full_pass, suspected_end)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
        ON CONFLICT(source) DO UPDATE SET pass = excluded.pass, next_page = excluded.next_page,
            head_id = excluded.head_id, total_items = excluded.total_items, page_size = excluded.page_size,
            pages_read = excluded.pages_read, updated_at = excluded.updated_at, last_full_pass = excluded.last_full_pass,
            suspected_end = excluded.suspected_end
        """

    private static func arguments(of cursor: CrawlCursor) -> [SQLiteValue] {
        [
            .text(cursor.source), .integer(Int64(cursor.pass)), SQLiteValue(cursor.nextPage), SQLiteValue(cursor.headID),
            SQLiteValue(cursor.totalItems), SQLiteValue(cursor.pageSize), .integer(Int64(cursor.pagesRead)),
            .text(now()), SQLiteValue(cursor.lastFullPass), SQLiteValue(cursor.suspectedEnd),
        ]
    }
}
