import FoundationEssentials
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
struct TagCrawler: Sendable {
    struct Options: Sendable {
        var tag: String
        var sort: GallerySort
        var window: GalleryWindow
        /// Treat the listing as ending after this many pages; nil reads to its end.
        var maxPages: Int?
        /// Treat a newest-first listing as ending at the first page posted wholly before this
        /// (`--since`): what lies below is older still.
        var since: Date?

        init(tag: String, sort: GallerySort = .time, window: GalleryWindow = .all, maxPages: Int? = nil, since: Date? = nil) {
            self.since = since
            self.tag = tag
            self.sort = sort
            self.window = window
            self.maxPages = maxPages
        }

        /// The key of this listing's cursor and entries in the store. A crawl that stops at
        /// `--since` keeps its own: it must neither close nor take over a pass that a run without
        /// the bound left open deep in the listing (that run carries on there), and what it saw
        /// vouches for nothing below its bound.
        var source: String { unboundedSource + (isDateBounded ? " since" : "") }

        /// The key of the same listing crawled without a bound.
        var unboundedSource: String { Self.keyPrefix(of: tag) + "\(sort.rawValue) \(window.rawValue)" }

        /// The start of the key of every listing of `tag`, whatever its order.
        static func keyPrefix(of tag: String) -> String { "imgur tag \(tag) " }

        /// The tag a listing's key names (`cats` of `imgur tag cats time all`); tags have no spaces.
        static func tag(ofKey key: String) -> String? {
            guard key.hasPrefix("imgur tag ") else { return nil }
            return key.dropFirst("imgur tag ".count).split(separator: " ").first.map(String.init)
        }

        /// The crawl ends at `since`: the listing is newest first.
        var isDateBounded: Bool { since != nil && sort == .time }
    }

    /// What a crawl did this run, and what went wrong on the way.
    struct Report: Sendable {
        var pagesRead = 0
        var albumsFetched = 0
        /// Albums or images that could not be listed; the crawl went on without them.
        var problems: [String] = []
        /// Albums the API no longer has (404, 410): reported once, not asked for again.
        var removedAlbums: [String] = []
        /// The error that stopped the listing early, if one did: the next run carries on.
        var stoppedBy: RunStopReason?
        /// The cursor as this run left it.
        var cursor: CrawlCursor?
        /// Albums that failed this run, not yet counted against them.
        var albumFailures: [(id: String, problem: String)] = []
        /// Some API call answered this run (a page, an album).
        var apiAnswered = false
        /// The entries of the page just recorded that earlier pages or runs had recorded.
        var lastKnown: Set<String> = []
    }

    /// The API whose budget the store keeps for this crawler.
    static let budgetKey = "imgur"
    /// Runs in which an album may fail on its own before it is given up.
    static let albumAttempts = 3
    /// Pages in a row that show only entries this run's last pages showed (``RecentEntries``)
    /// before the listing is taken to repeat itself.
    static let repeatedPagesToStop = 3

    let client: ImgurClient
    let store: ImgurCrawlStore
    /// Which images the run would fetch (its filters): an unfinished image another tag holds is
    /// taken over only then (see ``Lister``).
    let takes: @Sendable (ImgurImage) -> Bool
    let logger: Logger
    /// Hears the crawl's page and budget as it goes.
    let report: @Sendable (RunEvent) -> Void

    init(
        client: ImgurClient, store: any CrawlStore, report: @escaping @Sendable (RunEvent) -> Void = { _ in },
        takes: @escaping @Sendable (ImgurImage) -> Bool = { _ in true }, logger: Logger
    ) {
        self.takes = takes
        self.client = client
        self.store = ImgurCrawlStore(store)
        self.report = report
        self.logger = logger
    }

    /// Reads what this run may of the listing. `found` gets each batch of images this listing
    /// now holds unfinished (new to the store, or taken over) as soon as they are recorded; `shouldStop` is asked before every API call.
    ///
    /// `seenAgain` gets the images of entries earlier runs recorded when a page shows them again,
    /// as the API describes them now.
    func crawl(
        _ options: Options,
        found: @Sendable ([ImgurImage]) async -> Void,
        seenAgain: @Sendable ([ImgurImage]) async -> Void = { _ in },
        shouldStop: @Sendable () -> Bool = { false }
    ) async -> Report {
        var result = Report()
        var cursor = CrawlCursor(source: options.source)
        do throws(MirrorError) {
            cursor = try await store.cursor(for: options.source)
            try await walk(options, cursor: &cursor, found: found, seenAgain: seenAgain, shouldStop: shouldStop, into: &result)
            try await settleAlbumFailures(&result, source: options.source)
        } catch {
            result.stoppedBy = .mirror(error)
        }
        // A tag that does not exist has no place to carry on from.
        result.cursor = result.stoppedBy?.namesNoSource == true ? nil : cursor
        return result
    }

