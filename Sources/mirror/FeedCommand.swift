import ArgumentParser
import Foundation
import Logging
import MirrorKit

struct FeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "Mirror the enclosures of an Atom, RSS or Dash docset feed into enclosures/, each taking the bandwidth first.")

    @Argument(help: "The feed: its URL (http or https), a local file, or - for standard input.")
    var feed: String

    @Option(help: ArgumentHelp(
        "What relative enclosure links resolve against in a feed read from a file or standard input.",
        valueName: "url"))
    var baseURL: String?

    @OptionGroup var common: CommonOptions

    @OptionGroup var download: DownloadOptions

    func validate() throws {
        if let baseURL, !MirrorConfiguration.isHTTPURL(baseURL) {
            throw ValidationError("--base-url must be an http or https URL, got '\(baseURL)'")
        }
        if feed.contains("://"), !MirrorConfiguration.isHTTPURL(feed) {
            throw ValidationError("the feed URL must be http or https, got '\(feed)'")
        }
        try validateFlags(flags)
    }

    private var flags: MirrorConfiguration {
        var flags = MirrorConfiguration()
        common.apply(to: &flags)
        download.apply(to: &flags)
        return flags
    }

    /// A file's path made absolute: it names the feed in the state database.
    private var location: FeedLocation {
        switch FeedLocation(argument: feed) {
        case .file(let path): .file(URL(fileURLWithPath: path).standardizedFileURL.path)
        case let other: other
        }
    }

    func run() async throws {
        let (location, baseURL) = (location, baseURL)
        try await RunLifecycle(common: common, flags: flags, label: "feed").run { settings throws(MirrorError) in
            // A feed's few large files gain nothing from many workers; its state stays in .mirror.
            if settings.postgres != nil {
                throw .configuration("a feed keeps its state in .mirror (SQLite); the PostgreSQL state (--state or the config's 'state') is for tags that workers share")
            }
            return { directory, engine, _, logger throws(MirrorError) in
                try FeedMirror(
                    directory: directory, engine: engine, settings: settings.feed(location, baseURL: baseURL), logger: logger)
            }
        }
    }
}
