/// The PostgreSQL state's schema, as numbered migrations recorded in `schema_migrations`: each
/// applied in one transaction under an advisory lock, so workers starting at once migrate it once;
/// a database newer than this build is refused rather than guessed at.
///
/// The tables are the SQLite state's (see ``StateSchema``), with what sharing adds: claims on
/// images (who downloads them, until when), workers, leases (the crawl of a tag), and the
/// cluster-wide slots per media host.
enum PostgresSchema {
    static let migrations: [(version: Int, sql: [String])] = [
        (1, [
            """
            CREATE TABLE files (
                id BIGSERIAL PRIMARY KEY, path TEXT NOT NULL UNIQUE, item TEXT NOT NULL, source TEXT,
                url TEXT NOT NULL, etag TEXT, last_modified TEXT, bytes BIGINT NOT NULL, md5 TEXT,
                version TEXT, updated TEXT, mirrored_at TEXT NOT NULL, checked_at TEXT NOT NULL)
            """,
            "CREATE INDEX files_by_item ON files (item, id)",
            "CREATE TABLE removed (url TEXT PRIMARY KEY, seen_at TEXT NOT NULL)",
            """
            CREATE TABLE crawl_cursors (
                source TEXT PRIMARY KEY, pass BIGINT NOT NULL, next_page BIGINT, head_id TEXT, total_items BIGINT,
                page_size BIGINT, pages_read BIGINT NOT NULL DEFAULT 0, last_full_pass BIGINT, suspected_end BIGINT,
                updated_at TEXT NOT NULL)
            """,
            """
            CREATE TABLE listing_entries (
                source TEXT NOT NULL, entry_id TEXT NOT NULL, pass BIGINT NOT NULL, PRIMARY KEY (source, entry_id))
            """,
            """
            CREATE TABLE albums (
                seq BIGSERIAL, id TEXT PRIMARY KEY, source TEXT NOT NULL, state TEXT NOT NULL, images TEXT,
                problem TEXT, failures BIGINT NOT NULL DEFAULT 0, updated_at TEXT NOT NULL, context TEXT)
            """,
            "CREATE INDEX albums_pending ON albums (state, seq)",
            // claimed_by and lease_until: the worker downloading the image and until when its claim
            // holds; a claim not renewed in time is anyone's. A lease with no holder parks an image
            // that failed until then.
            """
            CREATE TABLE images (
                seq BIGSERIAL UNIQUE, id TEXT PRIMARY KEY, source TEXT NOT NULL, album_id TEXT, image TEXT NOT NULL,
                done BOOLEAN NOT NULL DEFAULT false, listed_at TEXT NOT NULL, claimed_by TEXT, lease_until TIMESTAMPTZ)
            """,
            "CREATE INDEX images_open ON images (seq) WHERE NOT done",
            "CREATE TABLE api_budgets (api TEXT PRIMARY KEY, budget TEXT NOT NULL)",
            """
            CREATE TABLE runs (
                id BIGSERIAL PRIMARY KEY, source TEXT NOT NULL, started_at BIGINT NOT NULL, ended_at BIGINT NOT NULL,
                exit_status BIGINT NOT NULL, record TEXT NOT NULL, worker TEXT)
            """,
            "CREATE INDEX runs_by_source ON runs (source, exit_status)",
            """
            CREATE TABLE workers (
                id TEXT PRIMARY KEY, host TEXT NOT NULL, pid BIGINT NOT NULL, source TEXT NOT NULL,
                started_at TIMESTAMPTZ NOT NULL, heartbeat_at TIMESTAMPTZ NOT NULL, lease_until TIMESTAMPTZ,
                ended_at TIMESTAMPTZ, exit_status BIGINT, files_done BIGINT NOT NULL DEFAULT 0,
                bytes BIGINT NOT NULL DEFAULT 0, bytes_per_second DOUBLE PRECISION NOT NULL DEFAULT 0)
            """,
            // finished_at: when the holder last ended the work the lease is for (a tag's crawl).
            """
            CREATE TABLE leases (
                name TEXT PRIMARY KEY, holder TEXT, lease_until TIMESTAMPTZ, finished_at TIMESTAMPTZ)
            """,
            """
            CREATE TABLE host_slots (
                host TEXT NOT NULL, slot BIGINT NOT NULL, holder TEXT, lease_until TIMESTAMPTZ,
                PRIMARY KEY (host, slot))
            """,
        ]),
        // Claims by worker: a heartbeat renews its own, an idle worker asks after others', and
        // both would read every open image without it.
        (2, [
            "CREATE INDEX images_claimed ON images (claimed_by) WHERE NOT done",
        ]),
        // Every run of a source reads its files (to find those deleted from the disk), and
        // claims the ones recorded before sources were: neither may read the whole table.
        (3, [
            "CREATE INDEX IF NOT EXISTS files_by_source ON files (source)",
        ]),
        // A sweep reads a source's files a page at a time: least recently confirmed first, or
        // in the order they were recorded.
        (4, [
            "CREATE INDEX IF NOT EXISTS files_by_source_checked ON files (source, checked_at, id)",
            "CREATE INDEX IF NOT EXISTS files_by_source_id ON files (source, id)",
        ]),
        // Fencing: every take of a claim gets the next token, and a commit names its file only
        // while the image's row still carries the token its worker took it with. taken_over: a
        // claim of the image once ran out on a worker that may live on (only stopped) with its
        // partial open; every later taker resumes from a copy of its own.
        (5, [
            "CREATE SEQUENCE IF NOT EXISTS claim_fences",
            "ALTER TABLE images ADD COLUMN IF NOT EXISTS fence BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE images ADD COLUMN IF NOT EXISTS taken_over BOOLEAN NOT NULL DEFAULT false",
        ]),
    ]

    static var latest: Int { migrations.last!.version }

    /// The advisory lock key migrations run under ("mirror" in ASCII).
    static let migrationLock: Int64 = 0x6d69_7272_6f72
}
