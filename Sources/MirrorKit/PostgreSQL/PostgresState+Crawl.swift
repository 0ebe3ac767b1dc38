import Foundation
import PostgresNIO

extension PostgresState {
    func cursor(for source: String) async throws(MirrorError) -> CrawlCursor {
        var cursor = CrawlCursor(source: source)
        guard let row = try await rows(
            """
            SELECT pass, next_page, head_id, total_items, page_size, pages_read, updated_at, last_full_pass, suspected_end
            FROM crawl_cursors WHERE source = \(source)
            """).first
        else { return cursor }
        let (pass, nextPage, headID, totalItems, pageSize, pagesRead, updatedAt, lastFullPass, suspectedEnd) = try decode(
            row, (Int, Int?, String?, Int?, Int?, Int, String, Int?, Int?).self)
        cursor.pass = pass
        cursor.nextPage = nextPage
        cursor.headID = headID
        cursor.totalItems = totalItems
        cursor.pageSize = pageSize
        cursor.pagesRead = pagesRead
        cursor.updatedAt = try? Date(updatedAt, strategy: .iso8601)
        cursor.lastFullPass = lastFullPass
        cursor.suspectedEnd = suspectedEnd
        return cursor
    }

    func saveCursor(_ cursor: CrawlCursor) async throws(MirrorError) {
        try await execute(Self.saveCursor(cursor))
    }

    func recordPage(_ page: ListedPage, source: String) async throws(MirrorError) -> [FoundImage] {
        let contexts = page.pendingAlbumContexts
        let now = Self.now()
        return try await transaction { connection, logger in
            for id in page.newEntryIDs {
                try await connection.query(
                    """
                    INSERT INTO listing_entries (source, entry_id, pass) VALUES (\(source), \(id), \(page.cursor.pass))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            }
            for id in page.pendingAlbumIDs {
                try await connection.query(
                    """
                    INSERT INTO albums (id, source, state, updated_at, context) VALUES (\(id), \(source), 'pending', \(now), \(contexts[id]))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            }
            let added = try await Self.queue(page.images, source: source, on: connection, logger: logger)
            try await connection.query(Self.saveCursor(page.cursor), logger: logger)
            return added
        }
    }

    func knownEntries(_ entryIDs: [String], source: String) async throws(MirrorError) -> [String: Int] {
        var known: [String: Int] = [:]
        let ids = Array(Set(entryIDs))
        for row in try await rows("SELECT entry_id, pass FROM listing_entries WHERE source = \(source) AND entry_id = ANY(\(ids))") {
            let (id, pass) = try decode(row, (String, Int).self)
            known[id] = pass
        }
        return known
    }

    func cachedAlbum(_ albumID: String) async throws(MirrorError) -> String? {
        guard let row = try await rows("SELECT images FROM albums WHERE id = \(albumID) AND state = 'cached'").first else { return nil }
        return try decode(row, String?.self, column: 0)
    }

    func albumContext(_ albumID: String) async throws(MirrorError) -> String? {
        guard let row = try await rows("SELECT context FROM albums WHERE id = \(albumID)").first else { return nil }
        return try decode(row, String?.self, column: 0)
    }

    func pendingAlbums() async throws(MirrorError) -> [String] {
        var ids: [String] = []
        for row in try await rows("SELECT id FROM albums WHERE state = 'pending' ORDER BY seq") { ids.append(try decode(row, String.self)) }
        return ids
    }

    func recordAlbumFailure(_ albumID: String, problem: String) async throws(MirrorError) -> Int {
        let row = try await rows(
            """
            UPDATE albums SET failures = failures + 1, problem = \(problem), updated_at = \(Self.now()) WHERE id = \(albumID)
            RETURNING failures
            """).first
        guard let row else { return 0 }
        return try decode(row, Int.self)
    }

    func recordAlbum(
        _ albumID: String, images: [FoundImage], list json: String, source: String
    ) async throws(MirrorError) -> [FoundImage] {
        let now = Self.now()
        return try await transaction { connection, logger in
            try await connection.query(
                """
                INSERT INTO albums (id, source, state, images, updated_at) VALUES (\(albumID), \(source), 'cached', \(json), \(now))
                ON CONFLICT (id) DO UPDATE SET state = 'cached', images = excluded.images, problem = NULL,
                    updated_at = excluded.updated_at
                """, logger: logger)
            return try await Self.queue(images, source: source, on: connection, logger: logger)
        }
    }

    func recordAlbumGone(_ albumID: String, problem: String, source: String) async throws(MirrorError) {
        try await execute(
            """
            INSERT INTO albums (id, source, state, problem, updated_at) VALUES (\(albumID), \(source), 'gone', \(problem), \(Self.now()))
            ON CONFLICT (id) DO UPDATE SET state = 'gone', problem = excluded.problem, updated_at = excluded.updated_at
            """)
    }

    func pendingImages(after position: Int64, limit: Int) async throws(MirrorError) -> (images: [FoundImage], next: Int64?) {
        let rows = try await rows(
            "SELECT seq, id, image, album_id FROM images WHERE NOT done AND seq > \(position) ORDER BY seq LIMIT \(limit)")
        var images: [FoundImage] = []
        var last: Int64?
        for row in rows {
            let (seq, id, payload, albumID) = try decode(row, (Int64, String, String, String?).self)
            last = seq
            images.append(FoundImage(id: id, payload: payload, albumID: albumID))
        }
        return (images, rows.count == limit ? last : nil)
    }

    func markImagesDone(_ imageIDs: [String]) async throws(MirrorError) {
        guard !imageIDs.isEmpty else { return }
        try await execute("UPDATE images SET done = true, claimed_by = NULL, lease_until = NULL WHERE id = ANY(\(imageIDs))")
    }

    /// Each host keeps its own budget: the API counts calls by the address they come from.
    package func budget(api: String) async throws(MirrorError) -> APIBudget? {
        guard let row = try await rows("SELECT budget FROM api_budgets WHERE api = \(budgetKey(api))").first else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(APIBudget.self, from: Data(try decode(row, String.self).utf8))
    }

    func saveBudget(_ budget: APIBudget, api: String) async throws(MirrorError) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard let data = try? encoder.encode(budget) else { return }
        try await execute(
            """
            INSERT INTO api_budgets (api, budget) VALUES (\(budgetKey(api)), \(String(decoding: data, as: UTF8.self)))
            ON CONFLICT (api) DO UPDATE SET budget = excluded.budget
            """)
    }

