import ArgumentParser
import Foundation
import Logging
import MirrorKit

struct FeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "Mirror the enclosures of an Atom, RSS or Dash docset feed into enclosures/, one at a time.")

    @Argument(help: "The feed's URL (http or https).")
    var url: String

    @OptionGroup var common: CommonOptions

    @Option(help: "When a file name is taken: new-file saves name(1).ext, skip-if-exists keeps the old file (default).")
    var mode: DownloadMode?

    @Option(help: "Most download bandwidth, e.g. 2M or 500k bytes per second.")
    var maxBandwidth: String?

    @Option(help: "Attempts per file, the first included (default 6).")
    var retries: Int?

    func validate() throws {
        guard MirrorConfiguration.isHTTPURL(url) else { throw ValidationError("the feed URL must be http or https, got '\(url)'") }
        if let maxBandwidth, (ByteCount.parse(maxBandwidth) ?? 0) <= 0 {
            throw ValidationError("--max-bandwidth takes a rate such as 2M or 500k, got '\(maxBandwidth)'")
        }
        if let retries, !(1...100).contains(retries) { throw ValidationError("--retries must be 1 to 100") }
    }

    func run() async throws {
        let logger = LogSetup.bootstrap(quiet: common.quiet, verbose: common.verbose)
        do {
            let file = try common.config.map(MirrorConfiguration.load(from:)) ?? MirrorConfiguration()
            let directory = try MirrorDirectory(root: URL(fileURLWithPath: common.out))
            let lock = try RunLock(directory: directory)
            let bandwidth = (maxBandwidth ?? file.maxBandwidth).flatMap(ByteCount.parse)
            let engine = TransferEngine(configuration: .init(maxBytesPerSecond: bandwidth))
            let settings = FeedMirror.Settings(
                feedURL: url, mode: mode ?? file.mode ?? .skipIfExists,
                retry: RetryPolicy(maxAttempts: retries ?? file.retries ?? 6))
            let mirror = try FeedMirror(directory: directory, engine: engine, settings: settings, logger: logger)
            let (summary, signal) = await Interruption.cancelOnSignal { await mirror.run() }
            withExtendedLifetime(lock) {}
            try Report.finish(summary, label: "feed", quiet: common.quiet, logger: logger)
            if let signal { throw ExitCode(128 + signal) }
        } catch let error as MirrorError {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
    }
}
