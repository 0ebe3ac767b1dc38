import Foundation
import MirrorKit
import PostgresNIO

extension PostgresState {
    package func cursor(for source: String) async throws(MirrorError) -> CrawlCursor {
        var cursor = CrawlCursor(source: source)
        guard let row = try await rows(
            """
            SELECT pass, next_page, head_id, total_items, page_size, pages_read, updated_at, last_full_pass, suspected_end
            FROM crawl_cursors WHERE source = \(source)
            """).first
        else { return cursor }
        func number(_ name: String) throws(MirrorError) -> Int? { try decode(row, Int?.self, column: name) }
        cursor.pass = try decode(row, Int.self, column: "pass")
        cursor.nextPage = try number("next_page")
        cursor.headID = try decode(row, String?.self, column: "head_id")
        cursor.totalItems = try number("total_items")
        cursor.pageSize = try number("page_size")
        cursor.pagesRead = try decode(row, Int.self, column: "pages_read")
        let updatedAt = try decode(row, String.self, column: "updated_at")
        cursor.updatedAt = try? Date(updatedAt, strategy: .iso8601)
        cursor.lastFullPass = try number("last_full_pass")
        cursor.suspectedEnd = try number("suspected_end")
        return cursor
    }

    package func saveCursor(_ cursor: CrawlCursor) async throws(MirrorError) {
        try await execute(Self.saveCursor(cursor))
    }