    private func budgetKey(_ api: String) -> String {
        "\(api) from \(hostName)"
    }

    package func figures(source: String) async throws(MirrorError) -> CrawlFigures {
        let row = try await rows(
            """
            SELECT (SELECT count(*) FROM listing_entries WHERE source = \(source)),
                (SELECT count(*) FROM images WHERE source = \(source)),
                (SELECT count(*) FROM images WHERE NOT done),
                (SELECT count(*) FROM albums WHERE source = \(source) AND state = 'cached'),
                (SELECT count(*) FROM albums WHERE state = 'pending'),
                (SELECT count(*) FROM albums WHERE source = \(source) AND state = 'gone')
            """).first
        var counts = (0, 0, 0, 0, 0, 0)
        if let row { counts = try decode(row, (Int, Int, Int, Int, Int, Int).self) }
        return CrawlFigures(
            cursor: try await cursor(for: source), entriesKnown: counts.0, imagesKnown: counts.1, imagesPending: counts.2,
            albumsCached: counts.3, albumsPending: counts.4, albumsGone: counts.5)
    }

    package func crawlSources() async throws(MirrorError) -> [String] {
        var sources: [String] = []
        for row in try await rows("SELECT source FROM crawl_cursors ORDER BY source") { sources.append(try decode(row, String.self)) }
        return sources
    }

    // MARK: - Helpers

    /// Queues images not queued before; returns those it added.
    private static func queue(
        _ images: [FoundImage], source: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> [FoundImage] {
        var added: [FoundImage] = []
        let now = now()
        for image in images {
            let inserted = try await connection.query(
                """
                INSERT INTO images (id, source, album_id, image, listed_at) VALUES (\(image.id), \(source), \(image.albumID), \(image.payload), \(now))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger: logger).collect()
            if !inserted.isEmpty { added.append(image) }
        }
        return added
    }

    private static func saveCursor(_ cursor: CrawlCursor) -> PostgresQuery {
        """
        INSERT INTO crawl_cursors (source, pass, next_page, head_id, total_items, page_size, pages_read, updated_at,
            last_full_pass, suspected_end)
        VALUES (\(cursor.source), \(cursor.pass), \(cursor.nextPage), \(cursor.headID), \(cursor.totalItems), \(cursor.pageSize),
            \(cursor.pagesRead), \(now()), \(cursor.lastFullPass), \(cursor.suspectedEnd))
        ON CONFLICT (source) DO UPDATE SET pass = excluded.pass, next_page = excluded.next_page, head_id = excluded.head_id,
            total_items = excluded.total_items, page_size = excluded.page_size, pages_read = excluded.pages_read,
            updated_at = excluded.updated_at, last_full_pass = excluded.last_full_pass, suspected_end = excluded.suspected_end
        """
    }
}
