import ArgumentParser
import Foundation
import Logging
import MirrorKit

extension GallerySort: ExpressibleByArgument {}
extension GalleryWindow: ExpressibleByArgument {}
extension DownloadMode: ExpressibleByArgument {}
extension ThumbnailSize: ExpressibleByArgument {}

struct TagCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tag",
        abstract: "Mirror every image of an Imgur tag: thumbnails into preview/, originals into full/.")

    @Argument(help: "The tag, e.g. cats.")
    var tag: String

    @OptionGroup var common: CommonOptions

    @Option(help: "File holding the Imgur Client-ID (default \(ClientIDFile.defaultPath)).")
    var clientIdFile: String?

    @Option(help: "Imgur API base URL (default https://api.imgur.com).")
    var apiBase: String?

    @Option(help: "Imgur media base URL (default https://i.imgur.com).")
    var mediaBase: String?

    @Option(help: "Read at most this many listing pages (default: all).")
    var pages: Int?

    @Option(help: "Listing order: viral, top or time (default time).")
    var sort: GallerySort?

    @Option(help: "Time window of a top listing: day, week, month, year or all (default all).")
    var window: GalleryWindow?

    @Option(help: "Thumbnail size letter: s b t m l h (default m, 320 px).")
    var thumbnail: ThumbnailSize?

    @Option(help: "When a file name is taken: new-file saves name(1).ext, skip-if-exists keeps the old file (default).")
    var mode: DownloadMode?

    @Option(help: "Downloads at once (default 6).")
    var concurrency: Int?

    func validate() throws {
        guard !tag.isEmpty, tag.count <= 100 else { throw ValidationError("the tag must be 1 to 100 characters") }
        if let pages, pages < 1 { throw ValidationError("--pages must be at least 1") }
        if let concurrency, !(1...64).contains(concurrency) { throw ValidationError("--concurrency must be 1 to 64") }
    }

    func run() async throws {
        let logger = LogSetup.bootstrap(quiet: common.quiet, verbose: common.verbose)
        do {
            let file = try common.config.map(MirrorConfiguration.load(from:)) ?? MirrorConfiguration()
            var merged = file
            merged.apiBase = apiBase ?? file.apiBase
            merged.mediaBase = mediaBase ?? file.mediaBase
            try checkURL("--api-base", apiBase)
            try checkURL("--media-base", mediaBase)
            let clientID = try ClientIDFile.read(clientIdFile ?? file.clientIdFile ?? ClientIDFile.defaultPath)
            let directory = try MirrorDirectory(root: URL(fileURLWithPath: common.out))
            let lock = try RunLock(directory: directory)
            let engine = TransferEngine()
            let client = ImgurClient(
                apiBase: merged.apiBase ?? "https://api.imgur.com", clientID: clientID, engine: engine, logger: logger)
            let settings = TagMirror.Settings(
                crawl: TagCrawler.Options(
                    tag: tag, sort: sort ?? file.sort ?? .time, window: window ?? file.window ?? .all,
                    maxPages: pages ?? file.pages),
                urls: MediaURLBuilder(
                    mediaBase: merged.mediaBase ?? "https://i.imgur.com",
                    thumbnail: thumbnail ?? file.thumbnail ?? .medium),
                mode: mode ?? file.mode ?? .skipIfExists,
                concurrency: concurrency ?? file.concurrency ?? 6)
            let mirror = try TagMirror(
                directory: directory, client: client, engine: engine, settings: settings, logger: logger)
            let summary = await mirror.run()
            withExtendedLifetime(lock) {}
            try report(summary, logger: logger)
        } catch let error as MirrorError {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
    }

    private func checkURL(_ option: String, _ value: String?) throws(MirrorError) {
        guard let value else { return }
        guard MirrorConfiguration.isHTTPURL(value) else {
            throw .configuration("\(option) must be an http or https URL, got '\(value)'")
        }
    }

    private func report(_ summary: MirrorSummary, logger: Logger) throws {
        for problem in summary.problems { logger.error("\(problem)") }
        if let stopped = summary.stoppedBy {
            logger.error("listing stopped early: \(stopped)")
        }
        if !common.quiet || !summary.isComplete {
            print("\(tag): \(summary.line)")
        }
        if let stopped = summary.stoppedBy as? ImgurError {
            throw ExitCode(ExitStatus.of(stopped))
        }
        if !summary.isComplete { throw ExitCode(ExitStatus.someFilesFailed) }
    }
}
