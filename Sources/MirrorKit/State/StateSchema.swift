/// The state database's schema, as numbered migrations: a database is brought to the newest
/// version one step at a time, each step in one transaction, and one newer than this build knows
/// is refused rather than guessed at.
enum StateSchema {
    static let migrations: [(version: Int32, sql: String)] = [
        (1, """
            CREATE TABLE IF NOT EXISTS mirrored (
                url TEXT PRIMARY KEY, path TEXT NOT NULL, bytes INTEGER NOT NULL, mirrored_at TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS removed (url TEXT PRIMARY KEY, seen_at TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS listings (source TEXT PRIMARY KEY, completed_at TEXT NOT NULL);
            """),
        // The crawl cursor, the entries each listing has shown, the album cache, the images found
        // and not yet mirrored, and the API budget last seen. The "listing complete" flag of
        // version 1 is replaced by the cursor's passes.
        (2, """
            CREATE TABLE crawl_cursors (
                source TEXT PRIMARY KEY,
                pass INTEGER NOT NULL,
                next_page INTEGER,
                head_id TEXT,
                total_items INTEGER,
                page_size INTEGER,
                pages_read INTEGER NOT NULL DEFAULT 0,
                last_full_pass INTEGER,
                suspected_end INTEGER,
                updated_at TEXT NOT NULL);
            CREATE TABLE listing_entries (
                source TEXT NOT NULL, entry_id TEXT NOT NULL, pass INTEGER NOT NULL,
                PRIMARY KEY (source, entry_id)) WITHOUT ROWID;
            CREATE TABLE albums (
                id TEXT PRIMARY KEY, source TEXT NOT NULL, state TEXT NOT NULL, images TEXT, problem TEXT,
                failures INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL);
            CREATE INDEX albums_pending ON albums (state);
            CREATE TABLE images (
                id TEXT PRIMARY KEY, source TEXT NOT NULL, album_id TEXT, image TEXT NOT NULL,
                done INTEGER NOT NULL DEFAULT 0, listed_at TEXT NOT NULL);
            CREATE INDEX images_pending ON images (done);
            CREATE TABLE api_budgets (api TEXT PRIMARY KEY, budget TEXT NOT NULL);
            DROP TABLE IF EXISTS listings;
            """),
        // Versions: every file in the mirror, with the item it is a version of (a media URL, a
        // feed entry), the URL that served it, its validators, size, MD5 and release. The URL →
        // path map of version 1 becomes one file per URL, the URL its item.
        (3, """
            CREATE TABLE files (
                path TEXT PRIMARY KEY,
                item TEXT NOT NULL,
                source TEXT,
                url TEXT NOT NULL,
                etag TEXT,
                last_modified TEXT,
                bytes INTEGER NOT NULL,
                md5 TEXT,
                version TEXT,
                updated TEXT,
                mirrored_at TEXT NOT NULL,
                checked_at TEXT NOT NULL);
            CREATE INDEX files_by_item ON files (item);
            INSERT OR IGNORE INTO files (path, item, url, bytes, mirrored_at, checked_at)
                SELECT path, url, url, bytes, mirrored_at, mirrored_at FROM mirrored ORDER BY rowid;
            DROP TABLE mirrored;
            """),
        // Runs: what each run did and how it ended, for `mirror status` and the metrics file's
        // "last success". An album waiting to be expanded keeps its title and tags for its
        // images' metadata.
        (4, """
            CREATE TABLE runs (
                id INTEGER PRIMARY KEY,
                source TEXT NOT NULL,
                started_at INTEGER NOT NULL,
                ended_at INTEGER NOT NULL,
                exit_status INTEGER NOT NULL,
                record TEXT NOT NULL);
            CREATE INDEX runs_by_source ON runs (source, exit_status);
            ALTER TABLE albums ADD COLUMN context TEXT;
            """),
        // Every run of a source reads its files (to find those deleted from the disk), and
        // claims the ones recorded before sources were: neither may read the whole table.
        (5, """
            CREATE INDEX IF NOT EXISTS files_by_source ON files (source);
            """),
        // A sweep reads a source's files a page at a time, least recently confirmed first.
        (6, """
            CREATE INDEX IF NOT EXISTS files_by_source_checked ON files (source, checked_at);
            """),
        // Passwords of private feeds' URLs that earlier versions stored (see ``removeUserinfo(_:)``).
        (7, ""),
        // The same again for the entry ids migration 7 did not see: a guid that is a private
        // feed's link, stored with its login in the item until the walker redacted it as 7 does.
        (8, ""),
    ]

    /// What a migration does that SQL cannot say, after its SQL.
    private static let steps: [Int32: @Sendable (SQLiteConnection) throws(SQLiteError) -> Void] = [7: removeUserinfo, 8: removeUserinfo]

    static var latest: Int32 { migrations.last!.version }

    /// Brings `db` to the latest version.
    static func migrate(_ db: SQLiteConnection) throws(SQLiteError) {
        let version = try db.rows("PRAGMA user_version").first.map { row throws(SQLiteError) in Int32(try row.integer("user_version")) } ?? 0
        guard version <= latest else {
            throw SQLiteError(description: "schema version \(version), this mirror knows up to \(latest)")
        }
        // Migrations 7 and 8 write over passwords: with secure_delete the old bytes do not stay in
        // the file's free space, and the checkpoint after it empties the journal that still has them.
        let removesUserinfo = version < 8
        if removesUserinfo { try db.script("PRAGMA secure_delete = ON") }
        for migration in migrations where migration.version > version {
            try db.transaction { () throws(SQLiteError) in
                try db.script(migration.sql)
                if let step = steps[migration.version] { try step(db) }
                try db.script("PRAGMA user_version = \(migration.version)")
            }
        }
        if removesUserinfo { try db.script("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA secure_delete = OFF") }
    }
}
