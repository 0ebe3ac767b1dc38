import FoundationEssentials
import Glibc

/// Settings as given: read from a JSON config file (`--config`), or from the command line's flags.
/// Every key is optional; ``RunSettings`` merges the two (flags win) and applies the defaults.
/// config.example.json lists every key.
package struct MirrorConfiguration: Sendable, Equatable, Decodable {
    package var apiBase: String?
    package var mediaBase: String?
    package var clientIdFile: String?
    package var sort: GallerySort?
    package var window: GalleryWindow?
    package var pages: Int?
    package var thumbnail: ThumbnailSize?
    /// What animated images are fetched as: `mp4` (the default) or `gif`.
    package var prefer: AnimatedFormat?
    package var mode: DownloadMode?
    package var concurrency: Int?
    /// Most API calls per second.
    package var maxApiRate: Double?
    /// Most bytes per second for all downloads together, as `2M`, `500k` or a number.
    package var maxBandwidth: String?
    /// The longest wait for a rate limit before stopping with exit status 75: `5m`, `300`
    /// (seconds), or `0` for none.
    package var maxWait: String?
    /// Attempts per file, the first included.
    package var retries: Int?
    /// How long a run may take, as `50m`: at the deadline it stops starting work and exits,
    /// and the next run carries on.
    package var maxDuration: String?
    /// The most bytes a file may have unless the API states its size, as `4G` or a number.
    package var maxFileSize: String?
    /// Live progress on a terminal: `auto` (when standard error is one), `always`, `never`.
    package var progress: ProgressDisplay?
    /// What standard error's lines are: `text` for people, `json` for log shippers.
    package var logFormat: LogFormat?
    /// Write a JSON sidecar of what the API or feed said beside each file, under `meta/`.
    package var metadata: Bool?
    /// A file the mirror had and the user deleted stays deleted (by default every run fetches
    /// such files again).
    package var keepDeleted: Bool?
    /// A program (and its arguments, split at spaces) run after each saved file, not through a shell.
    package var exec: String?
    /// A shell command (`/bin/sh -c`) run after each saved file.
    package var execShell: String?
    /// A Prometheus text file rewritten during and after each run, for node_exporter.
    package var metricsFile: String?
    /// Where the state is kept: unset for `.mirror/state.sqlite3`, or a
    /// `postgresql://user@host/database` URL that workers on several hosts share.
    package var state: String?
    /// How long a worker's claims hold unless it renews them (PostgreSQL state only).
    package var leaseSeconds: Int?
    /// Connections to one media host that all workers together may have (PostgreSQL state only).
    package var clusterMaxPerHost: Int?
    /// Workers that share an address towards the API (one NAT) and so one API budget
    /// (PostgreSQL state only); default the host's name.
    package var budgetGroup: String?
    /// A netrc file whose `machine` entries give requests a login and password (`--netrc` reads
    /// `~/.netrc`, as curl and wget do); unset for none.
    package var netrc: String?
    /// A directory to archive every HTTP exchange of a run into, as WARC/1.1 (`--warc`).
    package var warc: String?
    /// The size past which a WARC file is closed and another begun, e.g. `1G` (the default).
    package var warcMaxSize: String?
    /// Which rendition of a Media RSS group a feed's run mirrors: `default`, `largest`, `smallest`.
    package var mediaRendition: MediaRendition?
    /// Conditions every file must meet (`type=animated`, `size<10M`); see ``MediaFilter``.
    package var filter: [String]?
    /// Only posts or entries dated at or after this: a day, a moment, or a span back such as `30d`.
    package var since: String?
    /// Only posts or entries dated before this.
    package var until: String?
    /// Settings of one source each (a tag, an Imgur URL, a feed's URL or file), over the rest of
    /// the file's: only those that concern one source (``sourceKeys``).
    package var sources: [String: MirrorConfiguration]?

    package init() {}

    /// Reads a config file's object. A named choice says which names it takes, and a duration may
    /// be written as `50m`, `1h30m` or a number of seconds, as on the command line.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func text(_ key: CodingKeys) throws -> String? { try container.decodeIfPresent(String.self, forKey: key) }
        func choice<T: RawRepresentable & CaseIterable>(_ key: CodingKeys, _ type: T.Type) throws -> T? where T.RawValue == String {
            guard let text = try text(key) else { return nil }
            guard let value = T(rawValue: text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container,
                    debugDescription: "must be one of \(T.allCases.map(\.rawValue).joined(separator: ", ")), got '\(text)'")
            }
            return value
        }
        func duration(_ key: CodingKeys) throws -> String? {
            guard container.contains(key), try !container.decodeNil(forKey: key) else { return nil }
            if let seconds = try? container.decode(Int.self, forKey: key) { return String(seconds) }
            if let text = try? container.decode(String.self, forKey: key) { return text }
            throw DecodingError.typeMismatchError(key, in: container, "a duration such as \"50m\" or a number of seconds")
        }
        apiBase = try text(.apiBase)
        mediaBase = try text(.mediaBase)
        clientIdFile = try text(.clientIdFile)
        sort = try choice(.sort, GallerySort.self)
        window = try choice(.window, GalleryWindow.self)
        pages = try container.decodeIfPresent(Int.self, forKey: .pages)
        thumbnail = try choice(.thumbnail, ThumbnailSize.self)
        prefer = try choice(.prefer, AnimatedFormat.self)
        mode = try container.decodeIfPresent(DownloadMode.self, forKey: .mode)
        concurrency = try container.decodeIfPresent(Int.self, forKey: .concurrency)
        maxApiRate = try container.decodeIfPresent(Double.self, forKey: .maxApiRate)
        maxBandwidth = try text(.maxBandwidth)
        maxWait = try duration(.maxWait)
        retries = try container.decodeIfPresent(Int.self, forKey: .retries)
        maxDuration = try duration(.maxDuration)
        maxFileSize = try text(.maxFileSize)
        progress = try choice(.progress, ProgressDisplay.self)
        logFormat = try choice(.logFormat, LogFormat.self)
        metadata = try container.decodeIfPresent(Bool.self, forKey: .metadata)
        keepDeleted = try container.decodeIfPresent(Bool.self, forKey: .keepDeleted)
        exec = try text(.exec)
        execShell = try text(.execShell)
        metricsFile = try text(.metricsFile)
        state = try text(.state)
        leaseSeconds = try container.decodeIfPresent(Int.self, forKey: .leaseSeconds)
        clusterMaxPerHost = try container.decodeIfPresent(Int.self, forKey: .clusterMaxPerHost)
        budgetGroup = try text(.budgetGroup)
        netrc = try text(.netrc)
        warc = try text(.warc)
        warcMaxSize = try text(.warcMaxSize)
        mediaRendition = try choice(.mediaRendition, MediaRendition.self)
        if container.contains(.filter), try !container.decodeNil(forKey: .filter) {
            if let one = try? container.decode(String.self, forKey: .filter) {
                filter = [one]
            } else if let several = try? container.decode([String].self, forKey: .filter) {
                filter = several
            } else {
                throw DecodingError.typeMismatchError(CodingKeys.filter, in: container, "a filter such as \"size<10M\", or a list of them")
            }
        }
        since = try text(.since)
        until = try text(.until)
        sources = try container.decodeIfPresent([String: MirrorConfiguration].self, forKey: .sources)
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case apiBase, mediaBase, clientIdFile, sort, window, pages, thumbnail, prefer, mode, concurrency
        case maxApiRate, maxBandwidth, maxWait, retries, maxDuration, maxFileSize
        case progress, logFormat, metadata, keepDeleted, exec, execShell, metricsFile
        case state, leaseSeconds, clusterMaxPerHost, budgetGroup, netrc, warc, warcMaxSize, mediaRendition, filter, since, until
        case sources
    }

    /// The keys a source's own settings may have: how it is listed, which of its files are taken,
    /// and how they are kept. The others (bandwidth, concurrency, the state, logging…) are the
    /// whole run's.
    static let sourceKeys: [CodingKeys] = [
        .sort, .window, .pages, .thumbnail, .prefer, .mediaBase, .filter, .since, .until,
        .mode, .metadata, .keepDeleted, .exec, .execShell, .mediaRendition,
    ]

    /// Where settings came from, for naming one in an error.
    package enum Origin: Sendable {
        case file(String)
        /// One source's settings in a config file.
        case source(file: String, key: String)
        case flags

        /// `config file F: 'maxWait'`, `config file F: sources 'cats': 'sort'` or `--max-wait`.
        func name(_ key: CodingKeys) -> String {
            switch self {
            case .file(let path): "config file \(path): '\(key.rawValue)'"
            case .source(let path, let source): "config file \(path): sources '\(source)': '\(key.rawValue)'"
            case .flags: "--" + key.rawValue.flagSpelling
            }
        }
    }

    /// Reads and checks a config file. Unknown keys are errors, not silently ignored: a typo in a
    /// cron job's config should fail loudly once rather than quietly do the wrong thing forever.
    /// The config file read when none is named: the user's
    /// (`$XDG_CONFIG_HOME/mirror/config.json`, `~/.config/mirror/config.json` when that is
    /// unset), else the system's (`/etc/mirror/config.json`); nil when neither exists.
    package static func defaultPath(
        environment: [String: String], exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }
    ) -> String? {
        var candidates: [String] = []
        // The XDG rule: a relative path is ignored, as if unset.
        if let home = environment["XDG_CONFIG_HOME"], home.hasPrefix("/") {
            candidates.append(home + "/mirror/config.json")
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            candidates.append(home + "/.config/mirror/config.json")
        }
        candidates.append("/etc/mirror/config.json")
        return candidates.first(where: exists)
    }

    /// The most a config file may hold.
    static let maximumFileBytes = 1 << 20

    package static func load(from path: String) throws(MirrorError) -> MirrorConfiguration {
        let data: Data
        switch DescriptorReading.readSmallFile(atPath: path, limit: maximumFileBytes) {
        case .bytes(let bytes): data = Data(bytes)
        case .missing: throw .configuration("config file \(path): does not exist")
        case .notARegularFile: throw .configuration("config file \(path): is not a regular file")
        case .tooLarge: throw .configuration("config file \(path): is larger than 1 MiB; no config file is that large")
        case .failed(let code): throw .configuration("config file \(path): cannot be read (\(String(cString: strerror(code))))")
        }
        guard let document = JSONValue.parse(data) else {
            // The decoder says only that the text is no JSON: where, a strict reading tells.
            let place = JSONSyntaxError.find(in: Array(data)).map { " (\($0))" } ?? ""
            throw .configuration("config file \(path): not valid JSON\(place)")
        }
        guard let keys = document.object?.keys else {
            throw .configuration("config file \(path): expected a JSON object at the top level")
        }
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        if let unknown = keys.sorted().first(where: { !known.contains($0) }) {
            throw .configuration("config file \(path): unknown key '\(unknown)'")
        }
        if let sources = document["sources"] {
            try checkSourceKeys(sources, path: path)
        }
        let configuration: MirrorConfiguration
        do {
            configuration = try JSONDecoder().decode(MirrorConfiguration.self, from: data)
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.count == 1 {
            // A value of the right type that names nothing: say which key, and what it takes.
            throw .configuration("config file \(path): '\(context.codingPath[0].stringValue)' \(context.debugDescription)")
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.count == 3 {
            let (source, key) = (context.codingPath[1].stringValue, context.codingPath[2].stringValue)
            throw .configuration("config file \(path): sources '\(source)': '\(key)' \(context.debugDescription)")
        } catch {
            throw .configuration("config file \(path): \(ImgurClient.describe(error))")
        }
        try configuration.validate(origin: .file(path))
        for (key, entry) in configuration.sources ?? [:] {
            try entry.validate(origin: .source(file: path, key: key))
        }
        return configuration
    }

    /// Refuses a `sources` that is not an object of objects, and a source's key that is unknown or
    /// a setting of the whole run.
    private static func checkSourceKeys(_ sources: JSONValue, path: String) throws(MirrorError) {
        guard let sources = sources.object else {
            throw .configuration("config file \(path): 'sources' must be an object: each source (a tag, an Imgur URL, a feed) with its settings")
        }
        let allowed = Set(sourceKeys.map(\.rawValue))
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        for (source, entry) in sources.sorted(by: { $0.key < $1.key }) {
            guard let keys = entry.object?.keys else {
                throw .configuration("config file \(path): sources '\(source)' must be an object of settings")
            }
            for key in keys.sorted() where !allowed.contains(key) {
                guard known.contains(key) else {
                    throw .configuration("config file \(path): sources '\(source)': unknown key '\(key)'")
                }
                throw .configuration(
                    "config file \(path): sources '\(source)': '\(key)' is a setting of the whole run, not of one source; a source may set \(sourceKeys.map(\.rawValue).joined(separator: ", "))")
            }
        }
    }

    /// This file's settings for a source with `own` settings: `own`'s over the file's (an exec or
    /// execShell of the source's replaces both of the file's).
    func forSource(_ own: MirrorConfiguration) -> MirrorConfiguration {
        var merged = overridden(by: own)
        if own.exec != nil || own.execShell != nil { (merged.exec, merged.execShell) = (own.exec, own.execShell) }
        merged.sources = nil
        return merged
    }

    /// Checks every value given, naming the first that is wrong as `origin` spells it.
    package func validate(origin: Origin) throws(MirrorError) {
        func refuse(_ key: CodingKeys, _ problem: String) -> MirrorError {
            .configuration("\(origin.name(key)) \(problem)")
        }
        if let pages, pages < 1 { throw refuse(.pages, "must be at least 1") }
        if let concurrency, !(1...64).contains(concurrency) { throw refuse(.concurrency, "must be 1 to 64") }
        // Below that, the wait between two calls (a thousand seconds and more) is no rate anybody
        // means, and far enough below it no duration can hold.
        if let maxApiRate, !(maxApiRate >= 0.001) { throw refuse(.maxApiRate, "must be at least 0.001 (a call every 1,000 seconds)") }
        if let maxBandwidth, (ByteCount.parse(maxBandwidth) ?? 0) <= 0 {
            throw refuse(.maxBandwidth, "must be a rate such as 2M or 500k, got '\(maxBandwidth)'")
        }
        if let maxFileSize, (ByteCount.parse(maxFileSize) ?? 0) <= 0 {
            throw refuse(.maxFileSize, "must be a size such as 4G or 500M, got '\(maxFileSize)'")
        }
        if let warcMaxSize, (ByteCount.parse(warcMaxSize) ?? 0) < 1 << 20 {
            throw refuse(.warcMaxSize, "must be a size of at least 1M, such as 1G or 500M, got '\(warcMaxSize)'")
        }
        if let maxWait, DurationText.parseWait(maxWait) == nil {
            throw refuse(.maxWait, "must be a duration such as 5m, 90s or 300 (seconds), or 0 to never wait, got '\(maxWait)'")
        }
        if let retries, !(1...100).contains(retries) { throw refuse(.retries, "must be 1 to 100") }
        if let maxDuration, DurationText.parse(maxDuration) == nil {
            throw refuse(.maxDuration, "must be a duration such as 50m, 1h30m or 3000 (seconds), got '\(maxDuration)'")
        }
        for (key, value) in [(CodingKeys.apiBase, apiBase), (.mediaBase, mediaBase)] {
            if let value, !HTTPURL.isValid(value) { throw refuse(key, "must be an http or https URL, got '\(URLUserinfo.redactedArgument(value, schemeless: true))'") }
        }
        if let metricsFile, metricsFile.isEmpty || metricsFile.hasSuffix("/") {
            throw refuse(.metricsFile, "must name a file, got '\(metricsFile)'")
        }
        if let state {
            do {
                _ = try PostgresLocation(state)
            } catch {
                throw refuse(.state, "must be a postgresql://user@host/database URL (or unset for SQLite in .mirror): \(error)")
            }
        }
        if let leaseSeconds, !(2...3600).contains(leaseSeconds) { throw refuse(.leaseSeconds, "must be 2 to 3600") }
        if let clusterMaxPerHost, !(1...256).contains(clusterMaxPerHost) { throw refuse(.clusterMaxPerHost, "must be 1 to 256") }
        if let budgetGroup, budgetGroup.isEmpty || budgetGroup.count > 64 || budgetGroup != budgetGroup.trimming(.spacesAndNewlines)
            || budgetGroup.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw refuse(.budgetGroup, "must be a name of 1 to 64 characters without spaces at either end, got '\(budgetGroup.escapedForTerminal)'")
        }
        var conditions = MediaFilter()
        for expression in filter ?? [] {
            do {
                try conditions.add(expression)
            } catch {
                throw refuse(.filter, error.description)
            }
        }
        for (key, value) in [(CodingKeys.since, since), (.until, until)] {
            if let value, DateBound.parse(value, now: Date()) == nil {
                throw refuse(key, "must be \(DateBound.forms), got '\(value)'")
            }
        }
        if progress == .always, logFormat == .json {
            throw refuse(.progress, "always would put progress lines among the JSON lines on standard error; use never, or text logs")
        }
    }

    /// The flags' values over this file's: a flag given wins.
    func overridden(by flags: MirrorConfiguration) -> MirrorConfiguration {
        var merged = self
        for key in CodingKeys.allCases { merged.take(key, from: flags) }
        return merged
    }

    private mutating func take(_ key: CodingKeys, from other: MirrorConfiguration) {
        func pick<T>(_ path: WritableKeyPath<MirrorConfiguration, T?>) {
            if let value = other[keyPath: path] { self[keyPath: path] = value }
        }
        switch key {
        case .apiBase: pick(\.apiBase)
        case .mediaBase: pick(\.mediaBase)
        case .clientIdFile: pick(\.clientIdFile)
        case .sort: pick(\.sort)
        case .window: pick(\.window)
        case .pages: pick(\.pages)
        case .thumbnail: pick(\.thumbnail)
        case .prefer: pick(\.prefer)
        case .mode: pick(\.mode)
        case .concurrency: pick(\.concurrency)
        case .maxApiRate: pick(\.maxApiRate)
        case .maxBandwidth: pick(\.maxBandwidth)
        case .maxWait: pick(\.maxWait)
        case .retries: pick(\.retries)
        case .maxDuration: pick(\.maxDuration)
        case .maxFileSize: pick(\.maxFileSize)
        case .progress: pick(\.progress)
        case .logFormat: pick(\.logFormat)
        case .metadata: pick(\.metadata)
        case .keepDeleted: pick(\.keepDeleted)
        case .exec: pick(\.exec)
        case .execShell: pick(\.execShell)
        case .metricsFile: pick(\.metricsFile)
        case .state: pick(\.state)
        case .leaseSeconds: pick(\.leaseSeconds)
        case .clusterMaxPerHost: pick(\.clusterMaxPerHost)
        case .budgetGroup: pick(\.budgetGroup)
        case .netrc: pick(\.netrc)
        case .warc: pick(\.warc)
        case .warcMaxSize: pick(\.warcMaxSize)
        case .mediaRendition: pick(\.mediaRendition)
        case .filter: pick(\.filter)
        case .since: pick(\.since)
        case .until: pick(\.until)
        case .sources: pick(\.sources)
        }
    }

}


extension String {
    /// `maxApiRate` as a flag: `max-api-rate`.
    fileprivate var flagSpelling: String {
        var result = ""
        for character in self {
            if character.isUppercase {
                result += "-" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }
}

extension DecodingError {
    /// A value of the wrong type at `key`, with what it should have been.
    static func typeMismatchError<Key: CodingKey>(_ key: Key, in container: KeyedDecodingContainer<Key>, _ expected: String) -> DecodingError {
        .dataCorruptedError(forKey: key, in: container, debugDescription: "must be \(expected)")
    }
}
