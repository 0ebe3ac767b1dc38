import Logging
@testable import MirrorKit

/// One tag through the driver, as `mirror TAG` runs it: for the tests that drive the library.
struct TagRun {
    struct Settings {
        var crawl: TagCrawler.Options
        var urls: MediaURLBuilder
        var driver: MirrorDriver.Settings

        init(
            crawl: TagCrawler.Options, urls: MediaURLBuilder, mode: DownloadMode = RunSettings.Defaults.mode,
            concurrency: Int = RunSettings.Defaults.concurrency, retry: RetryPolicy = RetryPolicy(),
            maxFileSize: Int64 = Downloader.defaultMaxFileSize, metadata: Bool = false
        ) {
            self.crawl = crawl
            self.urls = urls
            driver = MirrorDriver.Settings(
                mode: mode, concurrency: concurrency, retry: retry, maxFileSize: maxFileSize, metadata: metadata,
                isRemovedPlaceholder: ImgurRemovedMedia.isPlaceholder)
        }
    }

    let driver: MirrorDriver
    let source: TagSource

    init(
        directory: MirrorDirectory, client: ImgurClient, engine: TransferEngine, settings: Settings, sharing: Sharing? = nil,
        logger: Logger
    ) throws(MirrorError) {
        driver = try MirrorDriver(directory: directory, engine: engine, settings: settings.driver, sharing: sharing, logger: logger)
        source = TagSource(client: client, options: settings.crawl, urls: settings.urls, logger: logger)
    }

    var state: any MirrorState { driver.state }

    func run() async -> MirrorSummary {
        await driver.run([source])[0].summary
    }
}

/// One feed through the driver, as `mirror feed URL` runs it.
struct FeedRun {
    struct Settings {
        var feed: FeedLocation
        var baseURL: String?
        var retry: RetryPolicy
        var driver: MirrorDriver.Settings

        init(
            feed: FeedLocation, baseURL: String? = nil, mode: DownloadMode = RunSettings.Defaults.mode,
            retry: RetryPolicy = RetryPolicy(), maxFileSize: Int64 = Downloader.defaultMaxFileSize, metadata: Bool = false
        ) {
            self.feed = feed
            self.baseURL = baseURL
            self.retry = retry
            driver = MirrorDriver.Settings(mode: mode, concurrency: 1, retry: retry, maxFileSize: maxFileSize, metadata: metadata)
        }

        init(
            feedURL: String, mode: DownloadMode = RunSettings.Defaults.mode, retry: RetryPolicy = RetryPolicy(),
            maxFileSize: Int64 = Downloader.defaultMaxFileSize
        ) {
            self.init(feed: .url(feedURL), mode: mode, retry: retry, maxFileSize: maxFileSize)
        }
    }

    let driver: MirrorDriver
    let source: FeedSource

    init(directory: MirrorDirectory, engine: TransferEngine, settings: Settings, logger: Logger) throws(MirrorError) {
        driver = try MirrorDriver(directory: directory, engine: engine, settings: settings.driver, logger: logger)
        source = FeedSource(feed: settings.feed, baseURL: settings.baseURL, engine: engine, retry: settings.retry, logger: logger)
    }

    var state: any MirrorState { driver.state }

    func run() async -> MirrorSummary {
        await driver.run([source])[0].summary
    }
}