    package func recordPage(_ page: ListedPage, source: String) async throws(MirrorError) -> [FoundImage] {
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
            let added = try await Self.queue(page.images, holder: source, for: page.lister, on: connection, logger: logger)
            try await connection.query(Self.saveCursor(page.cursor), logger: logger)
            return added
        }
    }

    package func knownEntries(_ entryIDs: [String], source: String) async throws(MirrorError) -> [String: Int] {
        var known: [String: Int] = [:]
        let ids = Array(Set(entryIDs))
        for row in try await rows("SELECT entry_id, pass FROM listing_entries WHERE source = \(source) AND entry_id = ANY(\(ids))") {
            let (id, pass) = (try decode(row, String.self, column: "entry_id"), try decode(row, Int.self, column: "pass"))
            known[id] = pass
        }
        return known
    }

    package func cachedAlbum(_ albumID: String) async throws(MirrorError) -> String? {
        guard let row = try await rows("SELECT images FROM albums WHERE id = \(albumID) AND state = 'cached'").first else { return nil }
        return try decode(row, String.self, column: "images")
    }

    package func albumContext(_ albumID: String) async throws(MirrorError) -> String? {
        guard let row = try await rows("SELECT context FROM albums WHERE id = \(albumID)").first else { return nil }
        return try decode(row, String?.self, column: "context")
    }

    package func pendingAlbums(listedBy prefix: String, orShownBy listings: [String]) async throws(MirrorError) -> [(id: String, listing: String)] {
        var albums: [(id: String, listing: String)] = []
        for row in try await rows(
            """
            SELECT id, source FROM albums WHERE state = 'pending' AND (left(source, length(\(prefix))) = \(prefix)
                OR EXISTS (SELECT 1 FROM listing_entries AS e WHERE e.source = ANY(\(listings)) AND e.entry_id = albums.id))
            ORDER BY seq
            """
        ) {
            albums.append((try decode(row, String.self, column: "id"), try decode(row, String.self, column: "source")))
        }
        return albums
    }

    package func recordAlbumFailure(_ albumID: String, problem: String) async throws(MirrorError) -> Int {
        let row = try await rows(
            """
            UPDATE albums SET failures = failures + 1, problem = \(problem), updated_at = \(Self.now()) WHERE id = \(albumID)
            RETURNING failures
            """).first
        guard let row else { return 0 }
        return try decode(row, Int.self, column: "failures")
    }

    package func recordAlbum(
        _ albumID: String, images: [FoundImage], list json: String, source: String, lister: Lister
    ) async throws(MirrorError) -> [FoundImage] {
        let now = Self.now()
        return try await transaction { connection, logger in
            try await connection.query(
                """
                INSERT INTO albums (id, source, state, images, updated_at) VALUES (\(albumID), \(source), 'cached', \(json), \(now))
                ON CONFLICT (id) DO UPDATE SET state = 'cached', images = excluded.images, problem = NULL,
                    updated_at = excluded.updated_at
                """, logger: logger)
            return try await Self.queue(images, holder: source, for: lister, on: connection, logger: logger)
        }
    }

    package func recordAlbumGone(_ albumID: String, problem: String, source: String) async throws(MirrorError) {
        try await execute(
            """
            INSERT INTO albums (id, source, state, problem, updated_at) VALUES (\(albumID), \(source), 'gone', \(problem), \(Self.now()))
            ON CONFLICT (id) DO UPDATE SET state = 'gone', problem = excluded.problem, updated_at = excluded.updated_at
            """)
    }

    package func pendingImages(listedBy prefix: String, after position: Int64, limit: Int) async throws(MirrorError)
        -> (images: [FoundImage], next: Int64?) {
        let rows = try await rows(
            """
            SELECT seq, id, image, album_id FROM images
            WHERE NOT done AND seq > \(position) AND left(source, length(\(prefix))) = \(prefix) ORDER BY seq LIMIT \(limit)
            """)
        var images: [FoundImage] = []
        var last: Int64?
        for row in rows {
            let seq = try decode(row, Int64.self, column: "seq")
            let (id, payload) = (try decode(row, String.self, column: "id"), try decode(row, String.self, column: "image"))
            let albumID = try decode(row, String?.self, column: "album_id")
            last = seq
            images.append(FoundImage(id: id, payload: payload, albumID: albumID))
        }
        return (images, rows.count == limit ? last : nil)
    }

    package func markImagesDone(_ imageIDs: [String]) async throws(MirrorError) {
        guard !imageIDs.isEmpty else { return }
        try await execute("UPDATE images SET done = true, claimed_by = NULL, lease_until = NULL WHERE id = ANY(\(imageIDs))")
    }

    /// Each budget group (by default each host) keeps its own budget: the API counts calls by the
    /// address they come from. Its times are kept on the database's clock, since the workers of a
    /// group run on hosts whose clocks differ, and read back on this host's.
    package func budget(api: String) async throws(MirrorError) -> APIBudget? {
        let sent = Date()
        guard let row = try await rows("SELECT budget, now() AS now FROM api_budgets WHERE api = \(budgetKey(api))").first else {
            return nil
        }
        let skew = try Self.skew(databaseNow: try decode(row, Date.self, column: "now"), sent: sent)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let stored = try? decoder.decode(APIBudget.self, from: Data(try decode(row, String.self, column: "budget").utf8))
        return stored?.shifted(by: -skew)
    }

    /// Keeps `budget` unless the row holds figures observed later (by another worker of the group).
    package func saveBudget(_ budget: APIBudget, api: String) async throws(MirrorError) {
        let sent = Date()
        guard let row = try await rows("SELECT now() AS now").first else { return }
        let skew = try Self.skew(databaseNow: try decode(row, Date.self, column: "now"), sent: sent)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard let data = try? encoder.encode(budget.shifted(by: skew)) else { return }
        try await execute(
            """
            INSERT INTO api_budgets (api, budget) VALUES (\(budgetKey(api)), \(String(decoding: data, as: UTF8.self)))
            ON CONFLICT (api) DO UPDATE SET budget = excluded.budget
            WHERE (excluded.budget::jsonb ->> 'observedAt')::float8 >= coalesce((api_budgets.budget::jsonb ->> 'observedAt')::float8, 0)
            """)
    }

    /// Seconds the database's clock is ahead of this host's, from its `now()` in an answer to a
    /// query sent at `sent` (the middle of the round trip taken as the moment it was read), in
    /// whole seconds: finer would be noise, and clocks that agree give exactly 0.
    private static func skew(databaseNow: Date, sent: Date) throws(MirrorError) -> Double {
        let received = Date()
        return databaseNow.timeIntervalSince(sent.addingTimeInterval(received.timeIntervalSince(sent) / 2)).rounded()
    }

    /// A named group's key is apart from every host's.
    private func budgetKey(_ api: String) -> String {
        budgetGroup.map { "\(api) from group \($0)" } ?? "\(api) from \(hostName)"
    }

    package func figures(source: String) async throws(MirrorError) -> CrawlFigures {
        let row = try await rows(
            """
            SELECT (SELECT count(*) FROM listing_entries WHERE source = \(source)) AS entries,
                (SELECT count(*) FROM images WHERE source = \(source)) AS images,
                (SELECT count(*) FROM images WHERE NOT done) AS pending_images,
                (SELECT count(*) FROM albums WHERE source = \(source) AND state = 'cached') AS cached_albums,
                (SELECT count(*) FROM albums WHERE state = 'pending') AS pending_albums,
                (SELECT count(*) FROM albums WHERE source = \(source) AND state = 'gone') AS gone_albums
            """).first
        var counts = (0, 0, 0, 0, 0, 0)
        if let row {
            func count(_ name: String) throws(MirrorError) -> Int { try decode(row, Int.self, column: name) }
            counts = (
                try count("entries"), try count("images"), try count("pending_images"), try count("cached_albums"),
                try count("pending_albums"), try count("gone_albums"))
        }
        return CrawlFigures(
            cursor: try await cursor(for: source), entriesKnown: counts.0, imagesKnown: counts.1, imagesPending: counts.2,
            albumsCached: counts.3, albumsPending: counts.4, albumsGone: counts.5)
    }

    package func crawlSources() async throws(MirrorError) -> [String] {
        var sources: [String] = []
        for row in try await rows("SELECT source FROM crawl_cursors ORDER BY source") { sources.append(try decode(row, String.self, column: "source")) }
        return sources
    }

    // MARK: - Helpers

    /// Queues images not queued before; returns those it added.
    /// Queues images not queued before, held by the lister when it wants them or `holder` is its
    /// own listing, else by `holder`; takes over those it wants that another owner holds and no run
    /// finished. Returns what the lister now holds of them. Only a row taken over is locked: a
    /// conflict that changes nothing locks nothing another worker may be writing.
    private static func queue(
        _ images: [FoundImage], holder: String, for lister: Lister, on connection: PostgresConnection, logger: Logger
    ) async throws -> [FoundImage] {
        var added: [FoundImage] = []
        let now = now()
        for image in images {
            let wanted = lister.wants.contains(image.id)
            let source = wanted ? lister.listing : holder
            let inserted = try await connection.query(
                """
                INSERT INTO images (id, source, album_id, image, listed_at) VALUES (\(image.id), \(source), \(image.albumID), \(image.payload), \(now))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger: logger).collect()
            if !inserted.isEmpty {
                if source == lister.listing { added.append(image) }
                continue
            }
            guard wanted else { continue }
            let owner = lister.owner
            let taken = try await connection.query(
                """
                UPDATE images SET source = \(lister.listing)
                WHERE id = \(image.id) AND NOT done AND left(source, length(\(owner))) <> \(owner)
                RETURNING 1
                """, logger: logger).collect()
            if !taken.isEmpty { added.append(image) }
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