    private func walk(
        _ options: Options, cursor: inout CrawlCursor, found: @Sendable ([ImgurImage]) async -> Void,
        seenAgain: @Sendable ([ImgurImage]) async -> Void, shouldStop: @Sendable () -> Bool, into result: inout Report
    ) async throws(MirrorError) {
        let source = options.source
        func mayGoOn() -> Bool { !shouldStop() && !Task.isCancelled }
        var tried: Set<String> = []
        /// Expands the albums still pending (each once a run); false when the crawl must stop. An
        /// album that fails in a way that may be the API's (no answer, a 5xx, a 401 or 403) ends
        /// the batch: the next page read tells whether the API is at fault.
        func expandPending() async throws(MirrorError) -> Bool {
            // This tag's albums, and those another tag holds that this listing has shown: their
            // images are queued for whoever holds them, taken over where this run wants them.
            let pending = try await store.pendingAlbums(of: options.tag, orShownBy: [options.source, options.unboundedSource])
            for (albumID, holder) in pending where tried.insert(albumID).inserted {
                guard mayGoOn() else { return false }
                // Every image of an album posted before --since would be left out: no call for it.
                if let since = options.since, let posted = try await store.albumContext(albumID)?.postDate, posted < since {
                    continue
                }
                switch try await expand(albumID, holder: holder, for: source, found: found, into: &result) {
                case .expanded, .failedAlone: continue
                case .failedMaybeAPIWide: return true
                case .stop: return false
                }
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
        // What this run's last pages showed, and the first of the pages in a row since that
        // showed nothing else.
        var recentlyShown = RecentEntries()
        var repeatingSince: Int?
        while mayGoOn() {
            if let maxPages = options.maxPages, page >= maxPages {
                try await completePass(&cursor, reachedEnd: false, of: options)
                return
            }
            report(.crawlPage(page, estimatedPages: cursor.estimatedPages))
            let listing: TagPage
            do {
                listing = try await client.tagListing(options.tag, sort: options.sort, window: options.window, page: page)
            } catch {
                if page == 0, error.status == 404 {
                    // The API knows no such tag: a typo, most likely, and nothing to carry on with.
                    result.stoppedBy = .listing(ListingFailure(.notFound, NoSuchTag(tag: options.tag)))
                } else if !Task.isCancelled {
                    result.stoppedBy = .api(error)
                }
                try await saveBudget()
                return
            }
            result.apiAnswered = true
            try await saveBudget()
            if listing.items.isEmpty {
                let confirmed = cursor.suspectedEnd.map { page >= $0 } ?? false
                if !confirmed, Self.endLooksEarly(page: page, stated: listing.totalItems, cursor: cursor) {
                    // A glitch would otherwise end the pass for good: everything below it would
                    // never be read. Believe it when a later run sees the same.
                    cursor.suspectedEnd = page
                    try await store.saveCursor(cursor)
                    logger.warning("\(source): page \(page) came back empty, short of the \(cursor.totalItems ?? 0) entries the tag has; the next run asks again")
                    return
                }
                try await completePass(&cursor, reachedEnd: true, of: options)
                return
            }
            result.pagesRead += 1
            report(.pagesRead(result.pagesRead))
            if options.isDateBounded, let since = options.since, Self.isWhollyBefore(since, listing) {
                // Like --pages, the pass ends short of the listing's end: a later run without the
                // bound reads on below it. Nothing of this page is recorded or asked for.
                logger.debug("\(source): page \(page) was all posted before \(since.formatted(.iso8601)): the pass ends there")
                try await completePass(&cursor, reachedEnd: false, of: options)
                return
            }
            let showsSomethingNew = recentlyShown.remember(listing.items.lazy.map(\.id))
            repeatingSince = showsSomethingNew ? nil : repeatingSince ?? page
            if let repeatingSince, page - repeatingSince + 1 >= Self.repeatedPagesToStop {
                // A server that answers one page for every number would be asked until the budget
                // or the deadline ends the run, every run: the cursor stays where the repeat began.
                cursor.nextPage = repeatingSince
                try await store.saveCursor(cursor)
                result.stoppedBy = .listing(ListingFailure(.badData, RepeatingListing(tag: options.tag, fromPage: repeatingSince)))
                return
            }
            let reachedKnown = try await record(listing, page: page, options: options, cursor: &cursor, found: found, into: &result)
            await seenAgain(Self.imagesOfKnownEntries(listing, known: result.lastKnown))
            guard try await expandPending() else { return }
            if reachedKnown {
                logger.debug("\(source): page \(page) shows entries an earlier pass saw: the pass is complete")
                try await completePass(&cursor, reachedEnd: true, of: options)
                return
            }
            page += 1
        }
    }

    /// Counts this run's album failures against their albums, but only when the API answered
    /// other calls meanwhile: in an outage every album fails, and none of them is at fault. An
    /// album that failed on its own in ``albumAttempts`` runs is given up and reported once.
    private func settleAlbumFailures(_ result: inout Report, source: String) async throws(MirrorError) {
        guard result.apiAnswered else { return }
        for (albumID, problem) in result.albumFailures {
            let failures = try await store.recordAlbumFailure(albumID, problem: problem)
            if failures >= Self.albumAttempts {
                try await store.recordAlbumGone(albumID, problem: problem, source: source)
                result.problems.append("album \(albumID): \(problem) (in \(failures) runs; not asked for again)")
            } else {
                logger.warning("album \(albumID): \(problem); the next run asks again")
            }
        }
        result.albumFailures = []
    }

    /// Records one page's new entries with the cursor past it; true when the page shows an entry
    /// that the last full pass (or one before it) saw: in a newest-first listing, everything below
    /// it is known.
    private func record(
        _ listing: TagPage, page: Int, options: Options, cursor: inout CrawlCursor,
        found: @Sendable ([ImgurImage]) async -> Void, into result: inout Report
    ) async throws(MirrorError) -> Bool {
        let source = options.source
        let known = try await store.knownEntries(listing.items.map(\.id), source: source)
        result.lastKnown = Set(known.keys)
        var newEntries: [String] = []
        var images: [(image: ImgurImage, albumID: String?)] = []
        var pendingAlbums: [String] = []
        var contexts: [String: ImgurAlbumContext] = [:]
        for entry in listing.items where known[entry.id] == nil && !newEntries.contains(entry.id) {
            // A bounded crawl leaves what was posted before its bound to the runs without one.
            if options.isDateBounded, let since = options.since, let posted = entry.postDate, posted < since { continue }
            newEntries.append(entry.id)
            switch entry {
            case .image(let image):
                images.append((image, nil))
            case .album(let album):
                let context = album.context
                if let embedded = album.completeImages {
                    images += embedded.map { ($0.inAlbum(context), album.id) }
                } else if let cached = try await store.cachedAlbum(album.id) {
                    images += cached.map { ($0.inAlbum(context), album.id) }
                } else {
                    // What the page does embed is queued now: the album may be gone by the time it is asked for.
                    images += (album.images ?? []).map { ($0.inAlbum(context), album.id) }
                    pendingAlbums.append(album.id)
                    contexts[album.id] = context
                }
            }
        }
        if page == 0 {
            cursor.headID = listing.items.first?.id
            cursor.pageSize = listing.items.count
        }
        cursor.totalItems = listing.totalItems ?? cursor.totalItems
        // Entries never seen where an empty page was: that was a glitch, not the end. (Entries
        // seen before are the listing moving down, and say nothing of it.)
        if !newEntries.isEmpty, let suspected = cursor.suspectedEnd, page >= suspected { cursor.suspectedEnd = nil }
        cursor.nextPage = page + 1
        cursor.pagesRead += 1
        let added = try await store.recordPage(
            newEntryIDs: newEntries, images: images, pendingAlbumIDs: pendingAlbums, pendingAlbumContexts: contexts,
            cursor: cursor, source: source, wants: Set(images.map(\.image).filter(takes).map(\.id)))
        logger.debug("\(source) page \(page): \(listing.items.count) entries, \(newEntries.count) new, \(added.count) images queued")
        if !added.isEmpty { await found(added) }
        guard options.sort == .time else { return false }
        if options.isDateBounded {
            // A full pass without the bound vouches for all below what it saw; a bounded pass, which
            // records nothing older than its bound, vouches for nothing.
            guard let full = try await store.cursor(for: options.unboundedSource).lastFullPass else { return false }
            let seen = try await store.knownEntries(listing.items.map(\.id), source: options.unboundedSource)
            return seen.values.contains { $0 <= full }
        }
        guard let full = cursor.lastFullPass else { return false }
        return known.values.contains { $0 <= full }
    }

    private enum Expansion {
        case expanded
        /// The album's own trouble (a body of the wrong shape): the crawl goes on.
        case failedAlone
        /// Perhaps the API's trouble: the crawl goes on to a page, which tells.
        case failedMaybeAPIWide
        /// The budget is spent, the API limits us, or the run was cancelled.
        case stop
    }

    /// Fetches one album's images. An album that fails stays pending (see ``settleAlbumFailures(_:source:)``).
    private func expand(
        _ albumID: String, holder: String, for source: String, found: @Sendable ([ImgurImage]) async -> Void,
        into result: inout Report
    ) async throws(MirrorError) -> Expansion {
        let context = try await store.albumContext(albumID) ?? ImgurAlbumContext(id: albumID)
        // Failures count against an album in its holder's runs only: every tag that shows it may
        // try it, but one bad run must not give it up once per tag.
        let holdsIt = TagCrawler.Options.tag(ofKey: holder) == TagCrawler.Options.tag(ofKey: source)
        func record(_ images: [ImgurImage]) async throws(MirrorError) {
            let images = images.map { $0.inAlbum(context) }
            let added = try await store.recordAlbum(
                albumID, images: images, holder: holder, listing: source, wants: Set(images.filter(takes).map(\.id)))
            if !added.isEmpty { await found(added) }
        }
        if let cached = try await store.cachedAlbum(albumID) {
            try await record(cached)
            return .expanded
        }
        let images: [ImgurImage]
        do {
            images = try await client.albumImages(albumID)
        } catch {
            try await saveBudget()
            // A cancel ends the wait for an answer, not the album: it stays pending.
            guard !Task.isCancelled else { return .stop }
            switch error.kind {
            case .status(404), .status(410):
                result.apiAnswered = true
                try await store.recordAlbumGone(albumID, problem: error.message, source: holder)
                result.removedAlbums.append(albumID)
                return .expanded
            case .rateLimited where error.isAPIWide:
                result.stoppedBy = .api(error)
                return .stop
            case .malformedResponse:
                result.apiAnswered = true
                if holdsIt { result.albumFailures.append((albumID, Self.albumProblem(error))) }
                return .failedAlone
            default:
                if holdsIt { result.albumFailures.append((albumID, Self.albumProblem(error))) }
                return .failedMaybeAPIWide
            }
        }
        result.apiAnswered = true
        result.albumsFetched += 1
        try await saveBudget()
        try await record(images)
        return .expanded
    }

    /// Every entry of `listing` was posted before `date` (an entry without a date may be newer).
    static func isWhollyBefore(_ date: Date, _ listing: TagPage) -> Bool {
        listing.items.allSatisfy { entry in entry.postDate.map { $0 < date } ?? false }
    }

    /// The images a page shows of entries recorded before: an image entry, or an album's embedded images.
    static func imagesOfKnownEntries(_ listing: TagPage, known: Set<String>) -> [ImgurImage] {
        listing.items.filter { known.contains($0.id) }.flatMap { entry -> [ImgurImage] in
            switch entry {
            case .image(let image): [image]
            case .album(let album): (album.images ?? []).map { $0.inAlbum(album.context) }
            }
        }
    }

    /// An empty page at least a page short of the listing's size, as the empty page itself (else
    /// page 0) states it. A second run in a row that ends on an empty page at or past the one
    /// suspected confirms the end (new posts may have pushed it down meanwhile).
    static func endLooksEarly(page: Int, stated: Int?, cursor: CrawlCursor) -> Bool {
        // The larger of the two: an empty page stating a small total is no proof of the end.
        guard let total = [stated, cursor.totalItems].compactMap({ $0 }).max(), let size = cursor.pageSize, size > 0
        else { return false }
        return (page + 1) * size < total
    }

    /// What went wrong with an album, in a few words (the album is named by the caller).
    static func albumProblem(_ error: ImgurError) -> String {
        switch error.kind {
        case .status(let status): "HTTP \(status): \(error.message)"
        case .rateLimited: "HTTP \(error.lastStatus ?? 0) on every attempt: \(error.message)"
        case .malformedResponse: "unexpected response: \(error.message)"
        case .unreachable: "no answer: \(error.message)"
        }
    }

    /// Closes the open pass. `reachedEnd`: it read down to the listing's end (or to what a pass that
    /// did saw), not only to `--pages`; only then may a later pass stop at what this one saw.
    private func completePass(_ cursor: inout CrawlCursor, reachedEnd: Bool, of options: Options) async throws(MirrorError) {
        // A pass cut off by --pages leaves a gap below it: a later pass reads on past what this
        // one saw, down to what the last full pass saw. A --since pass skipped what was older
        // than its bound: it is never a full one.
        if reachedEnd, !options.isDateBounded { cursor.lastFullPass = cursor.pass }
        cursor.suspectedEnd = nil
        cursor.pass += 1
        cursor.nextPage = nil
        try await store.saveCursor(cursor)
    }

    private func saveBudget() async throws(MirrorError) {
        let budget = await client.budget()
        let calls = await client.callsMade()
        report(.apiCalls(made: calls, left: budget.userRemaining))
        try await store.saveBudget(budget, api: Self.budgetKey)
    }
}

/// The API has no tag of this name (its listing answers 404).
struct NoSuchTag: Error, Sendable, CustomStringConvertible {
    var tag: String

    var description: String { "no such tag: \(tag)" }
}

/// The API answered pages that show only what earlier pages of this run showed: a listing that
/// repeats itself rather than going on.
struct RepeatingListing: Error, Sendable, CustomStringConvertible {
    var tag: String
    var fromPage: Int

    var description: String { "the listing of tag \(tag) repeats from page \(fromPage): stopped there" }
}
