import Foundation
import Logging

/// Mirrors one Imgur tag into a directory: every image's thumbnail under `preview/` and its
/// full-size file under `full/`, each named by the image id.
public struct TagMirror: Sendable {
    public struct Settings: Sendable {
        public var crawl: TagCrawler.Options
        public var urls: MediaURLBuilder
        public var mode: DownloadMode
        /// Downloads running at once.
        public var concurrency: Int
        /// Attempts and backoff for each file.
        public var retry: RetryPolicy

        public init(
            crawl: TagCrawler.Options, urls: MediaURLBuilder, mode: DownloadMode = .skipIfExists,
            concurrency: Int = 6, retry: RetryPolicy = RetryPolicy()
        ) {
            self.crawl = crawl
            self.urls = urls
            self.mode = mode
            self.concurrency = concurrency
            self.retry = retry
        }
    }

    /// One file to put into the mirror.
    struct Job: Sendable {
        var url: String
        var relativePath: String
        var expectedSize: Int64?
    }

    enum Outcome: Sendable {
        case downloaded(bytes: Int64)
        case alreadyPresent
        case removed(String)
        case interrupted
        case failed(DownloadError)
    }

    let directory: MirrorDirectory
    let client: ImgurClient
    let partials: PartialStore
    let scheduler: DownloadScheduler
    let settings: Settings
    let logger: Logger

    public init(directory: MirrorDirectory, client: ImgurClient, engine: TransferEngine, settings: Settings, logger: Logger) throws(MirrorError) {
        self.directory = directory
        self.client = client
        self.settings = settings
        self.logger = logger
        partials = try PartialStore(directory: directory.stateDirectory.appendingPathComponent("partials"))
        let transport = EngineTransport(engine: engine, partials: partials, retry: settings.retry, logger: logger)
        scheduler = DownloadScheduler(transport: transport, configuration: .init(
            maxConcurrent: settings.concurrency, maxPerHost: settings.concurrency))
    }

    /// Crawls the tag, then mirrors what it found: thumbnails as unforced items, all at once;
    /// full-size files one at a time as forced items, each taking the bandwidth while it runs.
    public func run() async -> MirrorSummary {
        let crawler = TagCrawler(client: client, urls: settings.urls, logger: logger)
        let crawl = await crawler.crawl(settings.crawl)
        var summary = MirrorSummary()
        summary.problems = crawl.problems
        summary.stoppedBy = crawl.stoppedBy
        if Task.isCancelled {
            summary.interrupted = true
            summary.stoppedBy = nil
        }
        let previews = crawl.items.map {
            Job(url: $0.previewURL, relativePath: "preview/\($0.previewFileName)", expectedSize: nil)
        }
        let originals = crawl.items.map {
            Job(url: $0.fullURL, relativePath: "full/\($0.fullFileName)", expectedSize: $0.expectedSize)
        }
        summary.wanted = previews.count + originals.count
        let logger = logger
        let reporter = Task {
            await RunStatus.keepWriting(
                source: "tag \(settings.crawl.tag)", scheduler: scheduler, directory: directory,
                log: { logger.debug("downloads: \($0.summaryLine)") })
        }
        await withTaskGroup(of: [Outcome].self) { group in
            for job in previews {
                group.addTask { [await mirror(job, forced: false)] }
            }
            group.addTask {
                var outcomes: [Outcome] = []
                for job in originals { outcomes.append(await mirror(job, forced: true)) }
                return outcomes
            }
            for await outcomes in group {
                for outcome in outcomes { record(outcome, in: &summary) }
            }
        }
        reporter.cancel()
        await reporter.value
        return summary
    }

    private func record(_ outcome: Outcome, in summary: inout MirrorSummary) {
        switch outcome {
        case .downloaded(let bytes):
            summary.downloaded += 1
            summary.bytesDownloaded += bytes
        case .alreadyPresent:
            summary.alreadyPresent += 1
        case .removed(let url):
            logger.info("removed upstream: \(url)")
            summary.removed.append(url)
        case .interrupted:
            summary.interrupted = true
        case .failed(let error):
            logger.error("\(error)")
            summary.failures.append(error)
        }
    }

    private func mirror(_ job: Job, forced: Bool) async -> Outcome {
        guard !Task.isCancelled else { return .interrupted }
        do {
            if settings.mode == .skipIfExists, try directory.fileExists(job.relativePath) {
                return .alreadyPresent
            }
        } catch {
            return .failed(DownloadError(url: job.url, reason: .storage(error.description)))
        }
        do {
            let file = try await scheduler.schedule(job.url, forced: forced, expectedSize: job.expectedSize)
            let committed = try directory.commit(file.path, as: job.relativePath, mode: settings.mode)
            partials.remove(job.url)
            guard let name = committed else { return .alreadyPresent }
            logger.info("saved \(name)")
            return .downloaded(bytes: file.bytesReceived)
        } catch let error as DownloadError {
            if error.reason == .removed { return .removed(job.url) }
            if error.isCancellation { return .interrupted }
            return .failed(error)
        } catch {
            return .failed(DownloadError(url: job.url, reason: .storage("\(error)")))
        }
    }
}
