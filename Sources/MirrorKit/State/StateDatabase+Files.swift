/// One file in the mirror: a version of an item, with what is known of where it came from.
package struct MirroredFile: Sendable, Equatable {
    /// The file, relative to the mirror.
    package var path: String
    /// What the file is a version of: the media URL for a tag's files, the entry for a feed's
    /// (so a release served from a feed's second mirror is the same item, not a new file).
    package var item: String
    /// The tag or feed that mirrored it, whose `new-file` runs revalidate it.
    package var source: String?
    /// The URL that served these bytes.
    package var url: String
    package var etag: String?
    package var lastModified: String?
    package var bytes: Int64
    /// The MD5 of the bytes, once known (from an MD5 ETag, or hashed when versions were compared).
    package var md5: String?
    /// The feed entry's release (its version, its `updated` or `pubDate`) these bytes came from.
    package var version: String?
    package var updated: String?
    package var mirroredAt: String
    /// When the server last said this is still the item's current content (or when mirrored).
    package var checkedAt: String

    package init(
        path: String, item: String, source: String?, url: String, etag: String?, lastModified: String?, bytes: Int64,
        md5: String?, version: String? = nil, updated: String? = nil, mirroredAt: String = "", checkedAt: String = ""
    ) {
        self.path = path
        self.item = item
        self.source = source
        self.url = url
        self.etag = etag
        self.lastModified = lastModified
        self.bytes = bytes
        self.md5 = md5
        self.version = version
        self.updated = updated
        self.mirroredAt = mirroredAt
        self.checkedAt = checkedAt
    }
}

extension MirroredFile {
    /// Paths joined by line feeds, as the stores' queries give an item's versions: no name holds
    /// a control character (see ``FileNameText``).
    package static func paths(joined: String) -> [String] {
        joined.split(separator: "\n").map(String.init)
    }
}

/// The release of a feed entry a file came from.
package struct FeedRelease: Sendable, Equatable {
    package var version: String?
    /// Atom's `updated`, RSS's `pubDate`, as the feed writes it.
    package var updated: String?

    init(version: String?, updated: String?) {
        self.version = version
        self.updated = updated
    }
}

/// How many items and files the mirror records, for `mirror status`.
package struct VersionFigures: Sendable, Equatable, Codable {
    package var items: Int
    package var files: Int
    /// Items with more than one version kept.
    package var itemsWithVersions: Int
    /// Files recorded that are gone from the disk (deleted by hand): the next run fetches the
    /// newest version of each again, unless deleted files are kept deleted. Counted by `mirror
    /// status`, not by the store.
    package var missing: Int?

    package init(items: Int, files: Int, itemsWithVersions: Int, missing: Int? = nil) {
        self.items = items
        self.files = files
        self.itemsWithVersions = itemsWithVersions
        self.missing = missing
    }
}

extension StateDatabase {
    private static let columns =
        "path, item, source, url, etag, last_modified, bytes, md5, version, updated, mirrored_at, checked_at"

    /// The item's newest version: the file recorded last.
    package func latestFile(of item: String) throws(MirrorError) -> MirroredFile? {
        try files("WHERE item = ?1 ORDER BY rowid DESC LIMIT 1", [.text(item)]).first
    }

    /// What a job needs to know, in one query (it is asked for every file of a run): the item's
    /// newest version, and whether `url` is known removed upstream.
    package func fate(of item: String, url: String) throws(MirrorError) -> (latest: MirroredFile?, removed: Bool) {
        // The rows waiting for their group are written first only when one is this item's, or
        // replaces (by its path) the row found: otherwise the answer is the same, and the group
        // stays a group.
        if waitingRecords.contains(where: { $0.file.item == item }) { writeWaitingRecords() }
        var fates = try fateRows(of: item, url: url)
        if let latest = fates.first?.latest, waitingRecords.contains(where: { $0.file.path == latest.path }) {
            writeWaitingRecords()
            fates = try fateRows(of: item, url: url)
        }
        return fates.first ?? (nil, false)
    }

    // The newest row found by its rowid, not as a subquery's one row: SQLite materialized that
    // subquery into a table of its own at every lookup, about ten allocations per file. Made once:
    // built at every lookup, the text cost a sixth of the lookup (see BENCHMARKS.md).
    private static let fateStatement =
        "SELECT \(columns), EXISTS (SELECT 1 FROM removed WHERE url = ?2) AS removed FROM (SELECT 1) "
            + "LEFT JOIN files ON files.rowid = (SELECT max(rowid) FROM files WHERE item = ?1)"

    private func fateRows(of item: String, url: String) throws(MirrorError) -> [(latest: MirroredFile?, removed: Bool)] {
        try query(Self.fateStatement, [.text(item), .text(url)]) { row throws(SQLiteError) in
            (try row.optionalText("path") == nil ? nil : try Self.file(from: row), try row.integer("removed") == 1)
        }
    }

