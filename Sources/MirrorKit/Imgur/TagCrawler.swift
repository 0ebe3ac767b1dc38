import Logging

/// Walks a tag's gallery page by page, carrying on across runs from a cursor, and hands on every
/// image it finds, albums expanded, as soon as it has it.
///
/// A tag larger than one hour of Imgur's API budget is read over several runs: each run resumes
/// the pass where the last one stopped (re-reading the page before, so that entries pushed down
/// or pulled up by changes to the listing meanwhile are not skipped), asks for albums left
/// unexpanded first, and never asks for an album twice: its image list is cached. Once a pass of
/// a newest-first (`time`) listing has completed, later passes stop at the first page that shows
/// an entry an earlier pass saw. A source: it writes the ``CrawlStore``, never the mirror's files.
public struct TagCrawler: Sendable {
    public struct Options: Sendable {
        public var tag: String
        public var sort: GallerySort
        public var window: GalleryWindow
        /// Treat the listing as ending after this many pages; nil reads to its end.
        public var maxPages: Int?

        public init(tag: String, sort: GallerySort = .time, window: GalleryWindow = .all, maxPages: Int? = nil) {
            self.tag = tag
            self.sort = sort
            self.window = window
            self.maxPages = maxPages
        }

        /// The key of this listing's cursor and entries in the store.
        public var source: String { "imgur tag \(tag) \(sort.rawValue) \(window.rawValue)" }
    }

    /// What a crawl did this run, and what went wrong on the way.
    public struct Result: Sendable {
        public var pagesRead = 0
        public var albumsFetched = 0
        /// Albums or images that could not be listed; the crawl went on without them.
        public var problems: [String] = []
        /// Albums the API no longer has (404, 410): reported once, not asked for again.
        public var removedAlbums: [String] = []
        /// The error that stopped the listing early, if one did: the next run carries on.
        public var stoppedBy: (any Error & Sendable)?
        /// This run completed a pass (the listing was read to its end or to what an earlier pass saw).
        public var completedPass = false
        /// The cursor as this run left it.
        public var cursor: CrawlCursor?
    }

    /// The API whose budget the store keeps for this crawler.
    static let budgetKey = "imgur"
    /// Runs in which an album may fail on its own before it is given up.
    static let albumAttempts = 3

    let client: ImgurClient
    let store: any CrawlStore
    let logger: Logger

    public init(client: ImgurClient, store: any CrawlStore, logger: Logger) {
        self.client = client
        self.store = store
        self.logger = logger
    }

    /// Reads what this run may of the listing. `found` gets each batch of images new to the
    /// store as soon as they are recorded; `shouldStop` is asked before every API call.
    public func crawl(
        _ options: Options,
        found: @Sendable ([ImgurImage]) async -> Void,
        shouldStop: @Sendable () -> Bool = { false }
    ) async -> Result {
        var result = Result()
        var cursor = CrawlCursor(source: options.source)
        do throws(MirrorError) {
            cursor = try await store.cursor(for: options.source)
            try await walk(options, cursor: &cursor, found: found, shouldStop: shouldStop, into: &result)
        } catch {
            result.stoppedBy = error
        }
        result.cursor = cursor
        return result
    }

    private func walk(
        _ options: Options, cursor: inout CrawlCursor, found: @Sendable ([ImgurImage]) async -> Void,
        shouldStop: @Sendable () -> Bool, into result: inout Result
    ) async throws(MirrorError) {
        let source = options.source
        func mayGoOn() -> Bool { !shouldStop() && !Task.isCancelled }
        var tried: Set<String> = []
        /// Expands the albums still pending (each once a run); false when the crawl must stop.
        func expandPending() async throws(MirrorError) -> Bool {
            for albumID in try await store.pendingAlbums() where tried.insert(albumID).inserted {
                guard mayGoOn(), try await expand(albumID, source: source, found: found, into: &result) else { return false }
            }
            return true
        }
        // Albums an earlier run found but could not expand come first: they are older.
        guard try await expandPending() else { return }
        var page: Int
        if let next = cursor.nextPage {
            // One page back: entries that moved across the boundary since are read, not skipped.
            page = max(next - 1, 0)
            logger.debug("\(source): pass \(cursor.pass + 1) resumes at page \(page)")
        } else {
            page = 0
            cursor.nextPage = 0
            logger.debug("\(source): pass \(cursor.pass + 1) starts at page 0")
        }
        while mayGoOn() {
            if let maxPages = options.maxPages, page >= maxPages {
                try await completePass(&cursor, reachedEnd: false, result: &result)
                return
            }
            let listing: TagPage
            do {
                listing = try await client.tagListing(options.tag, sort: options.sort, window: options.window, page: page)
            } catch {
                if !Task.isCancelled { result.stoppedBy = error }
                try await saveBudget()
                return
            }
            try await saveBudget()
            if listing.items.isEmpty {
                try await completePass(&cursor, reachedEnd: true, result: &result)
                return
            }
            result.pagesRead += 1
            let reachedKnown = try await record(listing, page: page, options: options, cursor: &cursor, found: found, into: &result)
            guard try await expandPending() else { return }
            if reachedKnown {
                logger.debug("\(source): page \(page) shows entries an earlier pass saw: the pass is complete")
                try await completePass(&cursor, reachedEnd: true, result: &result)
                return
            }
            page += 1
        }
    }

