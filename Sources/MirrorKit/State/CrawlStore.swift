import FoundationEssentials

/// Where a listing's crawl stands between runs.
///
/// A *pass* reads the listing from page 0 down: to its end, or (newest-first listings, once a pass
/// has completed) to the first page that shows an entry an earlier pass saw, since everything
/// below it is older. A pass cut short (the API budget, a signal, a deadline, an error) resumes at
/// ``nextPage`` in the next run.
package struct CrawlCursor: Sendable, Equatable, Codable {
    package var source: String
    /// Passes completed so far; the open pass, if any, is number `pass`.
    package var pass: Int
    /// The next page of the open pass; nil when no pass is open (the next run opens one at page 0).
    package var nextPage: Int?
    /// The newest entry at the head of the listing, as the last read of page 0 showed it.
    package var headID: String?
    /// The listing's size as the API last stated it.
    package var totalItems: Int?
    /// Entries per page, as page 0 showed it.
    package var pageSize: Int?
    /// Pages read over all runs.
    package var pagesRead: Int
    /// The last pass that read the listing to its real end, or down to what such a pass saw (not
    /// only to `--pages`): everything below an entry it saw is known, so a later pass of a
    /// newest-first listing stops at the first such entry.
    package var lastFullPass: Int?

    /// A page that came back empty well before the listing's stated size: believed to be the end
    /// only when a later run finds it empty again.
    package var suspectedEnd: Int?

    /// Some pass has read the listing to its end.
    package var reachedEnd: Bool { lastFullPass != nil }

    /// The last completed pass was cut short by `--pages`: a run without it reads on to the gap.
    package var lastPassWasCut: Bool { pass > 0 && lastFullPass != pass - 1 }
    package var updatedAt: Date?

    package init(source: String) {
        self.source = source
        pass = 0
        pagesRead = 0
    }

    /// Pages in the whole listing, as far as its stated size tells.
    package var estimatedPages: Int? {
        guard let totalItems, let pageSize, pageSize > 0 else { return nil }
        // No `total + size - 1`: a lying `total_items` near Int.max would overflow it.
        return max(totalItems / pageSize + (totalItems % pageSize > 0 ? 1 : 0), 1)
    }
}

/// An image a listing found, as the store keeps it: its id, what the listing said of it (JSON
/// that the store keeps and never reads), and the album it came from, if any.
package struct FoundImage: Sendable, Hashable {
    package var id: String
    package var payload: String
    package var albumID: String?

    package init(id: String, payload: String, albumID: String? = nil) {
        self.id = id
        self.payload = payload
        self.albumID = albumID
    }
}

/// What one page of a listing added, written in one step with the cursor that follows it, so a
/// run killed at any point neither loses found images nor reads a page it has recorded.
package struct ListedPage: Sendable {
    /// Entries (images and albums) first seen on this page.
    package var newEntryIDs: [String]
    /// Images to mirror.
    package var images: [FoundImage]
    /// Albums whose images must still be asked for.
    package var pendingAlbumIDs: [String]
    /// What the page said of those albums (JSON), for their images' metadata.
    package var pendingAlbumContexts: [String: String]
    package var cursor: CrawlCursor
    /// Who records it, and which of its images it would fetch.
    package var lister: Lister

    init(
        newEntryIDs: [String], images: [FoundImage], pendingAlbumIDs: [String], pendingAlbumContexts: [String: String] = [:],
        cursor: CrawlCursor, lister: Lister
    ) {
        self.lister = lister
        self.newEntryIDs = newEntryIDs
        self.images = images
        self.pendingAlbumIDs = pendingAlbumIDs
        self.pendingAlbumContexts = pendingAlbumContexts
        self.cursor = cursor
    }
}

/// Who records a page or an album's images: an unfinished image or album is held by one owner
/// (a tag), whose runs resume it with its settings. An unfinished image another owner holds is
/// taken over by a lister whose filter wants it (so a narrow tag cannot starve a wider one).
package struct Lister: Sendable {
    /// The listing's key (`imgur tag cats time all`).
    package var listing: String
    /// What the keys of every listing of the same owner start with (`imgur tag cats `).
    package var owner: String
    /// The images (by id) the lister would fetch.
    package var wants: Set<String>
}

