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
    let downloader: Downloader
    let settings: Settings
    let logger: Logger

    public init(directory: MirrorDirectory, client: ImgurClient, engine: TransferEngine, settings: Settings, logger: Logger) throws(MirrorError) {
        self.directory = directory
        self.client = client
        self.settings = settings
        self.logger = logger
        partials = try PartialStore(directory: directory.stateDirectory.appendingPathComponent("partials"))
        downloader = Downloader(engine: engine, partials: partials, retry: settings.retry, logger: logger)
    }

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
        let jobs = crawl.items.flatMap { item in
            [
                Job(url: item.previewURL, relativePath: "preview/\(item.previewFileName)", expectedSize: nil),
                Job(url: item.fullURL, relativePath: "full/\(item.fullFileName)", expectedSize: item.expectedSize),
            ]
        }
        summary.wanted = jobs.count
        await withTaskGroup(of: Outcome.self) { group in
            var pending = jobs.makeIterator()
            for _ in 0..<max(settings.concurrency, 1) {
                guard let job = pending.next() else { break }
                group.addTask { await mirror(job) }
            }
            while let outcome = await group.next() {
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
                if let job = pending.next() { group.addTask { await mirror(job) } }
            }
        }
        return summary
    }

    private func mirror(_ job: Job) async -> Outcome {
        guard !Task.isCancelled else { return .interrupted }
        do {
            if settings.mode == .skipIfExists, try directory.fileExists(job.relativePath) {
                return .alreadyPresent
            }
        } catch {
            return .failed(DownloadError(url: job.url, reason: .storage(error.description)))
        }
        do {
            let file = try await downloader.fetch(job.url, expectedSize: job.expectedSize)
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
