import FoundationEssentials

/// Where a mirror keeps what it knows between runs, as commands read it: the runs, the files
/// and their versions, each crawl's figures. Two backends keep it: ``StateDatabase`` (SQLite in
/// `.mirror/state.sqlite3`, the default, for one machine) and ``PostgresState`` (a PostgreSQL
/// database several workers share). What the mirror itself writes is ``MirrorStore``.
package protocol MirrorState: Sendable {
    /// Where the state is, as an error or `mirror status` names it (never with a password).
    var location: String { get }

    func recordRun(_ run: RunRecord) async throws(MirrorError)
    /// The last run of each source, the most recent first.
    func lastRuns() async throws(MirrorError) -> [RunRecord]
    /// The last run of `source`.
    func lastRun(of source: String) async throws(MirrorError) -> RunRecord?
    /// When a run of `source` last ended with status 0.
    func lastSuccess(of source: String) async throws(MirrorError) -> Date?

    /// Every version of `item`, oldest first.
    func versions(of item: String) async throws(MirrorError) -> [MirroredFile]
    /// The item `name` stands for: a file's path, its file name, a URL that served it, or an item.
    func item(named name: String) async throws(MirrorError) -> String?
    func versionFigures() async throws(MirrorError) -> VersionFigures
    /// A page of the paths of the files recorded, relative to the mirror, in the order they were
    /// recorded: up to `limit` after `position` (from the first when nil).
    func filePaths(after position: SweepPosition?, limit: Int) async throws(MirrorError) -> SweepPage<String>

    /// Every source with a crawl cursor, and where each stands.
    func crawlSources() async throws(MirrorError) -> [String]
    func figures(source: String) async throws(MirrorError) -> CrawlFigures
    /// The API budget last seen (by this host, when hosts share the state).
    func budget(api: String) async throws(MirrorError) -> APIBudget?

    /// Lets go of connections; the state is not used after.
    func close() async
}

extension MirrorState {
    package func close() async {}
}

extension MirrorStore {
    /// Without a fence: a store no other worker shares (SQLite, under the mirror's lock) has no
    /// claims to check.
    package func recordNamed(
        fencedBy fence: CommitFence?, _ naming: @escaping @Sendable () async throws(MirrorError) -> MirroredFile?
    ) async throws(MirrorError) -> MirroredFile? {
        precondition(fence == nil, "a fenced commit in a state no worker shares")
        guard let file = try await naming() else { return nil }
        try await record(file)
        return file
    }
}

/// Everything a run reads and writes: the records of ``MirrorState``, a tag's crawl
/// (``CrawlStore``), and the files' versions as jobs look them up and commit them.
package protocol MirrorStore: MirrorState, CrawlStore {
    /// The item's newest version: the file recorded last.
    func latestFile(of item: String) async throws(MirrorError) -> MirroredFile?
    /// What a job needs to know, in one query: the item's newest version, and whether `url` is
    /// known removed upstream.
    func fate(of item: String, url: String) async throws(MirrorError) -> (latest: MirroredFile?, removed: Bool)
    /// The item whose version `path` is, if any.
    func item(owning path: String) async throws(MirrorError) -> String?
    /// Records `file` as its item's newest version (replacing whatever was recorded for its path).
    func record(_ file: MirroredFile) async throws(MirrorError)
    /// Names a finished file and records it: `naming` gives the file its name and returns what
    /// to record (nil: the file got none, and nothing is recorded). With a `fence`, both happen
    /// in one transaction that first checks that the fence's claim still carries its token and
    /// holds the claim until the record is written; when it does not, nothing is named and
    /// ``MirrorError/claimTaken(_:)`` is thrown. An error after `naming` leaves the file named:
    /// the caller takes the name back.
    func recordNamed(
        fencedBy fence: CommitFence?, _ naming: @escaping @Sendable () async throws(MirrorError) -> MirroredFile?
    ) async throws(MirrorError) -> MirroredFile?
    /// Notes that the server confirmed `path` as its item's current content: the release the
    /// feed now names for it, and the validators the server sent, which replace the stored ones
    /// when `replacingValidators`, else only fill in what a 304 repeated.
    func confirm(
        _ path: String, url: String, etag: String?, lastModified: String?, release: FeedRelease?,
        replacingValidators: Bool
    ) async throws(MirrorError)
    /// Takes over the files recorded under `item` for `newItem`, as the release `release`, in one step.
    func adopt(item: String, as newItem: String, source: String?, release: FeedRelease) async throws(MirrorError)
    /// Records the MD5 of `path`, computed once it was needed.
    func setMD5(_ md5: String, of path: String) async throws(MirrorError)
    /// A page of the newest version of every item `source` mirrored, with the paths of all its
    /// versions (in the order each was last recorded), least recently confirmed first, but not those of URLs known removed: what a
    /// `new-file` run revalidates. Up to `limit` files after `position` (from the start when nil),
    /// so that a sweep holds one page, not the source. Files recorded without a source in
    /// `folders` become `source`'s first.
    func filesToRevalidate(
        source: String, claiming folders: [String], after position: SweepPosition?, limit: Int
    ) async throws(MirrorError) -> SweepPage<(latest: MirroredFile, paths: [String])>
    /// A page of the newest version of every item `source` mirrored, but not those of URLs known
    /// removed, in the order they were recorded: what a `skip-if-exists` run checks is still on
    /// disk. Paged and claiming as ``filesToRevalidate(source:claiming:after:limit:)`` does.
    func latestFiles(
        source: String, claiming folders: [String], after position: SweepPosition?, limit: Int
    ) async throws(MirrorError) -> SweepPage<RecordedFile>
    /// `url` answered that its media is gone: it is not asked for again.
    func recordRemoved(_ url: String) async throws(MirrorError)
    /// Whether any file of the mirror came from `host` (an authority, `name[:port]`): a host
    /// that served once did resolve, whatever it does now.
    func hasFiles(fromHost host: String) async throws(MirrorError) -> Bool
}

/// Where a sweep over a source's files stands: the order of the last file it was given (when
/// it was last confirmed, for a revalidation, and its row).
package struct SweepPosition: Sendable, Equatable {
    package var checkedAt: String
    package var row: Int64

    package init(checkedAt: String, row: Int64) {
        self.checkedAt = checkedAt
        self.row = row
    }

    /// Before every file.
    package static let start = SweepPosition(checkedAt: "", row: .min)
}

/// A page of a sweep, and where the next page starts: nil after the last.
package struct SweepPage<File: Sendable>: Sendable {
    package var files: [File]
    package var next: SweepPosition?

    /// `last`: the position of the last of `files`. A page short of `limit` is the last.
    package init(files: [File], last: SweepPosition?, limit: Int) {
        self.files = files
        next = files.count < limit ? nil : last
    }

    /// Reads a sweep from the start, a page at a time, handing each page's files to `body` until
    /// the last page, or until `body` says to stop (false).
    static func read(
        _ page: (_ after: SweepPosition?) async throws(MirrorError) -> SweepPage,
        each body: ([File]) async -> Bool
    ) async throws(MirrorError) {
        var position: SweepPosition?
        repeat {
            let current = try await page(position)
            guard await body(current.files) else { return }
            position = current.next
        } while position != nil
    }
}

/// Where a file is and what it is: enough to check it is there and fetch it again if not.
package struct RecordedFile: Sendable, Equatable {
    var path: String
    var item: String
    var url: String

    package init(path: String, item: String, url: String) {
        self.path = path
        self.item = item
        self.url = url
    }
}
