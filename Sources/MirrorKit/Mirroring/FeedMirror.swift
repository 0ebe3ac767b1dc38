import Foundation
import Logging

/// Mirrors the enclosures of an Atom, RSS or Dash feed into `enclosures/`, one forced download at
/// a time: feed files are large (docsets run to hundreds of MB), so each gets the bandwidth.
public struct FeedMirror: Sendable {
    public struct Settings: Sendable {
        public var feedURL: String
        public var mode: DownloadMode
        public var retry: RetryPolicy
        /// The most bytes an enclosure may have, whatever its server claims.
        public var maxFileSize: Int64

        public init(
            feedURL: String, mode: DownloadMode = .skipIfExists, retry: RetryPolicy = RetryPolicy(),
            maxFileSize: Int64 = Downloader.defaultMaxFileSize
        ) {
            self.maxFileSize = maxFileSize
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
            maxFileSize: settings.maxFileSize, logger: logger)
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
        let session = jobs.start(source: "feed \(settings.feedURL)")
        for enclosure in feed.enclosures where !session.isHalted {
            // Two entries may offer the same URL; one download serves both.
            guard seenURLs.insert(enclosure.url).inserted else { continue }
            let urlDigest: String
            do {
                urlDigest = try Digest.md5Hex(Array(enclosure.url.utf8))
            } catch {
                summary.stoppedBy = MirrorError.digest(error.description)
                break
            }
            var name = Self.fileName(for: enclosure)
            let owner: String?
            do {
                owner = try await jobs.state.url(mirroredAs: "enclosures/\(name)")
            } catch {
                // Not knowing whose the name is, the enclosure could be taken for another's file.
                session.halt(error)
                break
            }
            if takenNames.contains(name) || owner.map({ $0 != enclosure.url }) == true {
                // Another file (of this feed, or mirrored before) has the name: docset.xar, say.
                // Keep both, apart, rather than take the old one for the new.
                name = MirrorDirectory.tagged(name, urlDigest.prefix(8))
            }
            takenNames.insert(name)
            if let length = enclosure.length { logger.debug("\(enclosure.url): the feed says \(length) bytes") }
            await session.submit(
                MirrorJob(url: enclosure.url, relativePath: "enclosures/\(name)", expectedSize: nil, mirrors: enclosure.mirrors),
                forced: true)
        }
        if feed.enclosures.isEmpty { logger.warning("feed \(settings.feedURL) lists no enclosures") }
        await session.finish(into: &summary)
        summary.unavailableHosts = jobs.health.verdicts
        return summary
    }

    /// The most a feed body may hold, once decompressed. The largest real feeds (a podcast's whole
    /// history) run to a few MB; the body is held in memory whole, to be parsed.
    public static let maximumFeedBytes = 64 << 20

    /// Fetches and parses the feed, waiting out network faults, 408, 429 and 5xx as downloads do.
    /// The download ends at the first sign of a DOCTYPE, or once it grows past ``maximumFeedBytes``.
    private func fetchFeed() async throws(FeedError) -> Feed {
        let url = settings.feedURL
        let request = TransferRequest(
            url: url, headers: [("Accept", "application/atom+xml, application/rss+xml, application/xml;q=0.9, */*;q=0.5")],
            destination: .memory(limit: Self.maximumFeedBytes), inspector: FeedProlog())
        return try await settings.retry.run(
            onRetry: { failure, delay in logger.warning("\(failure); retrying in \(delay)") }
        ) { _ throws(FeedError) in
            let response: TransferResponse
            do {
                response = try await engine.perform(request)
            } catch let error as TransferError {
                switch error.reason {
                case .refused(let reason):
                    throw FeedError(url: url, problem: reason)
                case .bodyTooLarge(let limit):
                    throw FeedError(url: url, problem: "is larger than \(MirrorSummary.formatBytes(Int64(limit))); no feed is that large")
                default:
                    break
                }
                let failure = FeedError(url: url, problem: "cannot be fetched: \(error.reasonText)", isFetchFailure: true)
                guard error.isRetryable else { throw failure }
                return .retry(failure, retryAfter: nil)
            } catch {
                throw FeedError(url: url, problem: "cannot be fetched: \(error)", isFetchFailure: true)
            }
            // Relative enclosure URLs resolve against where the feed really came from.
            if response.isSuccess { return .success(try FeedReader.parse(response.body, url: response.finalURL)) }
            let failure = FeedError(url: url, problem: "HTTP \(response.status)", isFetchFailure: true)
            guard RetryPolicy.isRetryable(status: response.status) else { throw failure }
            return .retry(failure, retryAfter: RetryPolicy.retryAfter(response.headers["Retry-After"]))
        }
    }

    /// The last path segment of the URL, percent-decoded and made safe as one file name: no `/`,
    /// no controls or bidi overrides (replaced by `_`), no leading dot, and at most
    /// ``maximumNameBytes`` bytes, so that a suffix added later still fits NAME_MAX.
    static func fileName(for enclosure: FeedEnclosure) -> String {
        let path = URLComponents(string: enclosure.url)?.percentEncodedPath ?? ""
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        var name = FileNameText.replacingUnsafeCharacters(last.removingPercentEncoding ?? last)
        while name.hasPrefix(".") { name.removeFirst() }
        // The run has checked that MD5 works before it names a file.
        if name.isEmpty { name = "enclosure-" + ((try? Digest.md5Hex(Array(enclosure.url.utf8)))?.prefix(12) ?? "") }
        return FileNameText.truncated(name, toBytes: maximumNameBytes)
    }

    /// NAME_MAX less room for the longest suffixes ``MirrorDirectory`` inserts: the URL's tag of a
    /// name taken by another file (`-0123abcd`) and a count for `new-file` mode (`(123456)`).
    static let maximumNameBytes = FileNameText.maximumBytes - 32
}
