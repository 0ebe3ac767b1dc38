import CSQLite
import Foundation

/// What a mirror directory remembers between runs, in `.mirror/state.sqlite3`: which URL became
/// which file, which media the host has removed, and where each tag's crawl stands (see
/// ``CrawlStore``).
///
/// It makes runs incremental whatever the ``DownloadMode``: a URL mirrored before is not fetched
/// again while its file is there, so `new-file` mode does not pile up `name(1).jpg` copies of the
/// same image run after run; removed media is not asked for again. A damaged database is moved
/// aside and started afresh, never a reason to touch a mirrored file. Writes are checked: one
/// that fails is an error for the caller.
public actor StateDatabase {
    let db: SQLiteConnection
    public nonisolated let path: String

    /// Opens (or creates) the database of `directory`. An unreadable one is renamed
    /// `state.sqlite3.damaged-<time>` and replaced; `onDamage` hears about it.
    public init(directory: MirrorDirectory, onDamage: (String) -> Void = { _ in }) throws(MirrorError) {
        path = directory.stateDirectory.appendingPathComponent("state.sqlite3").path
        do {
            db = try Self.open(path)
        } catch where error.isDamage {
            let aside = path + ".damaged-\(Int(Date().timeIntervalSince1970))"
            guard rename(path, aside) == 0 else { throw .fileSystem(path: path, errno: errno) }
            unlink(path + "-wal")
            unlink(path + "-shm")
            onDamage("state database \(path) was damaged (\(error)); moved to \(aside), starting a new one")
            do {
                db = try Self.open(path)
            } catch {
                throw .stateDatabase(path: path, problem: "\(error)")
            }
        } catch {
            // Not damage (a full disk, a read-only directory, a newer schema): the file may be
            // fine, so it stays where it is and the run stops.
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    /// Opens the database of `directory` for reading only (`mirror status`): nil when there is none
    /// or it cannot be read; nothing is created, migrated or moved.
    public static func forReading(in directory: MirrorDirectory) -> StateDatabase? {
        let path = directory.stateDirectory.appendingPathComponent("state.sqlite3").path
        guard FileManager.default.fileExists(atPath: path),
              let db = try? SQLiteConnection.open(path, readOnly: true),
              (try? db.rows("PRAGMA user_version").first?.first?.integer) == Int64(StateSchema.latest)
        else { return nil }
        return StateDatabase(db: db, path: path)
    }

    private init(db: SQLiteConnection, path: String) {
        self.db = db
        self.path = path
    }

    private static func open(_ path: String) throws(SQLiteError) -> SQLiteConnection {
        let db = try SQLiteConnection.open(path)
        try db.script("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
        // A file that is not a database fails here, not at open.
        try StateSchema.migrate(db)
        try db.execute("SELECT count(*) FROM mirrored")
        return db
    }

    // MARK: - Mirrored and removed media

    /// The file (relative to the mirror) that `url` was saved as, if it was. A failed lookup means
    /// "not known", which at worst fetches a file again.
    public func mirroredPath(of url: String) -> String? {
        fate(of: url).mirroredPath
    }

    public func recordMirrored(_ url: String, as path: String, bytes: Int64) throws(MirrorError) {
        try write(
            "INSERT INTO mirrored (url, path, bytes, mirrored_at) VALUES (?1, ?2, ?3, ?4) "
                + "ON CONFLICT(url) DO UPDATE SET path = excluded.path, bytes = excluded.bytes, mirrored_at = excluded.mirrored_at",
            [.text(url), .text(path), .integer(bytes), .text(Self.now())])
    }

    /// What is known of `url`, in one query: the path it was mirrored as, and whether it is
    /// known to be removed upstream.
    func fate(of url: String) -> (mirroredPath: String?, removed: Bool) {
        let row = (try? db.rows(
            "SELECT (SELECT path FROM mirrored WHERE url = ?1), EXISTS (SELECT 1 FROM removed WHERE url = ?1)",
            [.text(url)]))?.first
        return (row?.first?.text, row?.last?.integer == 1)
    }

    public func recordRemoved(_ url: String) throws(MirrorError) {
        try write("INSERT OR IGNORE INTO removed (url, seen_at) VALUES (?1, ?2)", [.text(url), .text(Self.now())])
    }

    /// The URL that was saved as `path`, if any.
    public func url(mirroredAs path: String) -> String? {
        (try? db.rows("SELECT url FROM mirrored WHERE path = ?1", [.text(path)]))?.first?.first?.text
    }

    // MARK: - Helpers

    func write(_ sql: String, _ arguments: [SQLiteValue]) throws(MirrorError) {
        do {
            try db.execute(sql, arguments)
        } catch {
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    func read(_ sql: String, _ arguments: [SQLiteValue] = []) throws(MirrorError) -> [[SQLiteValue]] {
        do {
            return try db.rows(sql, arguments)
        } catch {
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    func inTransaction<T>(_ body: () throws(SQLiteError) -> T) throws(MirrorError) -> T {
        do {
            return try db.transaction(body)
        } catch {
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    /// Now, as ISO 8601 text, through the Sendable format style (an `ISO8601DateFormatter` per
    /// write cost more than the write).
    static func now() -> String {
        Date().formatted(.iso8601)
    }
}
