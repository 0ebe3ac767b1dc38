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
            if Task.isCancelled { summary.interrupted = true } else { summary.stoppedBy = error }
            return summary
        }
        summary.problems = feed.problems
        var takenNames: Set<String> = []
        var seenURLs: Set<String> = []
        var enclosures: [MirrorJob] = []
        for enclosure in feed.enclosures {
            // Two entries may offer the same URL; one download serves both.
            guard seenURLs.insert(enclosure.url).inserted else { continue }
            var name = Self.fileName(for: enclosure)
            let owner = await jobs.state.url(mirroredAs: "enclosures/\(name)")
            if takenNames.contains(name) || owner.map({ $0 != enclosure.url }) == true {
                // Another file (of this feed, or mirrored before) has the name: docset.xar, say.
                // Keep both, apart, rather than take the old one for the new.
                name = MirrorDirectory.tagged(name, Digest.md5Hex(Array(enclosure.url.utf8)).prefix(8))
            }
            takenNames.insert(name)
            if let length = enclosure.length { logger.debug("\(enclosure.url): the feed says \(length) bytes") }
            enclosures.append(MirrorJob(
                url: enclosure.url, relativePath: "enclosures/\(name)", expectedSize: nil, mirrors: enclosure.mirrors))
        }
        if feed.enclosures.isEmpty { logger.warning("feed \(settings.feedURL) lists no enclosures") }
        await jobs.run(unforced: [], forced: enclosures, source: "feed \(settings.feedURL)", into: &summary)
        return summary
    }

    /// Fetches and parses the feed, waiting out network faults, 408, 429 and 5xx as downloads do.
    private func fetchFeed() async throws(FeedError) -> Feed {
        let url = settings.feedURL
        let request = TransferRequest(
            url: url, headers: [("Accept", "application/atom+xml, application/rss+xml, application/xml;q=0.9, */*;q=0.5")],
            destination: .memory(limit: 64 << 20))
        var attempt = 0
        var waited = Duration.zero
        while true {
            attempt += 1
            var failure: FeedError
            var retryAfter: Duration?
            do {
                let response = try await engine.perform(request)
                if response.isSuccess {
                    // Relative enclosure URLs resolve against where the feed really came from.
                    return try FeedReader.parse(response.body, url: response.finalURL)
                }
                failure = FeedError(url: url, problem: "HTTP \(response.status)", isFetchFailure: true)
                guard [408, 429].contains(response.status) || response.status >= 500 else { throw failure }
                retryAfter = response.headers["Retry-After"].flatMap(Downloader.parseRetryAfter)
            } catch let error as FeedError {
                throw error
            } catch let error as TransferError {
                failure = FeedError(url: url, problem: "cannot be fetched: \(error.reasonText)", isFetchFailure: true)
                guard error.isRetryable else { throw failure }
            } catch {
                throw FeedError(url: url, problem: "cannot be fetched: \(error)", isFetchFailure: true)
            }
            let delay = settings.retry.delay(afterAttempt: attempt, retryAfter: retryAfter)
            guard attempt < settings.retry.maxAttempts, waited + delay <= settings.retry.maxTotalWait else { throw failure }
            logger.warning("\(failure); retrying in \(delay)")
            do { try await Task.sleep(for: delay) } catch { throw failure }
            waited += delay
        }
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