    /// Every version of `item`, oldest first.
    package func versions(of item: String) throws(MirrorError) -> [MirroredFile] {
        try files("WHERE item = ?1 ORDER BY rowid", [.text(item)])
    }

    /// The item whose version `path` is, if any.
    package func item(owning path: String) throws(MirrorError) -> String? {
        try read("SELECT item FROM files WHERE path = ?1", [.text(path)]) { row throws(SQLiteError) in try row.text("item") }.first
    }

    // REPLACE deletes a row of the same path and inserts anew, not in place: the row's place in
    // the table (its rowid) is its age. One statement, and one index beside the key: a small
    // file's record costs what its name does.
    static let recordStatement =
        "INSERT OR REPLACE INTO files (\(columns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)"

    static func recordArguments(_ file: MirroredFile, now: String) -> [SQLiteValue] {
        [.text(file.path), .text(file.item), .optional(file.source), .text(file.url), .optional(file.etag),
         .optional(file.lastModified), .integer(file.bytes), .optional(file.md5), .optional(file.version),
         .optional(file.updated), .text(now)]
    }

    /// Notes that the server confirmed `path` as its item's current content: the release the
    /// feed now names for it (the same bytes), and the validators the server sent, which replace
    /// the stored ones when `replacingValidators` (a whole answer, or another URL's), else only
    /// fill in what a 304 repeated.
    package func confirm(
        _ path: String, url: String, etag: String?, lastModified: String?, release: FeedRelease?,
        replacingValidators: Bool = false
    ) throws(MirrorError) {
        try write(
            "UPDATE files SET url = ?2, etag = CASE WHEN ?9 THEN ?3 ELSE coalesce(?3, etag) END, "
                + "last_modified = CASE WHEN ?9 THEN ?4 ELSE coalesce(?4, last_modified) END, "
                + "checked_at = ?5, version = CASE WHEN ?6 THEN ?7 ELSE version END, "
                + "updated = CASE WHEN ?6 THEN ?8 ELSE updated END WHERE path = ?1",
            [.text(path), .text(url), .optional(etag), .optional(lastModified), .text(Self.now()),
             .integer(release == nil ? 0 : 1), .optional(release?.version), .optional(release?.updated),
             .integer(replacingValidators ? 1 : 0)])
    }

    /// Takes over the files recorded under `item` (an earlier version of mirror named items by
    /// URL) for `newItem`, as the release `release`, in one step: a kill between the two would
    /// leave them without the release, and reported as an old one forever.
    package func adopt(item: String, as newItem: String, source: String?, release: FeedRelease) throws(MirrorError) {
        try inTransaction { () throws(SQLiteError) in
            try db.execute(
                "UPDATE files SET item = ?2, source = coalesce(source, ?3), version = ?4, updated = ?5 WHERE item = ?1",
                [.text(item), .text(newItem), .optional(source), .optional(release.version), .optional(release.updated)])
        }
    }

    /// Records the MD5 of `path`, computed once it was needed.
    package func setMD5(_ md5: String, of path: String) throws(MirrorError) {
        try write("UPDATE files SET md5 = ?2 WHERE path = ?1", [.text(path), .text(md5)])
    }

    /// The newest version of each item of source `?1`, but not those of URLs known removed.
    /// "No newer row of the item" is one seek into the item's index past the row's place, where
    /// "the row is the item's max(rowid)" computed the maximum first, for every file a sweep
    /// reads (a tenth of the sweep's SQLite work on an unchanged rerun: see BENCHMARKS.md).
    private static let newestOfSource = "source = ?1 "
        + "AND NOT EXISTS (SELECT 1 FROM files AS newer WHERE newer.item = files.item AND newer.rowid > files.rowid) "
        + "AND NOT EXISTS (SELECT 1 FROM removed WHERE removed.url = files.url)"

    /// A page of what a `new-file` run revalidates (see ``MirrorStore/filesToRevalidate(source:claiming:after:limit:)``).
    package func filesToRevalidate(
        source: String, claiming folders: [String], after position: SweepPosition?, limit: Int
    ) throws(MirrorError) -> SweepPage<(latest: MirroredFile, paths: [String])> {
        if position == nil { try claim(folders, for: source) }
        let from = position ?? .start
        // (source, checked_at) is an index: a page reads its own rows, not the source's.
        let rows = try read(
            "SELECT rowid AS row, \(Self.columns), (SELECT group_concat(path, char(10)) FROM "
                + "(SELECT path FROM files AS version WHERE version.item = files.item ORDER BY rowid)) AS paths "
                + "FROM files WHERE \(Self.newestOfSource) AND (checked_at, rowid) > (?2, ?3) ORDER BY checked_at, rowid LIMIT ?4",
            [.text(source), .text(from.checkedAt), .integer(from.row), .integer(Int64(limit))]
        ) { row throws(SQLiteError) in
            (file: (latest: try Self.file(from: row), paths: MirroredFile.paths(joined: try row.text("paths"))),
             position: SweepPosition(checkedAt: try row.text("checked_at"), row: try row.integer("row")))
        }
        return SweepPage(files: rows.map(\.file), last: rows.last?.position, limit: limit)
    }

