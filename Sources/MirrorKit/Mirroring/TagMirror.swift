import Foundation
import Logging
import Synchronization

/// Mirrors one Imgur tag into a directory: every image's thumbnail under `preview/` and its
/// full-size file under `full/`, each named by the image id.
package struct TagMirror: Sendable {
    package struct Settings: Sendable {
        var crawl: TagCrawler.Options
        var urls: MediaURLBuilder
        var mode: DownloadMode
        /// Downloads running at once.
        var concurrency: Int
        /// Attempts and backoff for each file.
        var retry: RetryPolicy
        /// The most bytes any file may have, whatever the API or its server claims.
        var maxFileSize: Int64
        /// Write each image's metadata sidecar (see ``MetadataSidecars``).
        var metadata: Bool

        init(
            crawl: TagCrawler.Options, urls: MediaURLBuilder, mode: DownloadMode = RunSettings.Defaults.mode,
            concurrency: Int = RunSettings.Defaults.concurrency, retry: RetryPolicy = RetryPolicy(),
            maxFileSize: Int64 = Downloader.defaultMaxFileSize, metadata: Bool = false
        ) {
            self.maxFileSize = maxFileSize
            self.metadata = metadata
            self.crawl = crawl
            self.urls = urls
            self.mode = mode
            self.concurrency = concurrency
            self.retry = retry
        }
    }

    let client: ImgurClient
    let jobs: JobRunner
    let settings: Settings
    let logger: Logger

    /// With `sharing`, the tag's work is divided with the other workers of a shared state.
    package init(
        directory: MirrorDirectory, client: ImgurClient, engine: TransferEngine, settings: Settings, sharing: Sharing? = nil,
        logger: Logger
    ) throws(MirrorError) {
        self.client = client
        self.settings = settings
        self.logger = logger
        jobs = try JobRunner(
            directory: directory, engine: engine, mode: settings.mode, source: "tag \(settings.crawl.tag)",
            concurrency: settings.concurrency,
            retry: settings.retry, isRemovedPlaceholder: ImgurRemovedMedia.isPlaceholder,
            maxFileSize: settings.maxFileSize, progress: RunProgress(), sharing: sharing, logger: logger)
    }

    package var progress: RunProgress { jobs.progress }
    package var source: String { jobs.source ?? "tag \(settings.crawl.tag)" }

    /// The state database the mirror keeps its cursor and records in.
    package var state: any MirrorState { jobs.state }

    /// Mirrors what this run can: first the images earlier runs found and did not finish, then
    /// the listing from where its cursor stands, each image's files scheduled as soon as it is
    /// found (thumbnails unforced, full-size files forced); in `new-file` mode, then every other
    /// file mirrored before, by a conditional GET. The crawl stops at the API budget, a
    /// cancel, or a media host given up for the run; the next run carries on from there.
    package func run() async -> MirrorSummary {
        let session = jobs.start(source: source)
        let jobs = jobs
        jobs.progress.enter(.crawling)
        let claims = ClaimedImages()
        let coordinator = jobs.coordinator
        let images = ImageCompletion(
            store: jobs.state, session: session, batchSize: coordinator == nil ? 64 : 4,
            beforeMarking: { () throws(MirrorError) in
                // An image marked done is not looked at again: its files' names must be on disk first.
                try await jobs.syncDirectories()
            },
            marked: { ids in ids.forEach { claims.remove($0) } },
            unsettled: { id, outcome in
                // A shared mirror lets go of the image: a failure waits for a later run, a cancel
                // for any worker.
                guard let coordinator else { return }
                claims.remove(id)
                try? await coordinator.release([id], park: outcome.parksClaim)
            })
        var summary = MirrorSummary()
        let problems = Mutex<[String]>([])
        let sidecars = settings.metadata ? MetadataSidecars(directory: jobs.directory) : nil
        /// Writes what the API says of `image` (unless `replacing` is false and there is a
        /// sidecar already); false when the run must stop.
        let describe: @Sendable (ImgurImage, MediaItem, Bool) -> Bool = { image, item, replacing in
            guard let sidecars else { return true }
            do throws(MirrorError) {
                try sidecars.write(image, item: item, replacing: replacing)
            } catch where error.stopsTheRun {
                session.halt(error)
                return false
            } catch {
                problems.withLock { $0.append("metadata of \(image.id): \(error)") }
            }
            return true
        }
        /// Mirrors `found`; `resumed`: found by an earlier run, as the API described them then.
        let submit: @Sendable ([ImgurImage], _ resumed: Bool) async -> Void = { [settings] found, resumed in
            var unusable: [String] = []
            for image in found {
                guard let item = settings.urls.item(for: image) else {
                    problems.withLock { $0.append("skipped image with unusable id '\(image.id)'") }
                    unusable.append(image.id)
                    continue
                }
                guard describe(image, item, !resumed) else { break }
                images.expect(item.id, files: 2)
                if coordinator != nil { claims.insert(image.id, urls: [item.previewURL, item.fullURL]) }
                // Alone, thumbnails wait while full-size files take the bandwidth. Shared, they
                // do not: a thumbnail held behind this worker's large file would strand its claim
                // (and, were the worker killed, be asked for again by another), while the other
                // workers' connections are what a CDN's per-connection limit rewards.
                await session.submit(
                    MirrorJob(url: item.previewURL, relativePath: "preview/\(item.previewFileName)", expectedSize: nil),
                    forced: coordinator != nil, then: { await images.settle(item.id, $0) })
                await session.submit(
                    MirrorJob(url: item.fullURL, relativePath: "full/\(item.fullFileName)", expectedSize: item.expectedSize),
                    forced: true, then: { await images.settle(item.id, $0) })
            }
            // An id that makes no safe file name will not make one next run either.
            do throws(MirrorError) {
                try await jobs.state.markImagesDone(unusable)
            } catch {
                session.halt(error)
            }
        }
        /// Reads the listing from its cursor; `found` hears the images new to the store.
        let readListing: @Sendable (_ found: @escaping @Sendable ([ImgurImage]) async -> Void) async -> TagCrawler.Result = {
            [settings, client, logger] found in
            let health = jobs.health
            let crawler = TagCrawler(client: client, store: jobs.state, progress: jobs.progress, logger: logger)
            if let left = await client.callsLeft() { logger.debug("API budget: \(left) calls may be made before the reset") }
            let crawl = await crawler.crawl(
                settings.crawl, found: found,
                seenAgain: { images in
                    // A page read again says what the API says now: a sidecar follows an edit.
                    for image in images {
                        if let item = settings.urls.item(for: image) { _ = describe(image, item, true) }
                    }
                },
                shouldStop: { !health.verdicts.isEmpty || session.isHalted })
            let calls = await client.callsMade()
            logger.debug("API: \(calls) calls this run, \(crawl.pagesRead) pages, \(crawl.albumsFetched) albums")
            // new-file: what the listing did not bring up again is asked after too.
            if settings.mode == .newFile { jobs.progress.enter(.revalidating) }
            await jobs.revalidateTheRest(in: session, claiming: ["full", "preview"])
            return crawl
        }
        var crawl = TagCrawler.Result()
        do throws(MirrorError) {
            if let saved = try await jobs.state.budget(api: TagCrawler.budgetKey) { await client.adopt(saved) }
            if let coordinator {
                crawl = try await SharedTagWork(
                    coordinator: coordinator, source: source, jobs: jobs, session: session, images: images, claims: claims,
                    logger: logger
                ).run(readListing: readListing, submit: { await submit($0, true) })
            } else {
                // What earlier runs found and did not finish comes first, a page at a time.
                var position: Int64? = 0
                while let after = position, !Task.isCancelled, !session.isHalted {
                    let pending = try await jobs.state.pendingImages(after: after, limit: 1000)
                    if after == 0, !pending.images.isEmpty { logger.info("resuming images found by earlier runs") }
                    await submit(pending.images, true)
                    position = pending.next
                }
                crawl = await readListing { await submit($0, false) }
            }
        } catch {
            crawl.stoppedBy = .mirror(error)
        }
        jobs.progress.enter(.downloading)
        await session.finish(into: &summary)
        jobs.progress.enter(.finished)
        await images.flush()
        if let failure = images.failure {
            // The last batch is marked after the session's outcomes are counted.
            summary.interrupted = true
            summary.stoppedBy = summary.stoppedBy ?? .mirror(failure)
        }
        summary.problems = problems.withLock { $0 } + crawl.problems
        summary.removedAlbums = crawl.removedAlbums
        // A halted session's error (a full disk) comes first: it is why the crawl stopped.
        summary.stoppedBy = summary.stoppedBy ?? crawl.stoppedBy
        summary.unavailableHosts = jobs.health.verdicts
        if let cursor = crawl.cursor {
            summary.listing = ListingProgress(
                pagesRead: crawl.pagesRead, nextPage: cursor.nextPage, estimatedPages: cursor.estimatedPages)
        }
        // What stopped the crawl before a cancel still counts (the crawler records no error a
        // cancel caused): an auth failure or a full disk must not pass for a clean deadline stop.
        if Task.isCancelled { summary.interrupted = true }
        return summary
    }
}

