import ArgumentParser
import FoundationEssentials
import Logging
import MirrorKit

struct FeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "Mirror the enclosures of an Atom, RSS or Dash docset feed into enclosures/, each taking the bandwidth first.",
        discussion: ExitStatus.help)

    @Argument(help: ArgumentHelp(
        "Feeds: each a URL (http or https), a local file, or - for standard input; mirrored in turn, each summed up on its own line.",
        valueName: "feed"))
    var feeds: [String]

    @Option(help: ArgumentHelp(
        "What relative enclosure links resolve against in a feed read from a file or standard input.",
        valueName: "url"))
    var baseURL: String?

    @OptionGroup var common: CommonOptions

    @OptionGroup var download: DownloadOptions

    @OptionGroup var filtering: FilterOptions

    @Option(help: "Of a Media RSS group (one video in several sizes), mirror the rendition marked default (else the largest), the largest, or the smallest: default, largest, smallest (default: default).")
    var mediaRendition: MediaRendition?

    @Option(help: "Enclosures downloading at once (default 1: each takes the bandwidth; the config's concurrency counts too).")
    var concurrency: Int?

    func validate() throws {
        if let baseURL, !HTTPURL.isValid(baseURL) {
            throw ValidationError("--base-url must be an http or https URL, got '\(URLUserinfo.redactedArgument(baseURL, schemeless: true))'")
        }
        guard !feeds.isEmpty else { throw ValidationError("name at least one feed") }
        for feed in feeds where feed.contains("://") && !HTTPURL.isValid(feed) {
            throw ValidationError("the feed URL must be http or https, got '\(URLUserinfo.redactedArgument(feed, schemeless: true))'")
        }
        if feeds.filter({ $0 == "-" }).count > 1 { throw ValidationError("standard input (-) can be read once") }
        // `example.org/feed.xml` is a URL without its scheme more often than a file that is not
        // there; a path (`/srv/x.atom`, `./x.atom`) is a file, and a missing one is said as such.
        for feed in feeds where Self.looksLikeAHostWithoutScheme(feed) && !FileManager.default.fileExists(atPath: feed) {
            throw ValidationError(
                "'\(URLUserinfo.redactedArgument(feed, schemeless: true))' is neither a file nor an http or https URL; for a URL, give its scheme: \(URLUserinfo.redactedArgument("https://\(feed)"))".escapedForTerminal)
        }
        try validateFlags(flags)
    }

    /// `host.name/path`: no scheme, not a path from `/`, `.` or `~`, and a first part with a dot.
    static func looksLikeAHostWithoutScheme(_ text: String) -> Bool {
        guard text != "-", !text.contains("://"), !text.hasPrefix("/"), !text.hasPrefix("."), !text.hasPrefix("~") else {
            return false
        }
        // A login before the host (`alice:pa/ss@host/feed`) makes it one too, whatever its first `/` cuts.
        return text.split(separator: "/").first?.contains(".") ?? false || URLUserinfo.redactedArgument(text, schemeless: true) != text
    }

    private var flags: MirrorConfiguration {
        var flags = MirrorConfiguration()
        common.apply(to: &flags)
        download.apply(to: &flags)
        filtering.apply(to: &flags)
        flags.concurrency = concurrency
        flags.mediaRendition = mediaRendition
        return flags
    }

    /// Each feed, a file's path made absolute (it names the feed in the state database), each once.
    private var locations: [FeedLocation] {
        var seen: Set<String> = []
        return feeds.compactMap { feed -> FeedLocation? in
            let location: FeedLocation = switch FeedLocation(argument: feed) {
            case .file(let path): .file(URL(fileURLWithPath: path).standardizedFileURL.path)
            case let other: other
            }
            return seen.insert(location.description).inserted ? location : nil
        }
    }

    func run() async throws {
        let (locations, baseURL) = (locations, baseURL)
        try await RunLifecycle(common: common, flags: flags).run { settings throws(MirrorError) in
            // A feed's few large files gain nothing from many workers; its state stays in .mirror.
            if settings.postgres != nil {
                throw .configuration("a feed keeps its state in .mirror (SQLite); the PostgreSQL state (--state or the config's 'state') is for tags that workers share")
            }
            return { directory, engine, _, observer, logger throws(MirrorError) in
                let driver = try MirrorDriver(
                    directory: directory, engine: engine, settings: settings.feedDriver, perSource: settings.feedDrivers(),
                    observer: observer, logger: logger)
                return (driver, settings.sources(feeds: locations, baseURL: baseURL, engine: engine, logger: logger))
            }
        }
    }
}

extension MediaRendition: ExpressibleByArgument {}
