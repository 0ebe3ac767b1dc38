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
            73 the output directory cannot be written; 75 another run holds the directory (try \
            later); 78 configuration or client id problem.
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
}
