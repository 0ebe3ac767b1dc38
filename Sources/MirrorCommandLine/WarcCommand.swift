import ArgumentParser
import MirrorKit

/// `mirror warc`: what can be done with the WARC files runs with `--warc` wrote.
struct WarcCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "warc",
        abstract: "Work with the WARC archive runs with --warc wrote.",
        subcommands: [Pack.self])

    struct Pack: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pack an archive directory's closed WARC files and their indexes into one WACZ file (WACZ 1.1.1), which ReplayWeb.page opens in a browser and pywb replays.")

        @Argument(help: ArgumentHelp("The archive directory (what --warc named).", valueName: "dir"))
        var directory: String

        @Option(name: .shortAndLong, help: ArgumentHelp("The WACZ file to write; it must not exist yet.", valueName: "file.wacz"))
        var out: String

        func run() async throws {
            let summary: WACZPackage.Summary
            do {
                summary = try WACZPackage.pack(directory: directory, to: out)
            } catch {
                throw ExitStatus.fail(error.description, status: error.isNothingToRead ? ExitStatus.noInput : ExitStatus.cannotCreate)
            }
            for name in summary.open {
                Console.printError("mirror: \(name) is still being written, or was left by a run that was killed (the next run with --warc closes it): not packed")
            }
            Console.print("\(out): \(summary.files) WARC \(summary.files == 1 ? "file" : "files") (\(MirrorSummary.formatBytes(summary.bytes))), \(summary.pages) pages")
        }
    }
}
