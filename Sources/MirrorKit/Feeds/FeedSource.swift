import FoundationEssentials
import Logging

/// An Atom, RSS or Dash feed as a source: its enclosures go into `enclosures/`, each forced:
/// feed files are large (docsets run to hundreds of MB), so each gets the bandwidth. An entry
/// whose release changed (its version, `updated` or URL) is fetched again in `new-file` mode, kept
/// beside the old; `skip-if-exists` keeps the old file and reports the release as skipped.
package struct FeedSource: MirrorSource {
    let feed: FeedLocation
    /// What relative links resolve against in a feed read from a file or standard input.
    let baseURL: String?
    let engine: TransferEngine
    /// Attempts and backoff for fetching the feed itself.
    let retry: RetryPolicy
    /// Which enclosures the run takes (`--filter`, `--since`, `--until`).
    let filter: MediaFilter
    /// Which rendition of a Media RSS group is mirrored.
    let rendition: MediaRendition
    let logger: Logger

    package init(
        feed: FeedLocation, baseURL: String? = nil, engine: TransferEngine, retry: RetryPolicy,
        filter: MediaFilter = MediaFilter(), rendition: MediaRendition = .preferred, logger: Logger
    ) {
        self.filter = filter
        self.rendition = rendition
        self.feed = feed
        self.baseURL = baseURL
        self.engine = engine
        self.retry = retry
        self.logger = logger
    }

    package var name: String { "feed \(feed)" }

    package func list(into sink: SourceSink) async -> SourceListing {
        var listing = SourceListing()
        sink.publish(.phase(.readingFeed))
        let feed: Feed
        do {
            feed = try await loadFeed()
        } catch {
            if !Task.isCancelled { listing.stoppedBy = .feed(error) }
            return listing
        }
        listing.problems = feed.problems
        for warning in feed.warnings { logger.warning("feed \(self.feed): \(warning)") }
        for (url, credentials) in feed.linkCredentials { engine.credentials.remember(credentials, forOriginOf: url, given: false) }
        var names = EnclosureNames(feed: self.feed.description, enclosures: feed.enclosures)
        var previewNames = EnclosureNames(feed: self.feed.description, enclosures: [])
        var seenURLs: Set<String> = []
        var seenPreviews: Set<String> = []
        var leftOutURLs: Set<String> = []
        for enclosure in feed.enclosures where !sink.isHalted {
            // Two entries may offer the same URL; one download serves both.
            // The filter first: another entry may offer the same URL within the dates.
            guard filter.admits(enclosure.candidate) else {
                if !seenURLs.contains(enclosure.url), leftOutURLs.insert(enclosure.url).inserted { sink.leaveOut(1) }
                continue
            }
            guard seenURLs.insert(enclosure.url).inserted else { continue }
            let job: MirrorJob?
            do {
                job = try await plan(enclosure, kind: feed.kind, names: &names, sink: sink, listing: &listing)
            } catch {
                // Not knowing whose a name is, the enclosure could be taken for another's file.
                sink.halt(error)
                break
            }
            guard let job else { continue }
            if let sidecars = sink.sidecars {
                do throws(MirrorError) {
                    let fileName = String(job.relativePath.dropFirst("enclosures/".count))
                    let name = EnclosureSidecar.name(of: fileName)
                    let sources = try sidecars.sources(of: name, adding: sink.name)
                    try sidecars.write(EnclosureSidecar(enclosure, feed: feed, fileName: fileName, sources: sources), as: name)
                } catch where error.stopsTheRun {
                    sink.halt(error)
                    break
                } catch {
                    sink.report("metadata of \(enclosure.url): \(error)")
                }
            }
            // The thumbnail first, as Imgur's previews: it is small, and shown while the file comes.
            if let preview = enclosure.preview, seenPreviews.insert(preview).inserted {
                do {
                    // An item of its URL: entries that share a thumbnail share one file, whatever
                    // entry comes first in a run.
                    let thumbnail = try await planPreview(
                        preview, item: "preview \(self.feed.description) \(preview)", release: nil, names: &previewNames, sink: sink)
                    await sink.submit(thumbnail, forced: false)
                } catch {
                    sink.halt(error)
                    break
                }
            }
            await sink.submit(job, forced: true)
        }
        // The feed's own image, once: its preview, as an entry's thumbnail is.
        if let image = feed.image, !sink.isHalted, seenPreviews.insert(image).inserted {
            do {
                let job = try await planPreview(image, item: "image of feed \(self.feed.description)", release: nil, names: &previewNames, sink: sink)
                await sink.submit(job, forced: false)
            } catch {
                sink.halt(error)
            }
        }
        if feed.enclosures.isEmpty { logger.warning("feed \(self.feed) lists no enclosures") }
        await sink.revalidateTheRest(claiming: ["enclosures", Self.previewFolder])
        return listing
    }

    /// The job for `enclosure`, or nil when a new release is left alone (`skip-if-exists`).
    private func plan(
        _ enclosure: FeedEnclosure, kind: Feed.Kind, names: inout EnclosureNames, sink: SourceSink,
        listing: inout SourceListing
    ) async throws(MirrorError) -> MirrorJob? {
        let item = names.item(for: enclosure, kind: kind)
        let release = FeedRelease(version: enclosure.version, updated: enclosure.updated)
        let held = try await heldVersion(of: item, enclosure: enclosure, release: release, sink: sink)
        if let held, try sink.holds(held.path), let change = Self.change(from: held, to: enclosure) {
            if sink.runner.mode == .skipIfExists {
                let line = "\(held.path): \(change); kept the file there (skip-if-exists)"
                logger.info("\(line)")
                listing.skippedReleases.append(line)
                return nil
            }
            logger.info("\(held.path): \(change); fetching it")
        }
        var name = Self.fileName(for: enclosure)
        let owner = try await sink.store.item(owning: "enclosures/\(name)")
        if !names.claim(name, for: item) || owner.map({ $0 != item }) == true {
            // Another entry (of this feed, or mirrored before) has the name: docset.xar, say.
            // Keep both, apart, rather than take the old one for the new.
            name = MirrorDirectory.tagged(name, try Self.digest(item).prefix(8))
            _ = names.claim(name, for: item)
        }
        var job = MirrorJob(
            url: enclosure.url, relativePath: "enclosures/\(name)", mirrors: enclosure.mirrors, item: item, release: release)
        // Feeds write 0 (or nothing) for a length they do not know.
        job.declaredSize = enclosure.length.flatMap { $0 > 0 ? $0 : nil }
        return job
    }

    /// Where a feed's thumbnails (Media RSS's) go: the previews of its files, beside `enclosures/`.
    static let previewFolder = "previews"

    /// The job of the image at `url` (a file's thumbnail, the feed's own image), the item `item`:
    /// named after its URL's file name, tagged when another item has that name.
    private func planPreview(
        _ url: String, item: String, release: FeedRelease?, names: inout EnclosureNames, sink: SourceSink
    ) async throws(MirrorError) -> MirrorJob {
        var name = Self.fileName(forURL: url)
        let owner = try await sink.store.item(owning: "\(Self.previewFolder)/\(name)")
        if !names.claim(name, for: item) || owner.map({ $0 != item }) == true {
            name = MirrorDirectory.tagged(name, try Self.digest(item).prefix(8))
            _ = names.claim(name, for: item)
        }
        return MirrorJob(url: url, relativePath: "\(Self.previewFolder)/\(name)", item: item, release: release)
    }

    /// The newest file recorded for `item`; one an earlier version of mirror recorded under the
    /// URL alone is taken over for the entry.
    private func heldVersion(
        of item: String, enclosure: FeedEnclosure, release: FeedRelease, sink: SourceSink
    ) async throws(MirrorError) -> MirroredFile? {
        if let held = try await sink.store.latestFile(of: item) { return held }
        for url in [enclosure.url] + enclosure.mirrors {
            guard var legacy = try await sink.store.latestFile(of: url), legacy.item == url else { continue }
            // What it holds is taken for the release the feed names now: nothing says otherwise.
            try await sink.store.adopt(item: url, as: item, source: sink.name, release: release)
            legacy.item = item
            legacy.version = release.version
            legacy.updated = release.updated
            return legacy
        }
        return nil
    }

    /// How the feed's release differs from the one `held` came from, or nil when it does not.
    static func change(from held: MirroredFile, to enclosure: FeedEnclosure) -> String? {
        if let version = enclosure.version, version != held.version {
            return "the feed names version \(version)" + (held.version.map { " (the mirror has \($0))" } ?? "")
        }
        if let updated = enclosure.updated, updated != held.updated {
            return "the entry was updated \(updated)" + (held.updated.map { " (the mirror has \($0))" } ?? "")
        }
        if !([enclosure.url] + enclosure.mirrors).contains(held.url) {
            return "the entry now links \(enclosure.url) (the mirror has \(held.url))"
        }
        return nil
    }

    private static func digest(_ text: String) throws(MirrorError) -> String {
        do throws(DigestError) {
            return try Digest.md5Hex(Array(text.utf8))
        } catch {
            throw .digest(error.description)
        }
    }

    /// Reads the feed: fetched from its URL, or read from a file or standard input.
    private func loadFeed() async throws(FeedError) -> Feed {
        switch feed {
        case .url(let given):
            // The password stays in memory, for this origin's requests: the URL fetched, named
            // and stored is the one without it.
            let (url, credentials) = URLUserinfo.split(given)
            engine.credentials.trustDefaultLogin(forHostOf: url)
            if let credentials { engine.credentials.remember(credentials, forOriginOf: url, given: true) }
            return try await fetchFeed(url, named: feed.description, credentials: credentials)
        case .file, .standardInput:
            let bytes = try await feed.readLocally(limit: Self.maximumFeedBytes)
            return try FeedReader.parse(bytes, url: feed.description, base: baseURL, rendition: rendition)
        }
    }

    /// The most a feed body may hold, once decompressed. The largest real feeds (a podcast's whole
    /// history) run to a few MB; the body is held in memory whole, to be parsed.
    static let maximumFeedBytes = 64 << 20

    /// Fetches and parses the feed, waiting out network faults, 408, 429 and 5xx as downloads do.
    /// The download ends at a DOCTYPE longer than a feed's ever is, or once it grows past
    /// ``maximumFeedBytes``.
    private func fetchFeed(_ address: String, named url: String, credentials: URLCredentials?) async throws(FeedError) -> Feed {
        var request = TransferRequest(
            url: address, headers: [("Accept", "application/atom+xml, application/rss+xml, application/xml;q=0.9, */*;q=0.5")],
            destination: .memory(limit: Self.maximumFeedBytes), inspector: FeedProlog())
        // Two feeds of one host with two logins: each feed is fetched with its own.
        request.credentials = credentials
        return try await retry.run(
            onRetry: { failure, delay in logger.warning("\(failure); retrying in \(DurationText.spoken(delay))") }
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
            if response.isSuccess {
                return .success(try FeedReader.parse(response.body, url: url, base: response.finalURL, rendition: rendition))
            }
            let failure = FeedError(url: url, problem: "HTTP \(response.status)", isFetchFailure: true)
            guard RetryPolicy.isRetryable(status: response.status) else { throw failure }
            return .retry(failure, retryAfter: RetryPolicy.retryAfter(response.headers["Retry-After"]))
        }
    }

    /// The last path segment of the URL, percent-decoded and made safe as one file name: no `/`,
    /// no controls or bidi overrides (replaced by `_`), no leading dot, and at most
    /// ``maximumNameBytes`` bytes, so that a suffix added later still fits NAME_MAX.
    static func fileName(for enclosure: FeedEnclosure) -> String {
        fileName(forURL: enclosure.url)
    }

    static func fileName(forURL url: String) -> String {
        let path = URLComponents(string: url)?.percentEncodedPath ?? ""
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        var name = FileNameText.replacingUnsafeCharacters(last.percentDecoded ?? last)
        while name.hasPrefix(".") { name.removeFirst() }
        // The run has checked that MD5 works before it names a file.
        if name.isEmpty { name = "enclosure-" + ((try? Digest.md5Hex(Array(url.utf8)))?.prefix(12) ?? "") }
        return FileNameText.truncated(name, toBytes: maximumNameBytes)
    }

    /// NAME_MAX less room for the longest suffixes ``MirrorDirectory`` inserts: the URL's tag of a
    /// name taken by another file (`-0123abcd`) and a count for `new-file` mode (`(123456)`).
    static let maximumNameBytes = FileNameText.maximumBytes - 32
}

