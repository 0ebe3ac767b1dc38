import Foundation
import Logging

/// Mirrors the enclosures of an Atom, RSS or Dash feed into `enclosures/`, one forced download at
/// a time: feed files are large (docsets run to hundreds of MB), so each gets the bandwidth.
public struct FeedMirror: Sendable {
    public struct Settings: Sendable {
        public var feedURL: String
        public var mode: DownloadMode
        public var retry: RetryPolicy

        public init(feedURL: String, mode: DownloadMode = .skipIfExists, retry: RetryPolicy = RetryPolicy()) {
            self.feedURL = feedURL
            self.mode = mode
            self.retry = retry
        }
    }

    let engine: TransferEngine
    let jobs: JobRunner
    let settings: Settings
    let logger: Logger

    public init(directory: MirrorDirectory, engine: TransferEngine, settings: Settings, logger: Logger) throws(MirrorError) {
        self.engine = engine
        self.settings = settings
        self.logger = logger
        jobs = try JobRunner(
            directory: directory, engine: engine, mode: settings.mode, concurrency: 1, retry: settings.retry,
            logger: logger)
    }

    public func run() async -> MirrorSummary {
        var summary = MirrorSummary()
        let feed: Feed
        do {
            feed = try await fetchFeed()
        } catch {
            summary.stoppedBy = error
            return summary
        }
        var urlsByName: [String: String] = [:]
        var seenURLs: Set<String> = []
        var enclosures: [MirrorJob] = []
        for enclosure in feed.enclosures {
            // Two entries may offer the same URL; one download serves both.
            guard seenURLs.insert(enclosure.url).inserted else { continue }
            var name = Self.fileName(for: enclosure)
            if urlsByName[name] != nil {
                // Another file of this feed has the name (docset.xar, say): keep both, apart.
                name = MirrorDirectory.tagged(name, Digest.md5Hex(Array(enclosure.url.utf8)).prefix(8))
            }
            urlsByName[name] = enclosure.url
            if let length = enclosure.length { logger.debug("\(enclosure.url): the feed says \(length) bytes") }
            enclosures.append(MirrorJob(url: enclosure.url, relativePath: "enclosures/\(name)", expectedSize: nil))
        }
        if feed.enclosures.isEmpty { logger.warning("feed \(settings.feedURL) lists no enclosures") }
        await jobs.run(unforced: [], forced: enclosures, source: "feed \(settings.feedURL)", into: &summary)
        return summary
    }

    private func fetchFeed() async throws(FeedError) -> Feed {
        let url = settings.feedURL
        let response: TransferResponse
        do {
            response = try await engine.perform(TransferRequest(
                url: url, headers: [("Accept", "application/atom+xml, application/rss+xml, application/xml;q=0.9, */*;q=0.5")],
                destination: .memory(limit: 64 << 20)))
        } catch let error as TransferError {
            throw FeedError(url: url, problem: "cannot be fetched: \(error.reasonText)", isFetchFailure: true)
        } catch {
            throw FeedError(url: url, problem: "cannot be fetched: \(error)", isFetchFailure: true)
        }
        guard response.isSuccess else {
            throw FeedError(url: url, problem: "HTTP \(response.status)", isFetchFailure: true)
        }
        // Relative enclosure URLs resolve against where the feed really came from.
        return try FeedReader.parse(response.body, url: response.finalURL)
    }

    /// The last path segment of the URL, percent-decoded and made safe as one file name; a Dash
    /// archive or an extension-less docset gets a name from the feed instead.
    static func fileName(for enclosure: FeedEnclosure) -> String {
        let path = URLComponents(string: enclosure.url)?.percentEncodedPath ?? ""
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        var name = (last.removingPercentEncoding ?? last)
            .map { $0 == "/" || $0 == "\\" || $0 == "\0" || $0.isNewline ? "_" : $0 }
            .reduce(into: "") { $0.append($1) }
        while name.hasPrefix(".") { name.removeFirst() }
        if name.isEmpty { name = "enclosure-" + Digest.md5Hex(Array(enclosure.url.utf8)).prefix(12) }
        return String(name.prefix(200))
    }
}
