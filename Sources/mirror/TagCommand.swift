import ArgumentParser
import Foundation
import Logging
import MirrorKit

extension GallerySort: ExpressibleByArgument {}
extension GalleryWindow: ExpressibleByArgument {}
extension DownloadMode: ExpressibleByArgument {
    package init?(argument: String) { self.init(spelling: argument) }
    package static var allValueStrings: [String] { spellings }
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

    @Option(help: "Imgur API base URL (default \(RunSettings.Defaults.apiBase)).")
    var apiBase: String?

    @Option(help: "Imgur media base URL (default \(RunSettings.Defaults.mediaBase)).")
    var mediaBase: String?

    @Option(help: "Read at most this many listing pages (default: all).")
    var pages: Int?

    @Option(help: "Listing order: viral, top or time (default \(RunSettings.Defaults.sort.rawValue)).")
    var sort: GallerySort?

    @Option(help: "Time window of a top listing: day, week, month, year or all (default \(RunSettings.Defaults.window.rawValue)).")
    var window: GalleryWindow?

    @Option(help: "Thumbnail size letter: s b t m l h (default \(RunSettings.Defaults.thumbnail.rawValue)).")
    var thumbnail: ThumbnailSize?

    @Option(help: "Downloads at once (default \(RunSettings.Defaults.concurrency)).")
    var concurrency: Int?

    @Option(help: "Most Imgur API calls per second (default: no limit beyond Imgur's own budget).")
    var maxApiRate: Double?

    @Option(help: "Longest wait in seconds the API may ask for (Retry-After, the hourly reset) before mirror stops with status 75 instead (default \(RunSettings.Defaults.maxWaitSeconds)).")
    var maxWait: Int?

    @OptionGroup var download: DownloadOptions

    /// What the flags given set.
    private var flags: MirrorConfiguration {
        var flags = MirrorConfiguration()
        common.apply(to: &flags)
        download.apply(to: &flags)
        flags.clientIdFile = clientIdFile
        flags.apiBase = apiBase
        flags.mediaBase = mediaBase
        flags.pages = pages
        flags.sort = sort
        flags.window = window
        flags.thumbnail = thumbnail
        flags.concurrency = concurrency
        flags.maxApiRate = maxApiRate
        flags.maxWait = maxWait
        return flags
    }

    func validate() throws {
        guard !tag.isEmpty, tag.count <= 100 else { throw ValidationError("the tag must be 1 to 100 characters") }
        try validateFlags(flags)
    }

    func run() async throws {
        try await RunLifecycle(common: common, flags: flags, label: tag).run { settings throws(MirrorError) in
            let clientID = try ClientIDFile.read(settings.clientIDFile)
            return { directory, engine, sharing, logger throws(MirrorError) in
                let client = ImgurClient(
                    apiBase: settings.apiBase, clientID: clientID, engine: engine, politeness: settings.politeness, logger: logger)
                return try TagMirror(
                    directory: directory, client: client, engine: engine, settings: settings.tag(tag), sharing: sharing, logger: logger)
            }
        }
    }
}
