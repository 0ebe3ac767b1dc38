import Foundation
import MirrorKit
import Logging
import PostgresNIO

/// The mirror's state in a PostgreSQL database, for several workers (processes on one host, or
/// cron jobs on several) that share one mirror directory: the same records as ``StateDatabase``
/// keeps in SQLite, plus the claims, leases and workers of ``PostgresCoordinator``.
///
/// Times that decide who holds what are the server's (`now()`), so hosts whose clocks disagree
/// still agree on when a lease ran out.
package final class PostgresState: MirrorStore {
    package let location: String
    let client: PostgresClient
    let logger: Logger
    /// The host this process runs on.
    let hostName: String
    /// Whose API budget this worker reads and saves: its budget group's (`--budget-group`), else
    /// (nil) its host's. Imgur counts calls by address: workers behind one address share one.
    let budgetGroup: String?
    private let running: Task<Void, Never>
    /// The relay the connections go through, when a password must not reach just anyone.
    private let relay: CleartextPasswordGuard?

    /// Connects to `database` and brings its schema to the latest version; `readOnly`, every
    /// transaction is read-only and nothing is created: a database without the schema is refused
    /// ("no mirror state here"), as is one this build cannot read.
    package init(
        _ database: PostgresLocation, readOnly: Bool = false, budgetGroup: String? = nil, logger: Logger
    ) async throws(MirrorError) {
        location = database.description
        // PostgresNIO's own lines (connections opened and closed) are not the run's news.
        self.logger = Logger(label: "mirror.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        hostName = ProcessInfo.processInfo.hostName
        self.budgetGroup = budgetGroup
        // A password goes to a server nothing vouches for only through the guard (see there).
        let relay: CleartextPasswordGuard?
        if database.password != nil, !database.tls.verifiesCertificate {
            do {
                relay = try await CleartextPasswordGuard(host: database.host, port: database.port, tls: try database.tls.relayTLS())
            } catch let error as MirrorError {
                throw error
            } catch {
                throw .stateDatabase(path: database.description, problem: "\(error)")
            }
        } else {
            relay = nil
        }
        self.relay = relay
        var configuration = if let relay {
            PostgresClient.Configuration(
                unixSocketPath: relay.socketPath, username: database.user, password: database.password, database: database.database)
        } else {
            PostgresClient.Configuration(
                host: database.host, port: database.port, username: database.user, password: database.password,
                database: database.database, tls: try database.tls.clientTLS())
        }
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.maximumConnections = 8
        let startup = readOnly ? [("default_transaction_read_only", "on")] : []
        configuration.options.additionalStartupParameters = startup
        // One connection first: the pool retries a server that is down for a minute before a
        // query fails, where a run should say at once that the database cannot be reached.
        do {
            var probe = if let relay {
                PostgresConnection.Configuration(
                    unixSocketPath: relay.socketPath, username: database.user, password: database.password, database: database.database)
            } else {
                PostgresConnection.Configuration(
                    host: database.host, port: database.port, username: database.user, password: database.password,
                    database: database.database, tls: try database.tls.connectionTLS())
            }
            probe.options.connectTimeout = .seconds(10)
            probe.options.additionalStartupParameters = startup
            let connection = try await PostgresConnection.connect(configuration: probe, id: 0, logger: logger)
            try await connection.close()
        } catch {
            await relay?.close()
            if let problem = relay?.refused ?? database.tls.problem(with: error, host: database.host) {
                throw .stateDatabase(path: database.description, problem: problem)
            }
            throw Self.failure(error, location: database.description)
        }
        let client = PostgresClient(configuration: configuration, backgroundLogger: Logger(label: "mirror.postgres", factory: { _ in SwiftLogNoOpLogHandler() }))
        self.client = client
        running = Task { await client.run() }
        do {
            if readOnly { try await checkSchema() } else { try await migrate() }
        } catch {
            await close()
            throw error
        }
    }

    package func close() async {
        running.cancel()
        await running.value
        await relay?.close()
    }

    /// Applies the migrations this database lacks, one transaction each, under an advisory lock.
    private func migrate() async throws(MirrorError) {
        try await transaction { connection, logger in
            try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLock))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
                logger: logger)
            let rows = try await connection.query("SELECT coalesce(max(version), 0) FROM schema_migrations", logger: logger)
            var current = 0
            for try await version in rows.decode(Int.self) { current = version }
            guard current <= PostgresSchema.latest else {
                throw MirrorError.stateDatabase(
                    path: self.location, problem: "schema version \(current), this mirror knows up to \(PostgresSchema.latest)")
            }
            for migration in PostgresSchema.migrations where migration.version > current {
                for statement in migration.sql {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schema_migrations (version) VALUES (\(migration.version))", logger: logger)
            }
        }
    }

    /// Refuses a database without the schema, or with one newer than this build knows, without
    /// changing it. An older schema is read as it is: what `mirror status` reads has been there
    /// since the first (later ones add indexes and the claims' fencing tokens), so an upgraded
    /// `mirror` shows a mirror its workers have not yet migrated.
    private func checkSchema() async throws(MirrorError) {
        let present = try await rows("SELECT to_regclass('schema_migrations') IS NOT NULL AS present").first
        guard let present, try decode(present, Bool.self, column: "present") else {
            throw .noMirrorState(path: location, problem: "no mirror state here (the database has no mirror tables; a run with this --state creates them)")
        }
        let version = try await schemaVersion()
        guard version >= 1 else {
            throw .noMirrorState(path: location, problem: "no mirror state here (no migration of the mirror's tables is recorded)")
        }
        guard version <= PostgresSchema.latest else {
            throw .noMirrorState(path: location, problem: "schema version \(version), this mirror knows up to \(PostgresSchema.latest)")
        }
    }

    /// The schema version the database is at.
    package func schemaVersion() async throws(MirrorError) -> Int {
        guard let row = try await rows("SELECT coalesce(max(version), 0) AS version FROM schema_migrations").first else { return 0 }
        return try decode(row, Int.self, column: "version")
    }

    // MARK: - Files

    private static let columns =
        "path, item, source, url, etag, last_modified, bytes, md5, version, updated, mirrored_at, checked_at"

    package func latestFile(of item: String) async throws(MirrorError) -> MirroredFile? {
        try await files("SELECT \(unescaped: Self.columns) FROM files WHERE item = \(item) ORDER BY id DESC LIMIT 1").first
    }

    package func fate(of item: String, url: String) async throws(MirrorError) -> (latest: MirroredFile?, removed: Bool) {
        let latest = try await latestFile(of: item)
        let removed = try await rows("SELECT 1 FROM removed WHERE url = \(url)")
        return (latest, !removed.isEmpty)
    }

    package func versions(of item: String) async throws(MirrorError) -> [MirroredFile] {
        try await files("SELECT \(unescaped: Self.columns) FROM files WHERE item = \(item) ORDER BY id")
    }

    package func item(owning path: String) async throws(MirrorError) -> String? {
        guard let row = try await rows("SELECT item FROM files WHERE path = \(path)").first else { return nil }
        return try decode(row, String.self, column: "item")
    }

    package func item(named name: String) async throws(MirrorError) -> String? {
        let suffix = "/" + name
        guard let row = try await rows(
            """
            SELECT item FROM files WHERE path = \(name) OR item = \(name) OR url = \(name) OR right(path, length(\(suffix))) = \(suffix)
            ORDER BY path = \(name) DESC, item = \(name) DESC, id DESC LIMIT 1
            """).first
        else { return nil }
        return try decode(row, String.self, column: "item")
    }

    package func record(_ file: MirroredFile) async throws(MirrorError) {
        try await transaction { connection, logger in try await Self.insert(file, on: connection, logger: logger) }
    }

    package func recordNamed(
        fencedBy fence: CommitFence?, _ naming: @escaping @Sendable () async throws(MirrorError) -> MirroredFile?
    ) async throws(MirrorError) -> MirroredFile? {
        guard let fence else {
            guard let file = try await naming() else { return nil }
            try await record(file)
            return file
        }
        let (claim, token, holder) = (fence.claim, fence.token, fence.holder)
        return try await transaction { connection, logger -> MirroredFile? in
            // The claim's row stays locked until the record is written: a worker that would take
            // the claim over skips it (SKIP LOCKED) rather than take it between check and name.
            let holding = try await connection.query(
                "SELECT 1 FROM images WHERE id = \(claim) AND fence = \(token) AND claimed_by = \(holder) FOR UPDATE",
                logger: logger
            ).collect()
            guard !holding.isEmpty else { throw MirrorError.claimTaken("image \(claim)") }
            guard let file = try await naming() else { return nil }
            try await Self.insert(file, on: connection, logger: logger)
            return file
        }
    }

    /// Records `file` as its item's newest version: deleted and inserted anew, as SQLite's
    /// REPLACE (a row's id is its age).
    private static func insert(_ file: MirroredFile, on connection: PostgresConnection, logger: Logger) async throws {
        let now = now()
        try await connection.query("DELETE FROM files WHERE path = \(file.path)", logger: logger)
        try await connection.query(
            """
            INSERT INTO files (\(unescaped: columns)) VALUES (\(file.path), \(file.item), \(file.source),
                \(file.url), \(file.etag), \(file.lastModified), \(file.bytes), \(file.md5), \(file.version),
                \(file.updated), \(now), \(now))
            """, logger: logger)
    }

    package func confirm(
        _ path: String, url: String, etag: String?, lastModified: String?, release: FeedRelease?,
        replacingValidators: Bool
    ) async throws(MirrorError) {
        let hasRelease = release != nil
        try await execute(
            """
            UPDATE files SET url = \(url),
                etag = CASE WHEN \(replacingValidators) THEN \(etag) ELSE coalesce(\(etag), etag) END,
                last_modified = CASE WHEN \(replacingValidators) THEN \(lastModified) ELSE coalesce(\(lastModified), last_modified) END,
                checked_at = \(Self.now()),
                version = CASE WHEN \(hasRelease) THEN \(release?.version) ELSE version END,
                updated = CASE WHEN \(hasRelease) THEN \(release?.updated) ELSE updated END
            WHERE path = \(path)
            """)
    }

    package func adopt(item: String, as newItem: String, source: String?, release: FeedRelease) async throws(MirrorError) {
        try await execute(
            """
            UPDATE files SET item = \(newItem), source = coalesce(source, \(source)), version = \(release.version),
                updated = \(release.updated) WHERE item = \(item)
            """)
    }

    package func setMD5(_ md5: String, of path: String) async throws(MirrorError) {
        try await execute("UPDATE files SET md5 = \(md5) WHERE path = \(path)")
    }

    /// A file that is its item's newest version, and not of a URL known removed.
    private static let newestNotRemoved = "id = (SELECT max(id) FROM files AS newer WHERE newer.item = files.item) "
        + "AND NOT EXISTS (SELECT 1 FROM removed WHERE removed.url = files.url)"

    package func filesToRevalidate(
        source: String, claiming folders: [String], after position: SweepPosition?, limit: Int
    ) async throws(MirrorError) -> SweepPage<(latest: MirroredFile, paths: [String])> {
        if position == nil { try await claim(folders, for: source) }
        let from = position ?? .start
        let rows = try await rows(
            """
            SELECT id AS row, \(unescaped: Self.columns),
              (SELECT string_agg(path, chr(10) ORDER BY id) FROM files AS version WHERE version.item = files.item) AS paths
            FROM files WHERE source = \(source)
              AND \(unescaped: Self.newestNotRemoved)
              AND (checked_at, id) > (\(from.checkedAt), \(from.row))
            ORDER BY checked_at, id LIMIT \(limit)
            """)
        var found: [(latest: MirroredFile, paths: [String])] = []
        var last: SweepPosition?
        for row in rows {
            let paths = MirroredFile.paths(joined: try decode(row, String.self, column: "paths"))
            let file = try Self.file(from: row, in: self)
            found.append((file, paths))
            last = SweepPosition(checkedAt: file.checkedAt, row: try decode(row, Int64.self, column: "row"))
        }
        return SweepPage(files: found, last: last, limit: limit)
    }

    package func versionFigures() async throws(MirrorError) -> VersionFigures {
        let row = try await rows(
            """
            SELECT count(DISTINCT item) AS items, count(*) AS files,
                (SELECT count(*) FROM (SELECT item FROM files GROUP BY item HAVING count(*) > 1) AS kept) AS versioned FROM files
            """).first
        guard let row else { return VersionFigures(items: 0, files: 0, itemsWithVersions: 0) }
        let (items, files, versions) = (
            try decode(row, Int.self, column: "items"), try decode(row, Int.self, column: "files"),
            try decode(row, Int.self, column: "versioned"))
        return VersionFigures(items: items, files: files, itemsWithVersions: versions)
    }

    package func latestFiles(
        source: String, claiming folders: [String], after position: SweepPosition?, limit: Int
    ) async throws(MirrorError) -> SweepPage<RecordedFile> {
        if position == nil { try await claim(folders, for: source) }
        var found: [RecordedFile] = []
        var last: SweepPosition?
        for row in try await rows(
            """
            SELECT id AS row, path, item, url FROM files WHERE source = \(source)
              AND \(unescaped: Self.newestNotRemoved) AND id > \((position ?? .start).row)
            ORDER BY id LIMIT \(limit)
            """) {
            found.append(RecordedFile(
                path: try decode(row, String.self, column: "path"), item: try decode(row, String.self, column: "item"),
                url: try decode(row, String.self, column: "url")))
            last = SweepPosition(checkedAt: "", row: try decode(row, Int64.self, column: "row"))
        }
        return SweepPage(files: found, last: last, limit: limit)
    }

    private func claim(_ folders: [String], for source: String) async throws(MirrorError) {
        for folder in folders {
            try await execute("UPDATE files SET source = \(source) WHERE source IS NULL AND starts_with(path, \(folder + "/"))")
        }
    }

    package func hasFiles(fromHost host: String) async throws(MirrorError) -> Bool {
        !(try await rows(
            // Case-blind, as SQLite's LIKE is: a host name has no case.
            "SELECT 1 FROM files WHERE starts_with(lower(url), \("http://" + host.lowercased() + "/")) OR starts_with(lower(url), \("https://" + host.lowercased() + "/")) LIMIT 1"
        )).isEmpty
    }

    package func filePaths(after position: SweepPosition?, limit: Int) async throws(MirrorError) -> SweepPage<String> {
        var paths: [String] = []
        var last: SweepPosition?
        for row in try await rows("SELECT id AS row, path FROM files WHERE id > \((position ?? .start).row) ORDER BY id LIMIT \(limit)") {
            paths.append(try decode(row, String.self, column: "path"))
            last = SweepPosition(checkedAt: "", row: try decode(row, Int64.self, column: "row"))
        }
        return SweepPage(files: paths, last: last, limit: limit)
    }

    package func recordRemoved(_ url: String) async throws(MirrorError) {
        try await execute("INSERT INTO removed (url, seen_at) VALUES (\(url), \(Self.now())) ON CONFLICT DO NOTHING")
    }

    // MARK: - Runs

    package func recordRun(_ run: RunRecord) async throws(MirrorError) {
        let json = (try? StateDatabase.runEncoder.encode(run)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        let (started, ended) = (Int64(run.startedAt.timeIntervalSince1970), Int64(run.endedAt.timeIntervalSince1970))
        try await transaction { connection, logger in
            try await connection.query(
                """
                INSERT INTO runs (source, started_at, ended_at, exit_status, record)
                VALUES (\(run.source), \(started), \(ended), \(Int64(run.exitStatus)), \(json))
                """, logger: logger)
            try await connection.query(
                "DELETE FROM runs WHERE id <= (SELECT max(id) FROM runs) - \(StateDatabase.runsKept)", logger: logger)
        }
    }

    package func lastRuns() async throws(MirrorError) -> [RunRecord] {
        try await runs("SELECT record FROM runs WHERE id IN (SELECT max(id) FROM runs GROUP BY source) ORDER BY id DESC")
    }

    package func lastRun(of source: String) async throws(MirrorError) -> RunRecord? {
        try await runs("SELECT record FROM runs WHERE source = \(source) ORDER BY id DESC LIMIT 1").first
    }

    package func lastSuccess(of source: String) async throws(MirrorError) -> Date? {
        guard let row = try await rows("SELECT max(ended_at) AS ended FROM runs WHERE source = \(source) AND exit_status = 0").first
        else { return nil }
        // max() of no rows is NULL: never succeeded.
        let ended: Int? = try decode(row, Int?.self, column: "ended")
        guard let ended else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(ended))
    }

    private func runs(_ query: PostgresQuery) async throws(MirrorError) -> [RunRecord] {
        var runs: [RunRecord] = []
        for row in try await rows(query) {
            let json = try decode(row, String.self, column: "record")
            if let run = try? StateDatabase.runDecoder.decode(RunRecord.self, from: Data(json.utf8)) { runs.append(run) }
        }
        return runs
    }

    // MARK: - Helpers

    // Queries run in a task of their own, outside the caller's cancellation: PostgresNIO refuses
    // a query from a cancelled task, and a run stopped by its deadline or a signal must still
    // record what it finished and let go of its claims and its crawl.

    func rows(_ query: PostgresQuery) async throws(MirrorError) -> [PostgresRow] {
        let (client, logger) = (client, logger)
        do {
            return try await Task { try await client.query(query, logger: logger).collect() }.value
        } catch {
            throw failure(error)
        }
    }

    func execute(_ query: PostgresQuery) async throws(MirrorError) {
        _ = try await rows(query)
    }

    /// Runs `body` in one transaction; a `MirrorError` it throws is passed on as it is.
    func transaction<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws(MirrorError) -> T {
        let (client, logger) = (client, logger)
        do {
            return try await Task {
                try await client.withTransaction(logger: logger) { connection in try await body(connection, logger) }
            }.value
        } catch let error as MirrorError {
            throw error
        } catch let error as PostgresTransactionError {
            if let closure = error.closureError as? MirrorError { throw closure }
            throw failure(error.closureError ?? error.commitError ?? error.beginError ?? error)
        } catch {
            throw failure(error)
        }
    }

    /// Column `name` of `row` as a `T`: a column the query did not select, a value of another
    /// type, or a NULL where `T` is not optional is an error naming the column, never a default.
    func decode<T: PostgresDecodable>(_ row: PostgresRow, _ type: T.Type, column name: String) throws(MirrorError) -> T {
        let cells = row.makeRandomAccess()
        guard cells.contains(name) else {
            throw .stateDatabase(path: location, problem: "the query selects no column '\(name)'")
        }
        do {
            return try cells[name].decode(T.self)
        } catch {
            throw .stateDatabase(path: location, problem: "column '\(name)': \(Self.failure(error, location: location))")
        }
    }

    /// The error a failed query becomes: the server's message, not PostgresNIO's generic text.
    func failure(_ error: any Error) -> MirrorError {
        Self.failure(error, location: location)
    }

    static func failure(_ error: any Error, location: String) -> MirrorError {
        if let error = error as? MirrorError { return error }
        var problem: String
        if let error = error as? PSQLError {
            problem = error.serverInfo?[.message] ?? "\(error.code)"
            if let underlying = error.underlying { problem += ": \(underlying)" }
        } else {
            problem = String(describing: error)
        }
        return .stateDatabase(path: location, problem: problem)
    }

    private func files(_ query: PostgresQuery) async throws(MirrorError) -> [MirroredFile] {
        var files: [MirroredFile] = []
        for row in try await rows(query) { files.append(try Self.file(from: row, in: self)) }
        return files
    }

    /// The file of a row that starts with ``columns`` (more columns may follow).
    private static func file(from row: PostgresRow, in state: PostgresState) throws(MirrorError) -> MirroredFile {
        func text(_ name: String) throws(MirrorError) -> String { try state.decode(row, String.self, column: name) }
        func optional(_ name: String) throws(MirrorError) -> String? { try state.decode(row, String?.self, column: name) }
        return MirroredFile(
            path: try text("path"), item: try text("item"), source: try optional("source"), url: try text("url"),
            etag: try optional("etag"), lastModified: try optional("last_modified"),
            bytes: try state.decode(row, Int64.self, column: "bytes"), md5: try optional("md5"), version: try optional("version"),
            updated: try optional("updated"), mirroredAt: try text("mirrored_at"), checkedAt: try text("checked_at"))
    }

    static func now() -> String {
        StateDatabase.now()
    }
}