/// Counts each image's settled files, and marks the image done in the store once both its
/// thumbnail and its full-size file are in the mirror (or removed upstream), in batches; an image
/// with a file not settled goes to `unsettled` (a shared mirror lets go of its claim).
final class ImageCompletion: Sendable {
    private struct State {
        var remaining: [String: Int] = [:]
        var unsettled: [String: JobRunner.Outcome] = [:]
        var done: [String] = []
        var failure: MirrorError?
    }

    private let store: any CrawlStore
    private let session: JobSession
    private let batchSize: Int
    private let beforeMarking: @Sendable () async throws(MirrorError) -> Void
    private let unsettled: @Sendable (String, JobRunner.Outcome) async -> Void
    private let marked: @Sendable ([String]) -> Void
    private let state = Mutex(State())

    init(
        store: any CrawlStore, session: JobSession, batchSize: Int = 64,
        beforeMarking: @escaping @Sendable () async throws(MirrorError) -> Void,
        marked: @escaping @Sendable ([String]) -> Void = { _ in },
        unsettled: @escaping @Sendable (String, JobRunner.Outcome) async -> Void = { _, _ in }
    ) {
        self.marked = marked
        self.store = store
        self.session = session
        self.batchSize = batchSize
        self.beforeMarking = beforeMarking
        self.unsettled = unsettled
    }

