import ArgumentParser
import MirrorKit

@main
struct MirrorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mirror",
        abstract: "Mirror the media of an Imgur tag or a download feed into a directory.",
        discussion: """
            Run by hand or from cron: runs are incremental, one at a time per directory, quiet with \
            --quiet unless something is wrong, and never leave a half-written file under a final name.

            Exit status: 0 everything mirrored; 1 some files failed; 64 bad usage; 65 the API or \
            feed sent data of the wrong shape; 69 the API or feed could not be reached or refused; \
            73 the output directory or state cannot be written; 75 try later: another run holds the \
            directory, the API budget is spent, or a media host is down or throttling (the next \
            run carries on where this one stopped); 78 configuration or client id problem.
            """,
        version: MirrorVersion.current,
        subcommands: [TagCommand.self, FeedCommand.self, StatusCommand.self],
        defaultSubcommand: TagCommand.self)
}

/// Options every mirroring command takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: "The mirror directory.")
    var out: String

    @Option(help: "A JSON config file (see config.example.json); options given here win over it.")
    var config: String?

    @Flag(name: .shortAndLong, help: "Print nothing unless something went wrong.")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Log every request and file.")
    var verbose = false

    @Option(help: "Stop starting work after this long, e.g. 50m or 1h30m, and exit 0 if nothing failed; the next run carries on. Keep it shorter than the cron interval.")
    var maxDuration: String?

    func validate() throws {
        if let maxDuration, DurationText.parse(maxDuration) == nil {
            throw ValidationError("--max-duration takes a duration such as 50m, 90s or 1h30m, got '\(maxDuration)'")
        }
    }

    /// The run's time limit, from this option or the config file.
    func deadline(_ file: MirrorConfiguration) -> Duration? {
        (maxDuration ?? file.maxDuration).flatMap(DurationText.parse)
    }
}

/// How files are fetched and named: options the tag and feed commands share.
struct DownloadOptions: ParsableArguments {
    @Option(help: "skip-if-exists (default) asks nothing for a file the mirror has; new-file asks again every run and keeps each new version as name(1).ext. Also spelled skipIfExists, newFile.")
    var mode: DownloadMode?

    @Option(help: "Most download bandwidth for all files together, e.g. 2M or 500k bytes per second.")
    var maxBandwidth: String?

    @Option(help: "Attempts per file, the first included (default 6).")
    var retries: Int?

    @Option(help: "Most bytes any file may have, whatever the API or its server claims, e.g. 4G (default 16G).")
    var maxFileSize: String?

    func validate() throws {
        if let maxBandwidth, (ByteCount.parse(maxBandwidth) ?? 0) <= 0 {
            throw ValidationError("--max-bandwidth takes a rate such as 2M or 500k, got '\(maxBandwidth)'")
        }
        if let retries, !(1...100).contains(retries) { throw ValidationError("--retries must be 1 to 100") }
        if let maxFileSize, (ByteCount.parse(maxFileSize) ?? 0) <= 0 {
            throw ValidationError("--max-file-size takes a size such as 4G or 500M, got '\(maxFileSize)'")
        }
    }

    func maxFileSize(_ file: MirrorConfiguration) -> Int64 {
        (maxFileSize ?? file.maxFileSize).flatMap(ByteCount.parse) ?? Downloader.defaultMaxFileSize
    }

    /// The engine these options (over the config file's) ask for.
    func engine(_ file: MirrorConfiguration) -> TransferEngine {
        let bandwidth = (maxBandwidth ?? file.maxBandwidth).flatMap(ByteCount.parse)
        return TransferEngine(configuration: .init(maxBytesPerSecond: bandwidth))
    }

    func downloadMode(_ file: MirrorConfiguration) -> DownloadMode {
        mode ?? file.mode ?? .skipIfExists
    }

    func retryPolicy(_ file: MirrorConfiguration) -> RetryPolicy {
        RetryPolicy(maxAttempts: retries ?? file.retries ?? 6)
    }
}