/// Figures for `mirror status`.
package struct CrawlFigures: Sendable, Equatable, Codable {
    package var cursor: CrawlCursor
    /// Entries the listing has shown.
    package var entriesKnown: Int
    /// Images this listing holds; images (held by any listing in the directory) not yet mirrored.
    package var imagesKnown: Int
    package var imagesPending: Int
    /// Albums whose image lists are cached, still to be asked for (held by any listing), and given up.
    package var albumsCached: Int
    package var albumsPending: Int
    package var albumsGone: Int

    package init(cursor: CrawlCursor, entriesKnown: Int, imagesKnown: Int, imagesPending: Int, albumsCached: Int, albumsPending: Int, albumsGone: Int) {
        self.cursor = cursor
        self.entriesKnown = entriesKnown
        self.imagesKnown = imagesKnown
        self.imagesPending = imagesPending
        self.albumsCached = albumsCached
        self.albumsPending = albumsPending
        self.albumsGone = albumsGone
    }
}

/// The durable side of a tag crawl: its cursor, the listing entries it has seen, the album cache,
/// the images found and not yet mirrored, and the API budget. A source reads and writes only this;
/// files are the mirror's business.
package protocol CrawlStore: Sendable {
    func cursor(for source: String) async throws(MirrorError) -> CrawlCursor
    func saveCursor(_ cursor: CrawlCursor) async throws(MirrorError)
    /// Records a page; returns the images its lister now holds unfinished: those new to the store,
    /// and those it wants that another owner held and no run finished (taken over; see ``Lister``).
    func recordPage(_ page: ListedPage, source: String) async throws(MirrorError) -> [FoundImage]
    /// For each of `entryIDs` the listing has shown before, the pass that first saw it.
    func knownEntries(_ entryIDs: [String], source: String) async throws(MirrorError) -> [String: Int]

    /// The album's image list (the JSON ``recordAlbum(_:images:list:source:lister:)`` kept), if it was
    /// fetched before.
    func cachedAlbum(_ albumID: String) async throws(MirrorError) -> String?
    /// Albums whose images were not fetched yet, oldest first, each with the listing that holds
    /// it: those held by a listing whose key starts with `prefix`, and those one of `listings`
    /// has shown.
    func pendingAlbums(listedBy prefix: String, orShownBy listings: [String]) async throws(MirrorError)
        -> [(id: String, listing: String)]
    /// What the page that listed a pending album said of it (JSON).
    func albumContext(_ albumID: String) async throws(MirrorError) -> String?
    /// Caches an album's image list (`list`, JSON) and queues its images: new ones the lister
    /// wants are its own, the others the album's holder's (`source`); returns those the lister now
    /// holds unfinished (see ``recordPage(_:source:)``).
    func recordAlbum(_ albumID: String, images: [FoundImage], list: String, source: String, lister: Lister) async throws(MirrorError)
        -> [FoundImage]
    /// Gives an album up (removed, or an answer that will not change): it is not asked for again.
    func recordAlbumGone(_ albumID: String, problem: String, source: String) async throws(MirrorError)
    /// Counts a failed attempt at an album that stays pending; returns the failures so far.
    func recordAlbumFailure(_ albumID: String, problem: String) async throws(MirrorError) -> Int

    /// Images that a listing whose key starts with `prefix` holds and no run has finished, in the
    /// order they were found, `limit` at a time after `position` (0 for the first page); `next`
    /// is nil after the last page.
    func pendingImages(listedBy prefix: String, after position: Int64, limit: Int) async throws(MirrorError)
        -> (images: [FoundImage], next: Int64?)
    /// The image's files are all in the mirror (or removed upstream): no run needs to try it again.
    func markImagesDone(_ imageIDs: [String]) async throws(MirrorError)

    func budget(api: String) async throws(MirrorError) -> APIBudget?
    func saveBudget(_ budget: APIBudget, api: String) async throws(MirrorError)

    func figures(source: String) async throws(MirrorError) -> CrawlFigures
    /// Every source with a cursor.
    func crawlSources() async throws(MirrorError) -> [String]
}
