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

    let client: ImgurClient
    let jobs: JobRunner
    let settings: Settings
    let logger: Logger

    public init(directory: MirrorDirectory, client: ImgurClient, engine: TransferEngine, settings: Settings, logger: Logger) throws(MirrorError) {
        self.client = client
        self.settings = settings
        self.logger = logger
        jobs = try JobRunner(
            directory: directory, engine: engine, mode: settings.mode, concurrency: settings.concurrency,
            retry: settings.retry, logger: logger)
    }

    /// Crawls the tag, then mirrors what it found: thumbnails as unforced items, all at once;
    /// full-size files one at a time as forced items, each taking the bandwidth while it runs.
    ///
    /// Once one run has mirrored the whole of a newest-first (`time`) listing, later runs stop
    /// reading it at the first page with nothing new, which spares Imgur's hourly budget. Until
    /// then (a first run cut short, a failed file) every run reads the listing to its end.
    public func run() async -> MirrorSummary {
        let crawler = TagCrawler(client: client, urls: settings.urls, logger: logger)
        let source = "imgur tag \(settings.crawl.tag)"
        let state = jobs.state
        var isPageKnown: (@Sendable ([MediaItem]) async -> Bool)?
        // Taken, not just read: if this run is cut short, the next one must read everything again.
        if await state.takeListingComplete(source), settings.crawl.sort == .time {
            isPageKnown = { items in
                for item in items {
                    guard await state.isKnown(item.fullURL), await state.isKnown(item.previewURL) else { return false }
                }
                return true
            }
        }
        let crawl = await crawler.crawl(settings.crawl, isPageKnown: isPageKnown)
        var summary = MirrorSummary()
        summary.problems = crawl.problems
        summary.stoppedBy = crawl.stoppedBy
        if Task.isCancelled {
            summary.interrupted = true
            summary.stoppedBy = nil
        }
        let previews = crawl.items.map {
            MirrorJob(url: $0.previewURL, relativePath: "preview/\($0.previewFileName)", expectedSize: nil)
        }
        let originals = crawl.items.map {
            MirrorJob(url: $0.fullURL, relativePath: "full/\($0.fullFileName)", expectedSize: $0.expectedSize)
        }
        await jobs.run(unforced: previews, forced: originals, source: "tag \(settings.crawl.tag)", into: &summary)
        if settings.crawl.sort == .time && crawl.reachedEnd && summary.isComplete {
            await state.recordListingComplete(source)
        }
        return summary
    }
}