    /// The item `name` stands for: a file's path, its file name, a URL that served it, or an item.
    package func item(named name: String) throws(MirrorError) -> String? {
        // Compared exactly: LIKE ignores case, and Imgur ids are not case-blind.
        try read(
            "SELECT item FROM files WHERE path = ?1 OR item = ?1 OR url = ?1 OR substr(path, -length(?2)) = ?2 "
                + "ORDER BY path = ?1 DESC, item = ?1 DESC, rowid DESC LIMIT 1",
            [.text(name), .text("/" + name)]
        ) { row throws(SQLiteError) in try row.text("item") }.first
    }

    package func versionFigures() throws(MirrorError) -> VersionFigures {
        let figures = try read(
            "SELECT count(DISTINCT item) AS items, count(*) AS files, "
                + "(SELECT count(*) FROM (SELECT item FROM files GROUP BY item HAVING count(*) > 1)) AS versioned FROM files"
        ) { row throws(SQLiteError) in
            VersionFigures(
                items: Int(try row.integer("items")), files: Int(try row.integer("files")),
                itemsWithVersions: Int(try row.integer("versioned")))
        }
        return figures.first ?? VersionFigures(items: 0, files: 0, itemsWithVersions: 0)
    }

    /// A page of what a `skip-if-exists` run checks is on disk (see ``MirrorStore/latestFiles(source:claiming:after:limit:)``).
    package func latestFiles(
        source: String, claiming folders: [String], after position: SweepPosition?, limit: Int
    ) throws(MirrorError) -> SweepPage<RecordedFile> {
        if position == nil { try claim(folders, for: source) }
        // Three columns, in the order of (source, rowid), the index's: a run over 100,000 items
        // reads this every time.
        let rows = try read(
            "SELECT rowid AS row, path, item, url FROM files WHERE \(Self.newestOfSource) AND rowid > ?2 ORDER BY rowid LIMIT ?3",
            [.text(source), .integer((position ?? .start).row), .integer(Int64(limit))]
        ) { row throws(SQLiteError) in
            (file: RecordedFile(path: try row.text("path"), item: try row.text("item"), url: try row.text("url")),
             position: SweepPosition(checkedAt: "", row: try row.integer("row")))
        }
        return SweepPage(files: rows.map(\.file), last: rows.last?.position, limit: limit)
    }

    /// Files an earlier version of mirror recorded without a source, in `folders` (`full/`,
    /// `enclosures/`), become `source`'s.
    private func claim(_ folders: [String], for source: String) throws(MirrorError) {
        for folder in folders {
            try write(
                "UPDATE files SET source = ?1 WHERE source IS NULL AND path LIKE ?2 ESCAPE '\\'",
                [.text(source), .text(Self.likeEscaped(folder) + "/%")])
        }
    }

    package func hasFiles(fromHost host: String) throws(MirrorError) -> Bool {
        let prefix = Self.likeEscaped(host) + "/%"
        return !(try read(
            "SELECT 1 AS found FROM files WHERE url LIKE ?1 ESCAPE '\\' OR url LIKE ?2 ESCAPE '\\' LIMIT 1",
            [.text("http://" + prefix), .text("https://" + prefix)]
        ) { row throws(SQLiteError) in try row.integer("found") }).isEmpty
    }

    package func filePaths(after position: SweepPosition? = nil, limit: Int = .max) throws(MirrorError) -> SweepPage<String> {
        let rows = try read(
            "SELECT rowid AS row, path FROM files WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            [.integer((position ?? .start).row), .integer(Int64(limit))]
        ) { row throws(SQLiteError) in
            (path: try row.text("path"), position: SweepPosition(checkedAt: "", row: try row.integer("row")))
        }
        return SweepPage(files: rows.map(\.path), last: rows.last?.position, limit: limit)
    }

    private func files(_ clause: String, _ arguments: [SQLiteValue]) throws(MirrorError) -> [MirroredFile] {
        try read("SELECT \(Self.columns) FROM files \(clause)", arguments, as: Self.file(from:))
    }

    private static func file(from row: SQLiteRow) throws(SQLiteError) -> MirroredFile {
        MirroredFile(
            path: try row.text("path"), item: try row.text("item"), source: try row.optionalText("source"),
            url: try row.text("url"), etag: try row.optionalText("etag"), lastModified: try row.optionalText("last_modified"),
            bytes: try row.integer("bytes"), md5: try row.optionalText("md5"), version: try row.optionalText("version"),
            updated: try row.optionalText("updated"), mirroredAt: try row.text("mirrored_at"), checkedAt: try row.text("checked_at"))
    }

    private static func likeEscaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }
}

extension SQLiteValue {
    static func optional(_ text: String?) -> SQLiteValue {
        text.map(SQLiteValue.text) ?? .null
    }
}
