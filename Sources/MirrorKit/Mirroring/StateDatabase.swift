import CSQLite
import Foundation

/// What a mirror directory remembers between runs, in `.mirror/state.sqlite3`: which URL became
/// which file, and which media the host has removed.
///
/// It makes runs incremental whatever the ``DownloadMode``: a URL mirrored before is not fetched
/// again while its file is there, so `new-file` mode does not pile up `name(1).jpg` copies of the
/// same image run after run; removed media is not asked for again. It is a cache of facts the
/// directory also shows: a damaged database is moved aside and started afresh, never a reason to
/// stop mirroring or to touch a mirrored file.
public actor StateDatabase {
    private let handle: OpaquePointer
    public nonisolated let path: String

    static let schemaVersion: Int32 = 1

    /// Opens (or creates) the database of `directory`. An unreadable one is renamed
    /// `state.sqlite3.damaged-<time>` and replaced; `onDamage` hears about it.
    public init(directory: MirrorDirectory, onDamage: (String) -> Void = { _ in }) throws(MirrorError) {
        path = directory.stateDirectory.appendingPathComponent("state.sqlite3").path
        do {
            handle = try Self.open(path)
        } catch let error as SQLiteError where error.isDamage {
            let aside = path + ".damaged-\(Int(Date().timeIntervalSince1970))"
            guard rename(path, aside) == 0 else { throw .fileSystem(path: path, errno: errno) }
            unlink(path + "-wal")
            unlink(path + "-shm")
            onDamage("state database \(path) was damaged (\(error)); moved to \(aside), starting a new one")
            do {
                handle = try Self.open(path)
            } catch {
                throw .stateDatabase(path: path, problem: "\(error)")
            }
        } catch {
            // Not damage (a full disk, a read-only directory, a newer schema): the file may be
            // fine, so it stays where it is and the run stops.
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    isolated deinit {
        sqlite3_close_v2(handle)
    }

    // MARK: - Queries

    /// The file (relative to the mirror) that `url` was saved as, if it was.
    public func mirroredPath(of url: String) -> String? {
        query("SELECT path FROM mirrored WHERE url = ?1", [url]).first
    }

    public func recordMirrored(_ url: String, as path: String, bytes: Int64) {
        execute(
            "INSERT INTO mirrored (url, path, bytes, mirrored_at) VALUES (?1, ?2, ?3, ?4) "
                + "ON CONFLICT(url) DO UPDATE SET path = excluded.path, bytes = excluded.bytes, mirrored_at = excluded.mirrored_at",
            [url, path, String(bytes), Self.now()])
    }

    public func isRemoved(_ url: String) -> Bool {
        !query("SELECT url FROM removed WHERE url = ?1", [url]).isEmpty
    }

    public func recordRemoved(_ url: String) {
        execute("INSERT OR IGNORE INTO removed (url, seen_at) VALUES (?1, ?2)", [url, Self.now()])
    }

    /// Whether the last run read `source`'s whole listing (see ``recordListingComplete(_:)``);
    /// forgets it, so that only a run that completes again can vouch for the listing.
    public func takeListingComplete(_ source: String) -> Bool {
        let complete = !query("SELECT source FROM listings WHERE source = ?1", [source]).isEmpty
        execute("DELETE FROM listings WHERE source = ?1", [source])
        return complete
    }

    /// The URL that was saved as `path`, if any.
    public func url(mirroredAs path: String) -> String? {
        query("SELECT url FROM mirrored WHERE path = ?1", [path]).first
    }

    /// Notes that a run read `source`'s listing to its end and mirrored all of it: from then on a
    /// newest-first listing can stop at the first page that holds nothing new.
    public func recordListingComplete(_ source: String) {
        execute(
            "INSERT INTO listings (source, completed_at) VALUES (?1, ?2) "
                + "ON CONFLICT(source) DO UPDATE SET completed_at = excluded.completed_at",
            [source, Self.now()])
    }

    /// Whether `url` is mirrored or known to be removed.
    public func isKnown(_ url: String) -> Bool {
        mirroredPath(of: url) != nil || isRemoved(url)
    }

    // MARK: - SQLite

    private struct SQLiteError: Error, CustomStringConvertible {
        var description: String
        var code: Int32 = SQLITE_ERROR

        /// The file is not (or no longer) a database: setting it aside loses nothing usable.
        var isDamage: Bool { code & 0xFF == SQLITE_NOTADB || code & 0xFF == SQLITE_CORRUPT }
    }

    private static func open(_ path: String) throws -> OpaquePointer {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(db)
            throw SQLiteError(description: message, code: status)
        }
        do {
            sqlite3_busy_timeout(db, 5000)
            try run(db, "PRAGMA journal_mode = WAL")
            try run(db, "PRAGMA synchronous = NORMAL")
            var version: Int32 = 0
            try run(db, "PRAGMA user_version") { version = sqlite3_column_int($0, 0) }
            if version == 0 {
                try run(db, """
                    CREATE TABLE IF NOT EXISTS mirrored (
                        url TEXT PRIMARY KEY, path TEXT NOT NULL, bytes INTEGER NOT NULL, mirrored_at TEXT NOT NULL);
                    CREATE TABLE IF NOT EXISTS removed (url TEXT PRIMARY KEY, seen_at TEXT NOT NULL);
                    CREATE TABLE IF NOT EXISTS listings (source TEXT PRIMARY KEY, completed_at TEXT NOT NULL);
                    PRAGMA user_version = \(schemaVersion);
                    """)
            } else if version != schemaVersion {
                throw SQLiteError(description: "schema version \(version), this mirror knows \(schemaVersion)")
            }
            // A file that is not a database fails here, not at open.
            try run(db, "SELECT count(*) FROM mirrored")
        } catch {
            sqlite3_close_v2(db)
            throw error
        }
        return db
    }

    /// Runs every statement of `sql`, calling `row` for each result row.
    private static func run(_ db: OpaquePointer, _ sql: String, row: (OpaquePointer) -> Void = { _ in }) throws {
        var remaining = sql
        while !remaining.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            var statement: OpaquePointer?
            var tail: String = ""
            let status = remaining.withCString { text -> Int32 in
                var end: UnsafePointer<CChar>?
                let status = sqlite3_prepare_v2(db, text, -1, &statement, &end)
                tail = end.map { String(cString: $0) } ?? ""
                return status
            }
            guard status == SQLITE_OK else {
                throw SQLiteError(description: String(cString: sqlite3_errmsg(db)), code: sqlite3_extended_errcode(db))
            }
            remaining = tail
            guard let statement else { continue }
            defer { sqlite3_finalize(statement) }
            while true {
                let step = sqlite3_step(statement)
                if step == SQLITE_ROW { row(statement); continue }
                guard step == SQLITE_DONE else {
                    throw SQLiteError(description: String(cString: sqlite3_errmsg(db)), code: sqlite3_extended_errcode(db))
                }
                break
            }
        }
    }

    /// First-column text of every row `sql` returns; no rows when the query fails (the state is a
    /// cache: a failed lookup means "not known", which at worst fetches a file again).
    private func query(_ sql: String, _ arguments: [String]) -> [String] {
        var rows: [String] = []
        withStatement(sql, arguments) { statement in
            while sqlite3_step(statement) == SQLITE_ROW {
                if let text = sqlite3_column_text(statement, 0) { rows.append(String(cString: text)) }
            }
        }
        return rows
    }

    private func execute(_ sql: String, _ arguments: [String]) {
        withStatement(sql, arguments) { _ = sqlite3_step($0) }
    }

    private func withStatement(_ sql: String, _ arguments: [String], _ body: (OpaquePointer) -> Void) {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else { return }
        defer { sqlite3_finalize(statement) }
        for (index, argument) in arguments.enumerated() {
            mirror_sqlite3_bind_text_copy(statement, Int32(index + 1), argument)
        }
        body(statement)
    }

    private static func now() -> String {
        ISO8601DateFormatter().string(from: Date())
    }
}
