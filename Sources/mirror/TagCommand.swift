import ArgumentParser
import Foundation
import Logging
import MirrorKit

extension GallerySort: ExpressibleByArgument {}
extension GalleryWindow: ExpressibleByArgument {}
extension DownloadMode: ExpressibleByArgument {
    public init?(argument: String) { self.init(spelling: argument) }
    public static var allValueStrings: [String] { spellings }
}
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

    @Option(help: "Downloads at once (default 6).")
    var concurrency: Int?

    @Option(help: "Most Imgur API calls per second (default: no limit beyond Imgur's own budget).")
    var maxApiRate: Double?

    @Option(help: "Longest wait in seconds the API may ask for (Retry-After, the hourly reset) before mirror stops with status 75 instead (default 300).")
    var maxWait: Int?

    @OptionGroup var download: DownloadOptions

    func validate() throws {
        guard !tag.isEmpty, tag.count <= 100 else { throw ValidationError("the tag must be 1 to 100 characters") }
        if let pages, pages < 1 { throw ValidationError("--pages must be at least 1") }
        if let concurrency, !(1...64).contains(concurrency) { throw ValidationError("--concurrency must be 1 to 64") }
        if let maxApiRate, !(maxApiRate > 0) { throw ValidationError("--max-api-rate must be above 0") }
        if let maxWait, maxWait < 0 { throw ValidationError("--max-wait must be 0 or more seconds") }
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
            let engine = download.engine(file)
            let politeness = ImgurClient.Politeness(
                maxRequestsPerSecond: maxApiRate ?? file.maxApiRate,
                maxWait: .seconds(maxWait ?? file.maxWait ?? 300))
            let client = ImgurClient(
                apiBase: merged.apiBase ?? "https://api.imgur.com", clientID: clientID, engine: engine,
                politeness: politeness, logger: logger)
            let settings = TagMirror.Settings(
                crawl: TagCrawler.Options(
                    tag: tag, sort: sort ?? file.sort ?? .time, window: window ?? file.window ?? .all,
                    maxPages: pages ?? file.pages),
                urls: MediaURLBuilder(
                    mediaBase: merged.mediaBase ?? "https://i.imgur.com",
                    thumbnail: thumbnail ?? file.thumbnail ?? .medium),
                mode: download.downloadMode(file),
                concurrency: concurrency ?? file.concurrency ?? 6,
                retry: download.retryPolicy(file),
                maxFileSize: download.maxFileSize(file))
            let mirror = try TagMirror(
                directory: directory, client: client, engine: engine, settings: settings, logger: logger)
            let (summary, stop) = await Interruption.cancelOnSignal(deadline: common.deadline(file)) { await mirror.run() }
            // No libcurl call may be running once the process starts to exit.
            await engine.shutDown()
            withExtendedLifetime(lock) {}
            try Report.finish(summary, label: tag, quiet: common.quiet, stop: stop, logger: logger)
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
}
