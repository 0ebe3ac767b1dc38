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
    }

    /// A file's path made absolute: it names the feed in the state database.
    private var location: FeedLocation {
        switch FeedLocation(argument: feed) {
        case .file(let path): .file(URL(fileURLWithPath: path).standardizedFileURL.path)
        case let other: other
        }
    }

    func run() async throws {
        let logger = LogSetup.bootstrap(quiet: common.quiet, verbose: common.verbose)
        do {
            let file = try common.config.map(MirrorConfiguration.load(from:)) ?? MirrorConfiguration()
            let directory = try MirrorDirectory(root: URL(fileURLWithPath: common.out))
            let lock = try RunLock(directory: directory)
            let engine = download.engine(file)
            let settings = FeedMirror.Settings(
                feed: location, baseURL: baseURL, mode: download.downloadMode(file), retry: download.retryPolicy(file),
                maxFileSize: download.maxFileSize(file))
            let mirror = try FeedMirror(directory: directory, engine: engine, settings: settings, logger: logger)
            let (summary, stop) = await Interruption.cancelOnSignal(deadline: common.deadline(file)) { await mirror.run() }
            // No libcurl call may be running once the process starts to exit.
            await engine.shutDown()
            withExtendedLifetime(lock) {}
            try Report.finish(summary, label: "feed", quiet: common.quiet, stop: stop, logger: logger)
        } catch let error as MirrorError {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
    }
}
