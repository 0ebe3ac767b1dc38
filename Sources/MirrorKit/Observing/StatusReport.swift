import Foundation

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
    /// The last run that finished.
    package var lastRun: RunRecord?
    package var crawls: [Crawl] = []
    package var budget: APIBudget?
    package var files: VersionFigures?
    package var partials: [Partial] = []
    /// Images found by a crawl and not yet in the mirror: the next run tries them first.
    var imagesPending: Int {
        // Every crawl counts the directory's pending images (see ``CrawlFigures/imagesPending``).
        crawls.map(\.figures.imagesPending).max() ?? 0
    }

    /// The failures of the last run: the next run tries each again.
    var failuresToRetry: [RunRecord.Failure] { lastRun?.failures ?? [] }

    /// Reads what `directory` holds. `isAlive` tells whether the process that wrote a status file is
    /// still running (a status file a killed run left says nothing).
    package static func gather(in directory: MirrorDirectory, isAlive: (Int32) -> Bool) async -> StatusReport {
        var report = StatusReport()
        if let status = RunStatus.read(in: directory), isAlive(status.pid) { report.running = status }
        if report.running == nil, let store = directory.partialsForReading() {
            report.partials = store.heldPartials().map {
                Partial(url: $0.record.url, bytes: $0.length, totalBytes: $0.record.totalLength)
            }
        }
        guard let state = StateDatabase.forReading(in: directory) else { return report }
        report.lastRun = try? await state.lastRun()
        for source in (try? await state.crawlSources()) ?? [] {
            if let figures = try? await state.figures(source: source) { report.crawls.append(Crawl(source: source, figures: figures)) }
        }
        report.budget = try? await state.budget(api: TagCrawler.budgetKey)
        report.files = try? await state.versionFigures()
        return report
    }

    package func json() -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    enum CodingKeys: String, CodingKey {
        case running, lastRun, crawls, budget, files, partials, imagesPending, failuresToRetry
    }

    init() {}

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        running = try container.decodeIfPresent(RunStatus.self, forKey: .running)
        lastRun = try container.decodeIfPresent(RunRecord.self, forKey: .lastRun)
        crawls = try container.decode([Crawl].self, forKey: .crawls)
        budget = try container.decodeIfPresent(APIBudget.self, forKey: .budget)
        files = try container.decodeIfPresent(VersionFigures.self, forKey: .files)
        partials = try container.decode([Partial].self, forKey: .partials)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        // Explicit nulls: a script asks "is a run going on" of a key that is always there.
        try container.encode(running, forKey: .running)
        try container.encode(lastRun, forKey: .lastRun)
        try container.encode(crawls, forKey: .crawls)
        try container.encodeIfPresent(budget, forKey: .budget)
        try container.encodeIfPresent(files, forKey: .files)
        try container.encode(partials, forKey: .partials)
        try container.encode(imagesPending, forKey: .imagesPending)
        try container.encode(failuresToRetry, forKey: .failuresToRetry)
    }
}
