import FoundationEssentials
import Glibc

/// Everything `mirror status` says of a mirror directory, gathered without writing to it: the run
/// going on (or none), the last run that finished, each crawl's cursor, the API budget, the files
/// and versions recorded, the partial downloads kept, and what the next run will try again.
/// `mirror status --json` prints it as it is.
package struct StatusReport: Sendable, Codable {
    /// A crawl's cursor and counts.
    package struct Crawl: Sendable, Codable {
        package var source: String
        package var figures: CrawlFigures
    }

    /// A partial download kept for the next run to resume.
    package struct Partial: Sendable, Codable {
        package var url: String
        package var bytes: Int64
        package var totalBytes: Int64?
    }

    /// The run going on now; nil when none is.
    package var running: RunStatus?
    /// The last run of each source that ran here, the most recent first.
    package var lastRuns: [RunRecord] = []
    package var crawls: [Crawl] = []
    package var budget: APIBudget?
    package var files: VersionFigures?
    package var partials: [Partial] = []
    /// The state database's schema, when it is older than this mirror's: the next run upgrades
    /// it, and until then what it lacks (the runs, say) is not shown.
    package var olderSchema: Int32?
    /// The workers of a shared (PostgreSQL) state, live ones first; nil for a directory's own state.
    package var workers: [WorkerStatus]?

    /// Images found by a crawl and not yet in the mirror: the next run of the tag that holds each
    /// tries it first.
    var imagesPending: Int {
        // Every crawl counts the directory's pending images (see ``CrawlFigures/imagesPending``).
        crawls.map(\.figures.imagesPending).max() ?? 0
    }

    /// The failures of each source's last run: the next run of that source tries each again.
    package var failuresToRetry: [RunRecord.FailedFile] { lastRuns.flatMap(\.failures) }

    /// A status file not rewritten for this long is a dead run's (its pid may be another
    /// process's by now): a running mirror rewrites it every second.
    static let staleAfter: TimeInterval = 15

    /// Reads what `directory` holds. `isAlive` tells whether the process that wrote a status file is
    /// still running (a status file a killed run left says nothing).
    package static func gather(
        in directory: MirrorDirectory, now: Date = Date(), isAlive: (Int32) -> Bool
    ) async -> StatusReport {
        guard let state = StateDatabase.forReading(in: directory) else { return await gather(in: directory, state: nil, now: now, isAlive: isAlive) }
        var report = await gather(in: directory, state: state, now: now, isAlive: isAlive)
        if state.schemaVersion < StateSchema.latest { report.olderSchema = state.schemaVersion }
        return report
    }

    /// Reads what `directory` and the `shared` state hold: the workers instead of a status file,
    /// and the records from the database.
    package static func gather(
        in directory: MirrorDirectory, shared: SharedDatabase, now: Date = Date()
    ) async throws(MirrorError) -> StatusReport {
        var report = await gather(in: directory, state: shared.state, now: now) { _ in false }
        report.workers = try await shared.coordinator.workers()
        return report
    }

    private static func gather(
        in directory: MirrorDirectory, state: (any MirrorState)?, now: Date, isAlive: (Int32) -> Bool
    ) async -> StatusReport {
        var report = StatusReport()
        if let status = RunStatus.read(in: directory), now.timeIntervalSince(status.updatedAt) < staleAfter,
           isAlive(status.pid) {
            report.running = status
        }
        if report.running == nil, let store = directory.partialsForReading() {
            report.partials = store.heldPartials().map {
                Partial(url: $0.record.url, bytes: $0.length, totalBytes: $0.record.totalLength)
            }
        }
        guard let state else { return report }
        // A run of several sources is shown by its sources' records, not again as a whole.
        report.lastRuns = ((try? await state.lastRuns()) ?? []).filter { $0.sources == nil }
        for source in (try? await state.crawlSources()) ?? [] {
            if let figures = try? await state.figures(source: source) { report.crawls.append(Crawl(source: source, figures: figures)) }
        }
        report.budget = try? await state.budget(api: TagCrawler.budgetKey)
        report.files = try? await state.versionFigures()
        if report.files != nil {
            // What is on disk, not what was once recorded: one lstat a file, by path, so whoever
            // may read the mirror (root, another user) counts the same. A page at a time: a
            // mirror of 200,000 files is not held in memory to be counted.
            let root = directory.root.path
            var missing = 0
            do throws(MirrorError) {
                try await SweepPage.read { position throws(MirrorError) in
                    try await state.filePaths(after: position, limit: 1000)
                } each: { paths in
                    missing += paths.count { path in
                        var info = stat()
                        return lstat(root + "/" + path, &info) != 0 && errno == ENOENT
                    }
                    return true
                }
                report.files?.missing = missing
            } catch {
                // Figures the record cannot give are left out, as when it cannot be read at all.
            }
        }
        return report
    }

    package func json() -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        // snake_case, as the JSON logs and the sidecars write their keys.
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    enum CodingKeys: String, CodingKey {
        case running, lastRuns, crawls, budget, files, partials, olderSchema, imagesPending, failuresToRetry, workers
    }

    package init() {}

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        running = try container.decodeIfPresent(RunStatus.self, forKey: .running)
        lastRuns = try container.decode([RunRecord].self, forKey: .lastRuns)
        crawls = try container.decode([Crawl].self, forKey: .crawls)
        budget = try container.decodeIfPresent(APIBudget.self, forKey: .budget)
        files = try container.decodeIfPresent(VersionFigures.self, forKey: .files)
        partials = try container.decode([Partial].self, forKey: .partials)
        olderSchema = try container.decodeIfPresent(Int32.self, forKey: .olderSchema)
        workers = try container.decodeIfPresent([WorkerStatus].self, forKey: .workers)
    }

    /// Every top-level key is always there, `null` when unknown: a script asks "is a run going on"
    /// of a key it can count on. (Nested records leave out the fields they do not know.)
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(running, forKey: .running)
        try container.encode(lastRuns, forKey: .lastRuns)
        try container.encode(crawls, forKey: .crawls)
        try container.encode(budget, forKey: .budget)
        try container.encode(files, forKey: .files)
        try container.encode(partials, forKey: .partials)
        try container.encode(olderSchema, forKey: .olderSchema)
        try container.encode(imagesPending, forKey: .imagesPending)
        try container.encode(failuresToRetry, forKey: .failuresToRetry)
        try container.encode(workers, forKey: .workers)
    }
}
