import ArgumentParser
import Foundation
import Logging
import MirrorKit

struct FeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "Mirror the enclosures of an Atom, RSS or Dash docset feed into enclosures/, each taking the bandwidth first.")

    @Argument(help: "The feed's URL (http or https).")
    var url: String

    @OptionGroup var common: CommonOptions

    @OptionGroup var download: DownloadOptions

    func validate() throws {
        guard MirrorConfiguration.isHTTPURL(url) else { throw ValidationError("the feed URL must be http or https, got '\(url)'") }
    }

    func run() async throws {
        let logger = LogSetup.bootstrap(quiet: common.quiet, verbose: common.verbose)
        do {
            let file = try common.config.map(MirrorConfiguration.load(from:)) ?? MirrorConfiguration()
            let directory = try MirrorDirectory(root: URL(fileURLWithPath: common.out))
            let lock = try RunLock(directory: directory)
            let engine = download.engine(file)
            let settings = FeedMirror.Settings(
                feedURL: url, mode: download.downloadMode(file), retry: download.retryPolicy(file),
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
