import FoundationEssentials
import Glibc
import Logging

/// Live progress on a terminal.
package enum ProgressDisplay: String, Sendable, CaseIterable, Codable {
    /// When standard error is a terminal.
    case auto
    case always
    case never
}

/// What the lines on standard error are.
package enum LogFormat: String, Sendable, CaseIterable, Codable {
    /// `mirror: …`, one plain line per message, for people and cron mail.
    case text
    /// One JSON object per line, for log shippers.
    case json
}

/// Every setting of a run, resolved once: the config file's values, the flags' over them, the
/// defaults where neither says, all checked. Commands build one and hand its parts on.
package struct RunSettings: Sendable {
    /// The values used where neither the flags nor the config file give one.
    package enum Defaults {
        package static let apiBase = "https://api.imgur.com"
        package static let mediaBase = MediaURLBuilder.defaultMediaBase
        package static let concurrency = MirrorDriver.Settings.defaultConcurrency
        package static let maxWaitSeconds = Int(ImgurClient.Politeness.defaultMaxWait.components.seconds)
        package static let retries = RetryPolicy.defaultAttempts
        package static let sort = GallerySort.time
        package static let window = GalleryWindow.all
        package static let thumbnail = MediaURLBuilder.defaultThumbnail
        package static let animated = MediaURLBuilder.defaultAnimated
        package static let mode = DownloadMode.skipIfExists
        package static let maxFileSize = Downloader.defaultMaxFileSize
        package static let warcMaxSize: Int64 = 1 << 30
        package static let leaseSeconds = 30
        /// Four workers' worth of the default concurrency, less a third: N workers add up to more
        /// than one, but never to N times the connections on one CDN host.
        package static let clusterMaxPerHost = 16
    }

    package var apiBase: String
    var mediaBase: String
    package var clientIDFile: String
    var sort: GallerySort
    var window: GalleryWindow
    /// Listing pages to read at most; nil reads to the end.
    var pages: Int?
    var thumbnail: ThumbnailSize
    /// What animated images are fetched as.
    var animated: AnimatedFormat
    var mode: DownloadMode
    var concurrency: Int
    /// Enclosures at once: one unless told (each is large and takes the bandwidth).
    var feedConcurrency: Int
    var maxAPIRate: Double?
    var maxBytesPerSecond: Int64?
    /// The netrc file's entries, read once at the start, when one is given.
    var netrc: Netrc?
    /// What `--netrc` reads.
    package static let defaultNetrc = "~/.netrc"

    /// The logins `--api-base` and `--media-base` were given with, by the URL they serve.
    var baseLogins: [(url: String, login: URLCredentials)]
    /// Which rendition of a Media RSS group a feed's run mirrors.
    var mediaRendition: MediaRendition
    var maxWait: Duration
    var retry: RetryPolicy
    package var deadline: Duration?
    var maxFileSize: Int64
    /// Where the run's exchanges are archived as WARC (`--warc`), and the size of a file there.
    package var warc: String?
    package var warcMaxSize: Int64
    package var progress: ProgressDisplay
    package var logFormat: LogFormat
    var metadata: Bool
    var keepDeleted: Bool
    /// Runs after each saved file (`--exec`, `--exec-shell`).
    var hook: CommandHook?
    package var metricsFile: String?
    /// The shared PostgreSQL state; nil for SQLite in `.mirror`.
    package var postgres: PostgresLocation?
    package var leaseDuration: Duration
    package var clusterMaxPerHost: Int
    /// The API budget's name in the shared state: workers that share an address towards the API
    /// share it; nil for the host's name.
    package var budgetGroup: String?
    /// Which found files the run takes.
    var filter: MediaFilter
    /// Set for a dry run (see ``DryRun``): hears each file a real run would fetch; nothing is
    /// fetched, no sidecar written and no hook run.
    package var plan: (@Sendable (PlannedFile) -> Void)?
    /// What was given, to work out each source's own settings from.
    private let given: (file: MirrorConfiguration, flags: MirrorConfiguration, now: Date)
    /// The config file's settings for each source that has its own, by the source's name
    /// (`tag cats`, `feed https://…`): its own over the file's.
    private var sourceConfigurations: [String: MirrorConfiguration] = [:]

    /// Merges `file` and `flags` (a flag given wins) and checks both, naming a wrong value as it
    /// was given: `--max-wait`, or the config file and its key.
    package init(
        file: MirrorConfiguration = MirrorConfiguration(), flags: MirrorConfiguration = MirrorConfiguration(), now: Date = Date()
    ) throws(MirrorError) {
        try flags.validate(origin: .flags)
        self.given = (file, flags, now)
        var given = file.overridden(by: flags)
        // exec and execShell are one setting given two ways: a flag of either replaces both of
        // the file's (an empty --exec, as --no-exec gives, none at all).
        if flags.exec != nil || flags.execShell != nil {
            (given.exec, given.execShell) = (flags.exec, flags.execShell)
        }
        if given.progress == .always, given.logFormat == .json {
            throw .configuration("progress 'always' and JSON logs do not go together: progress lines would land among the JSON lines on standard error")
        }
        // A login in a base URL serves its requests and is written nowhere (see URLUserinfo).
        let (apiBase, apiLogin) = URLUserinfo.split(given.apiBase ?? Defaults.apiBase)
        let (mediaBase, mediaLogin) = URLUserinfo.split(given.mediaBase ?? Defaults.mediaBase)
        self.apiBase = apiBase
        self.mediaBase = mediaBase
        baseLogins = [(apiBase, apiLogin), (mediaBase, mediaLogin)].compactMap { url, login in login.map { (url, $0) } }
        clientIDFile = given.clientIdFile ?? ClientIDFile.defaultPath
        sort = given.sort ?? Defaults.sort
        window = given.window ?? Defaults.window
        pages = given.pages
        thumbnail = given.thumbnail ?? Defaults.thumbnail
        animated = given.prefer ?? Defaults.animated
        mode = given.mode ?? Defaults.mode
        concurrency = given.concurrency ?? Defaults.concurrency
        feedConcurrency = given.concurrency ?? 1
        maxAPIRate = given.maxApiRate
        maxBytesPerSecond = given.maxBandwidth.flatMap(ByteCount.parse)
        mediaRendition = given.mediaRendition ?? .preferred
        netrc = try given.netrc.flatMap { path throws(MirrorError) -> Netrc? in
            let expanded = HomeDirectory.expandingTilde(in: path)
            // `--netrc` without a ~/.netrc reads nothing, as curl and wget carry on; a file named
            // by `--netrc-file` must be there.
            if path == RunSettings.defaultNetrc, access(expanded, F_OK) != 0 { return nil }
            return try Netrc.load(path: expanded)
        }
        maxWait = given.maxWait.flatMap(DurationText.parseWait) ?? .seconds(Defaults.maxWaitSeconds)
        retry = RetryPolicy(maxAttempts: given.retries ?? Defaults.retries)
        deadline = given.maxDuration.flatMap { DurationText.parse($0) }
        maxFileSize = given.maxFileSize.flatMap(ByteCount.parse) ?? Defaults.maxFileSize
        warc = given.warc.map { HomeDirectory.expandingTilde(in: $0) }
        warcMaxSize = given.warcMaxSize.flatMap(ByteCount.parse) ?? Defaults.warcMaxSize
        progress = given.progress ?? .auto
        logFormat = given.logFormat ?? .text
        metadata = given.metadata ?? false
        keepDeleted = given.keepDeleted ?? false
        switch (given.exec, given.execShell) {
        case ("", nil): hook = nil
        case (let exec?, nil):
            switch CommandHook.make(exec, environment: ProcessInfo.processInfo.environment) {
            case .success(let hook): self.hook = hook
            case .failure(let error): throw .configuration(error.description)
            }
        case (nil, let script?): hook = CommandHook.shell(script)
        case (nil, nil): hook = nil
        case (_?, _?): throw .configuration("exec and execShell (--exec, --exec-shell) contradict each other: give one")
        }
        metricsFile = given.metricsFile.map { HomeDirectory.expandingTilde(in: $0) }
        postgres = try given.state.map { text throws(MirrorError) in try PostgresLocation(text) }
        leaseDuration = .seconds(given.leaseSeconds ?? Defaults.leaseSeconds)
        clusterMaxPerHost = given.clusterMaxPerHost ?? Defaults.clusterMaxPerHost
        budgetGroup = given.budgetGroup
        if budgetGroup != nil, postgres == nil {
            throw .configuration("--budget-group (the config's 'budgetGroup') shares an API budget through the PostgreSQL state; give --state postgresql://… too")
        }
        filter = MediaFilter()
        do {
            for expression in given.filter ?? [] { try filter.add(expression) }
            try filter.bound(since: given.since, until: given.until, now: now)
        } catch {
            throw .configuration("since and until (--since, --until, or the config's keys): \(error)")
        }
        // A claimed image the filter leaves out would be claimed again by the next worker, and
        // the next: shared workers take every file.
        if postgres != nil, !filter.isEmpty {
            throw .configuration("filters (--filter, --since, --until) are for one machine: workers sharing the PostgreSQL state (--state or the config's 'state') take every file")
        }
        // Each source's settings are checked now, before anything is touched, as the run's are.
        var keys: [String: String] = [:]
        for (key, own) in (file.sources ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let name = Self.sourceName(ofConfigKey: key) else {
                throw .configuration("the config's sources '\(key)' names no source: give a tag (cats), an Imgur URL, or a feed's URL or absolute path")
            }
            if let other = keys.updateValue(key, forKey: name) {
                throw .configuration("the config's sources '\(other)' and '\(key)' both name \(name): give its settings once")
            }
            let merged = file.forSource(own)
            do {
                _ = try RunSettings(file: merged, flags: flags, now: now)
            } catch {
                throw .configuration("the config's sources '\(key)': \(error)")
            }
            sourceConfigurations[name] = merged
        }
        // new-file asks again after every file the tag mirrored, listed or not: a sweep no claim
        // divides, which would race the workers that claim the same files.
        if postgres != nil, mode == .newFile {
            throw .configuration("mode new-file is for one machine: with the PostgreSQL state (--state or the config's 'state') workers mirror in skip-if-exists mode")
        }
    }

    /// How the driver fetches and names an Imgur run's files.
    package var imgurDriver: MirrorDriver.Settings {
        MirrorDriver.Settings(
            mode: mode, concurrency: concurrency, retry: retry, maxFileSize: maxFileSize, metadata: metadata && plan == nil,
            keepDeleted: keepDeleted, isRemovedPlaceholder: ImgurRemovedMedia.isPlaceholder, hook: plan == nil ? hook : nil,
            plan: plan)
    }

    /// How the driver fetches and names a feed run's files: one at a time unless told otherwise,
    /// each taking the bandwidth (enclosures are large).
    package var feedDriver: MirrorDriver.Settings {
        MirrorDriver.Settings(
            mode: mode, concurrency: feedConcurrency, retry: retry, maxFileSize: maxFileSize, metadata: metadata && plan == nil,
            keepDeleted: keepDeleted, hook: plan == nil ? hook : nil, plan: plan)
    }

    /// The name of the source a config file's `sources` key names, as the command line reads it.
    static func sourceName(ofConfigKey key: String) -> String? {
        if let address = try? ImgurAddress(parsing: key) { return address.description }
        // A file as the feed command names it: absolute, without `.`, `..` or doubled slashes.
        if key.hasPrefix("/") { return "feed \(FeedLocation.file(URL(fileURLWithPath: key).standardizedFileURL.path))" }
        guard HTTPURL.isValid(key) else { return nil }
        return "feed \(FeedLocation(argument: key))"
    }

    /// These settings as the source named `name` has them: its own from the config file over the
    /// file's, the flags over both.
    package func forSource(_ name: String) -> RunSettings {
        // Checked when these were made: the same values cannot fail now.
        guard let own = sourceConfigurations[name], var settings = try? RunSettings(file: own, flags: given.flags, now: given.now)
        else { return self }
        settings.plan = plan
        return settings
    }

    /// How the driver takes each source's files where the source has settings of its own.
    package func imgurDrivers() -> [String: MirrorDriver.Settings] {
        sourceConfigurations.keys.reduce(into: [:]) { $0[$1] = forSource($1).imgurDriver }
    }

    /// ``imgurDrivers()`` for feeds.
    package func feedDrivers() -> [String: MirrorDriver.Settings] {
        sourceConfigurations.keys.reduce(into: [:]) { $0[$1] = forSource($1).feedDriver }
    }

    /// How `tag`'s listing is read.
    func crawl(_ tag: String) -> TagCrawler.Options {
        TagCrawler.Options(tag: tag, sort: sort, window: window, maxPages: pages, since: filter.since)
    }

    var mediaURLs: MediaURLBuilder {
        MediaURLBuilder(mediaBase: mediaBase, thumbnail: thumbnail, animated: animated)
    }

    /// The source each address names, reading the API through `client`.
    package func sources(_ addresses: [ImgurAddress], client: ImgurClient, logger: Logger) -> [any MirrorSource] {
        addresses.map { address -> any MirrorSource in
            let settings = forSource(address.description)
            let (filter, mediaURLs) = (settings.filter, settings.mediaURLs)
            switch address {
            case .tag(let name): return TagSource(client: client, options: settings.crawl(name), urls: mediaURLs, filter: filter, logger: logger)
            case .album(let id): return PostSource(client: client, target: .album(id), urls: mediaURLs, filter: filter, logger: logger)
            case .post(let id): return PostSource(client: client, target: .post(id), urls: mediaURLs, filter: filter, logger: logger)
            case .image(let id): return PostSource(client: client, target: .image(id), urls: mediaURLs, filter: filter, logger: logger)
            }
        }
    }

    /// The source of each feed.
    package func sources(
        feeds: [FeedLocation], baseURL: String?, engine: TransferEngine, logger: Logger
    ) -> [any MirrorSource] {
        feeds.map { feed in
            let own = forSource("feed \(feed)")
            return FeedSource(
                feed: feed, baseURL: baseURL, engine: engine, retry: retry, filter: own.filter, rendition: own.mediaRendition,
                logger: logger)
        }
    }

    package var engine: TransferEngine.Configuration {
        let credentials = CredentialStore(netrc: netrc)
        // A source's own media base (the config's sources) may carry a login of its own.
        let sourceLogins = sourceConfigurations.keys.sorted().flatMap { forSource($0).baseLogins }
        for (url, login) in baseLogins + sourceLogins {
            credentials.remember(login, forOriginOf: url, given: true)
            credentials.trustDefaultLogin(forHostOf: url)
        }
        return TransferEngine.Configuration(maxBytesPerSecond: maxBytesPerSecond, credentials: credentials)
    }

    /// API calls retry as files do: `--retries` bounds them too, one policy for every request.
    package var politeness: ImgurClient.Politeness {
        ImgurClient.Politeness(maxRequestsPerSecond: maxAPIRate, maxWait: maxWait, retry: retry)
    }
}
