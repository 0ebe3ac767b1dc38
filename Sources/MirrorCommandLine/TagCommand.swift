import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import MirrorKit

extension GallerySort: ExpressibleByArgument {}
extension GalleryWindow: ExpressibleByArgument {}
extension DownloadMode: ExpressibleByArgument {
    package init?(argument: String) { self.init(spelling: argument) }
    package static var allValueStrings: [String] { spellings }
}
extension ThumbnailSize: ExpressibleByArgument {}
extension AnimatedFormat: ExpressibleByArgument {}

struct TagCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tag",
        abstract: "Mirror Imgur tags, albums, posts and images: thumbnails into preview/, originals into full/.",
        discussion: """
            Each SOURCE is a tag (cats, #cats) or an Imgur URL as a browser shows it, with or \
            without https:// and www. or m.: imgur.com/t/TAG, imgur.com/a/ID, \
            imgur.com/gallery/ID (a title before the id is fine: /gallery/some-title-ID), \
            imgur.com/ID, i.imgur.com/ID.jpg. Several sources in one run share one lock, one API \
            budget and the downloads; each is summed up on its own line, and the exit status is \
            the worst of theirs.

            """ + ExitStatus.help)

    @Argument(help: ArgumentHelp("Tags or Imgur URLs, e.g. cats or https://imgur.com/a/Ef1gH.", valueName: "source"))
    var sources: [String] = []

    @Option(name: [.customShort("i"), .long], help: ArgumentHelp(
        "Read more sources from this file, one a line (# starts a comment), or - for standard input.",
        valueName: "file"))
    var inputFile: String?

    @OptionGroup var common: CommonOptions

    @OptionGroup var sharing: SharingOptions

    @Option(help: "File holding the Imgur Client-ID (default \(ClientIDFile.defaultPath)).")
    var clientIdFile: String?

    @Option(help: "Imgur API base URL (default \(RunSettings.Defaults.apiBase)).")
    var apiBase: String?

    @Option(help: "Imgur media base URL (default \(RunSettings.Defaults.mediaBase)).")
    var mediaBase: String?

    @Option(help: "Read at most this many listing pages of each tag (default: all).")
    var pages: Int?

    @Option(help: "Listing order: viral, top or time (default \(RunSettings.Defaults.sort.rawValue)).")
    var sort: GallerySort?

    @Option(help: "Time window of a top listing: day, week, month, year or all (default \(RunSettings.Defaults.window.rawValue)).")
    var window: GalleryWindow?

    @Option(help: "Thumbnail size letter: s b t m l h, or none to fetch no previews (default \(RunSettings.Defaults.thumbnail.rawValue)).")
    var thumbnail: ThumbnailSize?

    @Flag(help: "Fetch no thumbnails into preview/, only the full-size files (--thumbnail none).")
    var noPreviews = false

    @Option(help: "What animated images are fetched as: mp4 (a fraction of the size) or gif, as uploaded (default \(RunSettings.Defaults.animated.rawValue)).")
    var prefer: AnimatedFormat?

    @Option(help: "Downloads at once (default \(RunSettings.Defaults.concurrency)).")
    var concurrency: Int?

    @Option(help: "Most Imgur API calls per second (default: no limit beyond Imgur's own budget).")
    var maxApiRate: Double?

    @Option(help: "Longest wait the API may ask for (Retry-After, the hourly reset) before mirror stops with status 75 instead, e.g. 5m, or seconds; 0 to never wait (default \(RunSettings.Defaults.maxWaitSeconds)).")
    var maxWait: String?

    @OptionGroup var download: DownloadOptions

    @OptionGroup var filtering: FilterOptions

    /// What the flags given set.
    private var flags: MirrorConfiguration {
        var flags = MirrorConfiguration()
        common.apply(to: &flags)
        sharing.apply(to: &flags)
        download.apply(to: &flags)
        filtering.apply(to: &flags)
        flags.clientIdFile = clientIdFile
        flags.apiBase = apiBase
        flags.mediaBase = mediaBase
        flags.pages = pages
        flags.sort = sort
        flags.window = window
        flags.thumbnail = noPreviews ? .skipped : thumbnail
        flags.prefer = prefer
        flags.concurrency = concurrency
        flags.maxApiRate = maxApiRate
        flags.maxWait = maxWait
        return flags
    }

    func validate() throws {
        if sources.isEmpty, inputFile == nil {
            throw ValidationError("name at least one source: \(ImgurAddress.acceptedForms)")
        }
        if noPreviews, let thumbnail, thumbnail != .skipped {
            throw ValidationError("--no-previews and --thumbnail \(thumbnail.rawValue) contradict each other: give one")
        }
        do {
            _ = try SourceList.addresses(sources)
        } catch let error as ValidationError {
            // ArgumentParser prints a validation error itself, not through Console: escaped here.
            throw ValidationError(error.message.escapedForTerminal)
        }
        try validateFlags(flags)
    }

    func run() async throws {
        let lifecycle = RunLifecycle(common: common, flags: flags)
        // A hand-over to mirror-postgresql comes first: it reads the input file (standard input) itself.
        let resolved = try lifecycle.resolve()
        // Every source is read before anything is created: a typo on line 40 costs no half run.
        var texts = sources.map { (text: $0, origin: nil as String?) }
        if let inputFile {
            texts += try SourceList.read(inputFile).map { (text: $0.text, origin: $0.origin) }
        }
        let addresses: [ImgurAddress]
        do {
            addresses = try SourceList.addresses(texts)
        } catch let error as ValidationError {
            throw ExitStatus.fail(error.message, status: ExitCode.validationFailure.rawValue)
        }
        // A list emptied by mistake must not pass for a run that mirrored everything.
        guard !addresses.isEmpty else {
            throw ExitStatus.fail(
                "the input file \(inputFile ?? "-") names no source; give \(ImgurAddress.acceptedForms)",
                status: ExitCode.validationFailure.rawValue)
        }
        try await lifecycle.run(resolved) { settings throws(MirrorError) in
            if settings.postgres != nil, addresses.count != 1 || addresses.first.map({ if case .tag = $0 { false } else { true } }) == true {
                throw .configuration("workers sharing the PostgreSQL state (--state or the config's 'state') mirror one tag per run; albums, posts and several sources keep their state in .mirror")
            }
            let clientID = try ClientIDFile.read(settings.clientIDFile)
            return { directory, engine, sharing, observer, logger throws(MirrorError) in
                let client = ImgurClient(
                    apiBase: settings.apiBase, clientID: clientID, engine: engine, politeness: settings.politeness, logger: logger)
                let driver = try MirrorDriver(
                    directory: directory, engine: engine, settings: settings.imgurDriver, perSource: settings.imgurDrivers(),
                    sharing: sharing, observer: observer,
                    logger: logger)
                return (driver, settings.sources(addresses, client: client, logger: logger))
            }
        }
    }
}

