import Logging

/// A tag's gallery as a source: first the images earlier runs found and did not finish, then the
/// listing from where its cursor stands (see ``TagCrawler``), each image submitted as soon as it
/// is found; in `new-file` mode, then every other file the tag mirrored before. The crawl stops at
/// the API budget, a cancel, or a media host given up for the run; the next run carries on.
package struct TagSource: MirrorSource {
    let client: ImgurClient
    let options: TagCrawler.Options
    let urls: MediaURLBuilder
    /// Which images the run takes (`--filter`, `--since`, `--until`).
    let filter: MediaFilter
    let logger: Logger
    /// What a shared worker's polls and heartbeat wait on.
    let clock: any RunClock

    init(
        client: ImgurClient, options: TagCrawler.Options, urls: MediaURLBuilder, filter: MediaFilter = MediaFilter(),
        clock: any RunClock = SystemClock(), logger: Logger
    ) {
        self.filter = filter
        self.clock = clock
        self.client = client
        self.options = options
        self.urls = urls
        self.logger = logger
    }

    package var name: String { "tag \(options.tag)" }

    package func list(into sink: SourceSink) async -> SourceListing {
        sink.publish(.phase(.crawling))
        let coordinator = sink.coordinator
        let claims = coordinator.map { _ in ClaimedImages() }
        let groups = sink.groups(
            batchSize: coordinator == nil ? 64 : 4,
            marked: { ids in ids.forEach { claims?.remove($0) } },
            unsettled: { id, outcome in
                // A shared mirror lets go of the image: a failure waits for a later run, a cancel
                // for any worker.
                guard let coordinator else { return }
                claims?.remove(id)
                try? await coordinator.release([id], park: outcome.parksClaim)
            })
        let images = ImageJobs(sink: sink, urls: urls, groups: groups, claims: claims, filter: filter)
        var listing = SourceListing()
        listing.groups = groups
        var crawl = TagCrawler.Report()
        do throws(MirrorError) {
            if let saved = try await sink.store.budget(api: TagCrawler.budgetKey) { await client.adopt(saved) }
            if let coordinator, let claims {
                crawl = try await SharedTagWork(
                    coordinator: coordinator, source: name, jobs: sink.runner, session: sink.session, images: groups,
                    claims: claims, clock: clock, logger: logger
                ).run(readListing: { found in
                    // The budget as the group's last worker left it: it may have crawled since this one started.
                    if let saved = try? await sink.store.budget(api: TagCrawler.budgetKey) { await client.adopt(saved) }
                    return await readListing(sink, images, found: found)
                }, submit: {
                    // Shared workers take no filters: every image is every worker's.
                    await images.submit($0, resumed: true)
                })
            } else {
                // What earlier runs of this tag found and did not finish comes first, a page at a
                // time. Another tag's unfinished images are its runs' (its settings, its filter,
                // its failures to retry), unless this tag's listing shows one it wants (see ``Lister``).
                var position: Int64? = 0
                while let after = position, !Task.isCancelled, !sink.isHalted {
                    let pending = try await ImgurCrawlStore(sink.store).pendingImages(of: options.tag, after: after, limit: 1000)
                    if after == 0, !pending.images.isEmpty { logger.info("resuming images found by earlier runs") }
                    await images.submit(pending.images, resumed: true)
                    position = pending.next
                }
                crawl = await readListing(sink, images) { await images.submit($0, resumed: false) }
            }
        } catch {
            crawl.stoppedBy = .mirror(error)
        }
        listing.problems = crawl.problems
        listing.removedAlbums = crawl.removedAlbums
        listing.stoppedBy = crawl.stoppedBy
        if let cursor = crawl.cursor {
            listing.listing = ListingProgress(
                pagesRead: crawl.pagesRead, nextPage: cursor.nextPage, estimatedPages: cursor.estimatedPages)
        }
        return listing
    }

    /// Reads the listing from its cursor; `found` hears the images new to the store. Then asks
    /// after what the listing did not bring up again (see ``SourceSink/revalidateTheRest(claiming:restoring:)``).
    private func readListing(
        _ sink: SourceSink, _ images: ImageJobs, found: @escaping @Sendable ([ImgurImage]) async -> Void
    ) async -> TagCrawler.Report {
        let crawler = TagCrawler(
            client: client, store: sink.store, report: { sink.publish($0) }, takes: { images.admits($0) }, logger: logger)
        if let left = await client.callsLeft() { logger.debug("API budget: \(left) calls may be made before the reset") }
        let crawl = await crawler.crawl(
            options, found: found,
            seenAgain: { seen in
                // A page read again says what the API says now: a sidecar follows an edit. An image
                // the filters leave out gets none, unless a wider run mirrored it before.
                for image in seen where images.admits(image) || images.hasSidecar(image) {
                    _ = images.describe(image, replacing: true)
                }
            },
            shouldStop: { sink.shouldStop })
        let calls = await client.callsMade()
        logger.debug("API: \(calls) calls this run, \(crawl.pagesRead) pages, \(crawl.albumsFetched) albums")
        // A tag that does not exist takes no files (an upgraded mirror's unclaimed ones stay for
        // the real tag), and restores none.
        if crawl.stoppedBy?.namesNoSource != true {
            await sink.revalidateTheRest(claiming: ["full", "preview"], restoring: urls.makes)
        }
        return crawl
    }
}