    /// Records one page's new entries with the cursor past it; true when the page shows an entry
    /// an earlier, completed pass saw and a pass has read to the end (in a newest-first listing,
    /// everything below is then known).
    private func record(
        _ listing: TagPage, page: Int, options: Options, cursor: inout CrawlCursor,
        found: @Sendable ([ImgurImage]) async -> Void, into result: inout Result
    ) async throws(MirrorError) -> Bool {
        let source = options.source
        let known = try await store.knownEntries(listing.items.map(\.id), source: source)
        var newEntries: [String] = []
        var images: [(image: ImgurImage, albumID: String?)] = []
        var pendingAlbums: [String] = []
        for entry in listing.items where known[entry.id] == nil && !newEntries.contains(entry.id) {
            newEntries.append(entry.id)
            switch entry {
            case .image(let image):
                images.append((image, nil))
            case .album(let album):
                if let embedded = album.completeImages {
                    images += embedded.map { ($0, album.id) }
                } else if let cached = try await store.cachedAlbum(album.id) {
                    images += cached.map { ($0, album.id) }
                } else {
                    // What the page does embed is queued now: the album may be gone by the time it is asked for.
                    images += (album.images ?? []).map { ($0, album.id) }
                    pendingAlbums.append(album.id)
                }
            }
        }
        if page == 0 {
            cursor.headID = listing.items.first?.id
            cursor.pageSize = listing.items.count
        }
        cursor.totalItems = listing.totalItems ?? cursor.totalItems
        cursor.nextPage = page + 1
        cursor.pagesRead += 1
        let added = try await store.recordPage(
            ListedPage(newEntryIDs: newEntries, images: images, pendingAlbumIDs: pendingAlbums, cursor: cursor),
            source: source)
        logger.debug("\(source) page \(page): \(listing.items.count) entries, \(newEntries.count) new, \(added.count) images queued")
        if !added.isEmpty { await found(added) }
        let pass = cursor.pass
        return options.sort == .time && cursor.reachedEnd && known.values.contains { $0 < pass }
    }

    /// Fetches one album's images; false when the crawl must stop (the album stays pending).
    private func expand(
        _ albumID: String, source: String, found: @Sendable ([ImgurImage]) async -> Void, into result: inout Result
    ) async throws(MirrorError) -> Bool {
        if let cached = try await store.cachedAlbum(albumID) {
            let added = try await store.recordAlbum(albumID, images: cached, source: source)
            if !added.isEmpty { await found(added) }
            return true
        }
        let images: [ImgurImage]
        do {
            images = try await client.albumImages(albumID)
        } catch {
            try await saveBudget()
            // A cancel ends the wait for an answer, not the album: it stays pending.
            guard !Task.isCancelled else { return false }
            switch error.kind {
            case .status(404), .status(410):
                try await store.recordAlbumGone(albumID, problem: error.message, source: source)
                result.removedAlbums.append(albumID)
                return true
            case .status(401), .status(403), .unreachable:
                // Not this album's fault: every call would fare the same.
                result.stoppedBy = error
                return false
            case .rateLimited where error.isAPIWide:
                result.stoppedBy = error
                return false
            default:
                // This album's own trouble (a 5xx that outlasted the retries, a body of the wrong
                // shape): it stays pending for a few runs, then is given up and reported once.
                let failures = try await store.recordAlbumFailure(albumID, problem: "\(error)")
                if failures >= Self.albumAttempts {
                    try await store.recordAlbumGone(albumID, problem: "\(error)", source: source)
                    result.problems.append("album \(albumID): \(error) (\(failures) runs in a row; not asked for again)")
                } else {
                    logger.warning("album \(albumID): \(error); the next run asks again")
                }
                return true
            }
        }
        result.albumsFetched += 1
        try await saveBudget()
        let added = try await store.recordAlbum(albumID, images: images, source: source)
        if !added.isEmpty { await found(added) }
        return true
    }

    /// Closes the open pass. `reachedEnd`: it read down to the listing's end (or to what a pass that
    /// did saw), not only to `--pages`; only then may a later pass stop at what this one saw.
    private func completePass(_ cursor: inout CrawlCursor, reachedEnd: Bool, result: inout Result) async throws(MirrorError) {
        // A pass cut off by --pages leaves a gap below it that a later, longer pass must read.
        cursor.reachedEnd = reachedEnd
        cursor.pass += 1
        cursor.nextPage = nil
        try await store.saveCursor(cursor)
        result.completedPass = true
    }

    private func saveBudget() async throws(MirrorError) {
        try await store.saveBudget(await client.budget(), api: Self.budgetKey)
    }
}
