import FoundationEssentials

/// The crawl store as the Imgur sources use it: images and albums in, images out. The store keeps
/// each image as its id and JSON (``FoundImage``); this says what that JSON is.
struct ImgurCrawlStore: Sendable {
    let store: any CrawlStore

    init(_ store: any CrawlStore) {
        self.store = store
    }

    func cursor(for source: String) async throws(MirrorError) -> CrawlCursor {
        try await store.cursor(for: source)
    }

    func saveCursor(_ cursor: CrawlCursor) async throws(MirrorError) {
        try await store.saveCursor(cursor)
    }

    func knownEntries(_ entryIDs: [String], source: String) async throws(MirrorError) -> [String: Int] {
        try await store.knownEntries(entryIDs, source: source)
    }

    /// Records a page: its new entries, its images (each with the album it came from), the albums
    /// still to expand with what the page said of them, and the cursor after it. Returns the
    /// images the listing now holds unfinished: those new to the store, and those it `wants` that
    /// another tag held (see ``Lister``).
    func recordPage(
        newEntryIDs: [String], images: [(image: ImgurImage, albumID: String?)], pendingAlbumIDs: [String],
        pendingAlbumContexts: [String: ImgurAlbumContext], cursor: CrawlCursor, source: String, wants: Set<String>
    ) async throws(MirrorError) -> [ImgurImage] {
        let page = ListedPage(
            newEntryIDs: newEntryIDs, images: images.compactMap { Self.found($0.image, albumID: $0.albumID) },
            pendingAlbumIDs: pendingAlbumIDs, pendingAlbumContexts: pendingAlbumContexts.compactMapValues(Self.json),
            cursor: cursor, lister: Self.lister(source, wants: wants))
        return Self.images(try await store.recordPage(page, source: source), listed: images)
    }

    func cachedAlbum(_ albumID: String) async throws(MirrorError) -> [ImgurImage]? {
        try await store.cachedAlbum(albumID).flatMap { try? JSONDecoder().decode([ImgurImage].self, from: Data($0.utf8)) }
    }

    func albumContext(_ albumID: String) async throws(MirrorError) -> ImgurAlbumContext? {
        try await store.albumContext(albumID).flatMap { try? JSONDecoder().decode(ImgurAlbumContext.self, from: Data($0.utf8)) }
    }

    /// The albums no run has expanded that listings of `tag` hold, or that `listings` have
    /// shown; each with the listing that holds it.
    func pendingAlbums(of tag: String, orShownBy listings: [String]) async throws(MirrorError) -> [(id: String, listing: String)] {
        try await store.pendingAlbums(listedBy: TagCrawler.Options.keyPrefix(of: tag), orShownBy: listings)
    }

    /// `listing` as a lister: every listing of a tag holds what it finds together
    /// (`imgur tag cats ` for `imgur tag cats time all`).
    static func lister(_ listing: String, wants: Set<String>) -> Lister {
        Lister(
            listing: listing, owner: TagCrawler.Options.tag(ofKey: listing).map(TagCrawler.Options.keyPrefix(of:)) ?? listing,
            wants: wants)
    }

    /// Caches the album's images and queues them for `listing`, which `wants` some of them; the
    /// others are held by `holder`, the listing that holds the album. Returns the images the
    /// listing now holds unfinished.
    func recordAlbum(
        _ albumID: String, images: [ImgurImage], holder: String, listing: String, wants: Set<String>
    ) async throws(MirrorError) -> [ImgurImage] {
        let list = Self.json(images) ?? "[]"
        let found = images.compactMap { Self.found($0, albumID: albumID) }
        let added = try await store.recordAlbum(albumID, images: found, list: list, source: holder, lister: Self.lister(listing, wants: wants))
        return Self.images(added, listed: images.map { ($0, albumID) })
    }

    func recordAlbumGone(_ albumID: String, problem: String, source: String) async throws(MirrorError) {
        try await store.recordAlbumGone(albumID, problem: problem, source: source)
    }

    func recordAlbumFailure(_ albumID: String, problem: String) async throws(MirrorError) -> Int {
        try await store.recordAlbumFailure(albumID, problem: problem)
    }

    /// The images listings of `tag` hold and no run finished.
    func pendingImages(of tag: String, after position: Int64, limit: Int) async throws(MirrorError)
        -> (images: [ImgurImage], next: Int64?) {
        let pending = try await store.pendingImages(listedBy: TagCrawler.Options.keyPrefix(of: tag), after: position, limit: limit)
        return (pending.images.compactMap(Self.image), pending.next)
    }

    func saveBudget(_ budget: APIBudget, api: String) async throws(MirrorError) {
        try await store.saveBudget(budget, api: api)
    }

    /// `image` as the store keeps it; nil if it cannot be encoded (it always can: strings and numbers).
    static func found(_ image: ImgurImage, albumID: String?) -> FoundImage? {
        json(image).map { FoundImage(id: image.id, payload: $0, albumID: albumID) }
    }

    /// The images of `added` (rows the store took from `listed`) as `listed` has them: what
    /// decoding each row's JSON again gives (``image(_:)``, tested), without decoding it, some
    /// 28 k instructions an image on a first run. A row that is none of them is decoded.
    static func images(_ added: [FoundImage], listed: [(image: ImgurImage, albumID: String?)]) -> [ImgurImage] {
        guard !added.isEmpty else { return [] }
        var byRow: [RowKey: ImgurImage] = [:]
        for (image, albumID) in listed { byRow[RowKey(id: image.id, albumID: albumID)] = image }
        return added.compactMap { row in
            guard var image = byRow[RowKey(id: row.id, albumID: row.albumID)] else { return Self.image(row) }
            if image.album == nil, let albumID = row.albumID { image.album = ImgurAlbumContext(id: albumID) }
            return image
        }
    }

    /// An image as the store queues it: an image listed on its own and the same image listed in
    /// an album are two rows of the caller's list.
    private struct RowKey: Hashable {
        var id: String
        var albumID: String?
    }

    /// The image a stored row holds; nil for JSON that is not an image (a damaged row is left be).
    static func image(_ found: FoundImage) -> ImgurImage? {
        guard var image = try? JSONDecoder().decode(ImgurImage.self, from: Data(found.payload.utf8)) else { return nil }
        // Queued before images kept their album (schema 3): the row still names it.
        if image.album == nil, let albumID = found.albumID { image.album = ImgurAlbumContext(id: albumID) }
        return image
    }

    private static func json(_ value: some Encodable) -> String? {
        (try? JSONEncoder().encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }
}