/// The items of one feed's enclosures and the file names they claim, so two entries never share
/// a name nor an item.
struct EnclosureNames {
    /// The feed the items are of: two feeds in one mirror may both have an entry `1`.
    private let feed: String
    /// Entry ids more than one enclosure has: which of them is which would depend on the order.
    private let sharedIDs: Set<String>
    private var owners: [String: String] = [:]

    init(feed: String, enclosures: [FeedEnclosure]) {
        self.feed = feed
        var seen: Set<String> = []
        var shared: Set<String> = []
        for enclosure in enclosures {
            guard let id = enclosure.entryID else { continue }
            if !seen.insert(id).inserted { shared.insert(id) }
        }
        sharedIDs = shared
    }

    /// What `enclosure` is a release of, the same from run to run: a Dash archive is one item
    /// whatever mirror serves it; an entry is its id (a docset's identifier, an Atom id, an RSS
    /// guid); one without an id, or with an id another entry of the feed shares, is its URL.
    func item(for enclosure: FeedEnclosure, kind: Feed.Kind) -> String {
        switch kind {
        case .dash:
            return "dash \(feed) \(FeedSource.fileName(for: enclosure))"
        case .atom, .rss:
            if let id = enclosure.entryID, !sharedIDs.contains(id) { return "entry \(feed) \(id)" }
            return "url " + enclosure.url
        }
    }

    /// Whether `name` is free for `item` in this run (and now taken by it).
    mutating func claim(_ name: String, for item: String) -> Bool {
        if let owner = owners[name] { return owner == item }
        owners[name] = item
        return true
    }
}