/// The sources a command names: its arguments and the lines of `--input-file`.
enum SourceList {
    /// The lines of `path` (or standard input for `-`) that name a source: blank lines and `#`
    /// comments (a `#` at the start of a line, or after a space) left out; each with where it stood.
    static func read(_ path: String) throws -> [(text: String, origin: String)] {
        let data: Data?
        if path == "-" {
            // No bound but memory's, as the file given by name has none.
            if case .bytes(let bytes) = DescriptorReading.readToEnd(STDIN_FILENO, limit: .max) { data = Data(bytes) } else { data = nil }
        } else {
            data = FileManager.default.contents(atPath: path)
        }
        guard let data, let text = String(data: data, encoding: .utf8) else {
            throw ExitStatus.fail("cannot read the input file \(path)" + (data == nil ? "" : ": it is not UTF-8 text"), status: ExitStatus.noInput)
        }
        var lines: [(text: String, origin: String)] = []
        // A byte-order mark that an editor put first is not part of the first source.
        let body = text.hasPrefix("\u{FEFF}") ? Substring(text.dropFirst()) : Substring(text)
        for (number, line) in body.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var entry = Substring(line.trimming(.spacesAndNewlines))
            // `#cats` is a tag; `# a comment` or `cats # why` is a comment.
            if entry.hasPrefix("# ") || entry == "#" {
                continue
            }
            if let comment = entry.firstRange(of: " #") { entry = entry[..<comment.lowerBound] }
            let trimmed = entry.trimming(.spacesAndNewlines)
            guard !trimmed.isEmpty else { continue }
            lines.append((trimmed, "\(path == "-" ? "standard input" : path):\(number + 1)"))
        }
        return lines
    }

    /// The addresses of `texts`, each once, in order; a usage error naming the first that is no source.
    static func addresses(_ texts: [String]) throws -> [ImgurAddress] {
        try addresses(texts.map { (text: $0, origin: nil as String?) })
    }

    static func addresses(_ texts: [(text: String, origin: String?)]) throws -> [ImgurAddress] {
        var seen: Set<String> = []
        var addresses: [ImgurAddress] = []
        for (text, origin) in texts {
            do {
                let address = try ImgurAddress(parsing: text)
                if seen.insert(address.description).inserted { addresses.append(address) }
            } catch {
                let place = origin.map { "\($0): " } ?? ""
                throw ValidationError("\(place)\(error): not a source; give \(ImgurAddress.acceptedForms)")
            }
        }
        return addresses
    }
}
