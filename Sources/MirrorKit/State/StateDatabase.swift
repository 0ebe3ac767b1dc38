import CSQLite
import FoundationEssentials
import Glibc

/// What a mirror directory remembers between runs, in `.mirror/state.sqlite3`: which URL became
/// which file, which media the host has removed, and where each tag's crawl stands (see
/// ``CrawlStore``).
///
/// It makes runs incremental whatever the ``DownloadMode``: every file keeps the item it is a
/// version of, its validators and MD5 (``MirroredFile``), so `skip-if-exists` asks nothing for an
/// item it has and `new-file` asks only whether it changed; removed media is not asked for again. A damaged database is moved
/// aside and started afresh, never a reason to touch a mirrored file. Writes are checked: one
/// that fails is an error for the caller.
package actor StateDatabase: MirrorStore {
    let db: SQLiteConnection
    /// Files waiting for their row, and how to tell each caller it is written (see ``record(_:)``).
    var waitingRecords: [WaitingRecord] = []
    /// How those rows are grouped into transactions.
    var recordGrouping = RecordGrouping()
    /// Groups written so far: a group's timer that finds the count moved on has nothing to do.
    var recordGroupsWritten = 0
    nonisolated let path: String
    package nonisolated var location: String { path }
    /// The schema the database is at: the latest, unless opened for reading as it was left.
    package nonisolated let schemaVersion: Int32

    /// Opens (or creates) the database in `folder` (a mirror's `.mirror`). An unreadable one is renamed
    /// `state.sqlite3.damaged-<time>` and replaced; `onDamage` hears about it.
    ///
    /// SQLite opens files by path, so the files are checked through `.mirror`'s descriptor first
    /// (each a regular file with one name, no link) and the database is checked to be the file
    /// that was checked once open: a link planted as `state.sqlite3` is refused, not written.
    init(folder: Directory, onDamage: (String) -> Void = { _ in }) throws(MirrorError) {
        path = folder.path(of: Self.fileName)
        schemaVersion = StateSchema.latest
        try Self.checkFiles(in: folder)
        try Self.makePrivate(in: folder)
        do {
            db = try Self.open(path, in: folder)
        } catch where error.isDamage {
            let aside = Self.fileName + ".damaged-\(Int(Date().timeIntervalSince1970))"
            guard renameat(folder.descriptor, Self.fileName, folder.descriptor, aside) == 0 else {
                throw .fileSystem(FileSystemError(path: path, errno: errno))
            }
            folder.remove(Self.fileName + "-wal")
            folder.remove(Self.fileName + "-shm")
            onDamage("state database \(path) was damaged (\(error)); moved to \(folder.path(of: aside)), starting a new one")
            try Self.makePrivate(in: folder)
            do {
                db = try Self.open(path, in: folder)
            } catch {
                throw .stateDatabase(path: path, problem: "\(error)")
            }
        } catch {
            // Not damage (a full disk, a read-only directory, a newer schema, a planted file): the
            // file may be fine, so it stays where it is and the run stops.
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    static let fileName = "state.sqlite3"

    /// Makes the database (created empty when missing) and its journals readable by the user
    /// alone, whatever the umask: SQLite gives the journals it creates the database's mode.
    private static func makePrivate(in folder: Directory) throws(MirrorError) {
        for name in [fileName, fileName + "-wal", fileName + "-shm", fileName + "-journal"] {
            var fd = openat(folder.descriptor, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            if fd < 0, errno == ENOENT, name == fileName {
                fd = openat(folder.descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            }
            if fd < 0 {
                if errno == ENOENT { continue }
                throw .fileSystem(FileSystemError(path: folder.path(of: name), errno: errno))
            }
            defer { Glibc.close(fd) }
            guard fchmod(fd, 0o600) == 0 else { throw .fileSystem(FileSystemError(path: folder.path(of: name), errno: errno)) }
        }
    }

    /// Throws unless the database and its journals are, where present, regular files with one name.
    private static func checkFiles(in folder: Directory) throws(MirrorError) {
        for name in [fileName, fileName + "-wal", fileName + "-shm", fileName + "-journal"] {
            if let info = folder.status(of: name), let problem = Directory.problem(withFile: info) {
                throw .fileSystem(FileSystemError(path: folder.path(of: name), problem: problem))
            }
        }
    }

    /// Opens the database in `folder` for reading only (`mirror status`): nil when there is none
    /// or it cannot be read; nothing is created, migrated or moved. A database of an older schema
    /// (a mirror last run by an older version) is read as it is: what it lacks reads as unknown.
    static func forReading(in folder: Directory) -> StateDatabase? {
        let path = folder.path(of: fileName)
        guard folder.contains(fileName), (try? checkFiles(in: folder)) != nil,
              let db = try? SQLiteConnection.open(path, readOnly: true),
              isSameFile(fileName, in: folder, as: path),
              let version = try? db.rows("PRAGMA user_version").first?.integer("user_version"),
              (1...Int64(StateSchema.latest)).contains(version)
        else { return nil }
        return StateDatabase(db: db, path: path, schemaVersion: Int32(version))
    }

    /// Whether `path` (as SQLite opened it) is the file `name` in `folder`: nothing was swapped in
    /// between the check and the open.
    private static func isSameFile(_ name: String, in folder: Directory, as path: String) -> Bool {
        var opened = stat()
        guard let checked = folder.status(of: name), lstat(path, &opened) == 0 else { return false }
        return checked.st_ino == opened.st_ino && checked.st_dev == opened.st_dev && opened.st_mode & S_IFMT == S_IFREG
    }

    private init(db: SQLiteConnection, path: String, schemaVersion: Int32) {
        self.db = db
        self.path = path
        self.schemaVersion = schemaVersion
    }

    private static func open(_ path: String, in folder: Directory) throws(SQLiteError) -> SQLiteConnection {
        let db = try SQLiteConnection.open(path)
        guard isSameFile(fileName, in: folder, as: path) else {
            throw SQLiteError(description: "\(path) changed while it was opened (a link or another file was put in its place)")
        }
        // A page cache of 512 KiB, not SQLite's 2 MiB: a run looks rows up by key across the whole
        // file, so a larger cache misses as often, and the kernel's page cache holds the file
        // anyway. An unchanged rerun of 10,000 items: 1 MiB less at its peak, no more CPU.
        try db.script("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -512;")
        // A file that is not a database fails here, not at open.
        try StateSchema.migrate(db)
        try db.execute("SELECT count(*) FROM files")
        return db
    }

    // MARK: - Removed media

    package func recordRemoved(_ url: String) throws(MirrorError) {
        try write("INSERT OR IGNORE INTO removed (url, seen_at) VALUES (?1, ?2)", [.text(url), .text(Self.now())])
    }

    // MARK: - Helpers
    //
    // Every statement but a ``fate(of:url:)`` first writes the rows of finished files that wait
    // for their group (see ``record(_:)``): what a run reads or changes next sees every file it
    // was told is recorded.

    func write(_ sql: String, _ arguments: [SQLiteValue]) throws(MirrorError) {
        writeWaitingRecords()
        do {
            try db.execute(sql, arguments)
        } catch {
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    func read(_ sql: String, _ arguments: [SQLiteValue] = []) throws(MirrorError) -> [SQLiteRow] {
        writeWaitingRecords()
        do {
            return try db.rows(sql, arguments)
        } catch {
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    /// The rows of `sql`, each made into a `T` by `decode`: a column missing, of the wrong kind, or
    /// NULL where it may not be is an error of the database, not a default.
    func read<T>(
        _ sql: String, _ arguments: [SQLiteValue] = [], as decode: (SQLiteRow) throws(SQLiteError) -> T
    ) throws(MirrorError) -> [T] {
        writeWaitingRecords()
        return try query(sql, arguments, as: decode)
    }

    /// ``read(_:_:as:)`` as the database is, with the rows waiting for their group unwritten.
    func query<T>(
        _ sql: String, _ arguments: [SQLiteValue] = [], as decode: (SQLiteRow) throws(SQLiteError) -> T
    ) throws(MirrorError) -> [T] {
        do {
            var values: [T] = []
            for row in try db.rows(sql, arguments) { values.append(try decode(row)) }
            return values
        } catch {
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    func inTransaction<T>(_ body: () throws(SQLiteError) -> T) throws(MirrorError) -> T {
        writeWaitingRecords()
        do {
            return try db.transaction(body)
        } catch {
            throw .stateDatabase(path: path, problem: "\(error)")
        }
    }

    /// Now, as ISO 8601 text, through the Sendable format style (an `ISO8601DateFormatter` per
    /// write cost more than the write).
    package static func now() -> String {
        Date().formatted(.iso8601)
    }
}