    /// Images with a file still to settle.
    var inFlight: Int { state.withLock { $0.remaining.count } }

    func expect(_ id: String, files: Int) {
        state.withLock { $0.remaining[id, default: 0] += files }
    }

    func settle(_ id: String, _ outcome: JobRunner.Outcome) async {
        let (batch, left): ([String]?, JobRunner.Outcome?) = state.withLock { state in
            if !outcome.isSettled, state.unsettled[id] == nil { state.unsettled[id] = outcome }
            state.remaining[id, default: 1] -= 1
            guard state.remaining[id] == 0 else { return (nil, nil) }
            state.remaining[id] = nil
            if let left = state.unsettled.removeValue(forKey: id) { return (nil, left) }
            state.done.append(id)
            guard state.done.count >= batchSize else { return (nil, nil) }
            defer { state.done = [] }
            return (state.done, nil)
        }
        if let left { await unsettled(id, left) }
        if let batch { await write(batch) }
    }

    /// The first write that failed: it stopped the run.
    var failure: MirrorError? { state.withLock { $0.failure } }

    func flush() async {
        let batch = state.withLock { state in
            defer { state.done = [] }
            return state.done
        }
        await write(batch)
    }

    private func write(_ batch: [String]) async {
        guard !batch.isEmpty else { return }
        do throws(MirrorError) {
            try await beforeMarking()
            try await store.markImagesDone(batch)
            marked(batch)
        } catch {
            // The files are in the mirror, and the next run finds them there and settles them
            // again; but a state database or disk that takes no writes would fail every file after.
            state.withLock { $0.failure = $0.failure ?? error }
            session.halt(error)
        }
    }
}
