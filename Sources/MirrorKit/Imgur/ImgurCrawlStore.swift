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
        let listed = images.map { entry in (image: entry.image, row: Self.found(entry.image, albumID: entry.albumID)) }
        let page = ListedPage(
            newEntryIDs: newEntryIDs, images: listed.map(\.row),
            pendingAlbumIDs: pendingAlbumIDs, pendingAlbumContexts: pendingAlbumContexts.mapValues(Self.json),
            cursor: cursor, lister: Self.lister(source, wants: wants))
        return Self.handedBack(try await store.recordPage(page, source: source), listed: listed)
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
        let list = Self.json(images)
        let listed = images.map { image in (image: image, row: Self.found(image, albumID: albumID)) }
        let added = try await store.recordAlbum(
            albumID, images: listed.map(\.row), list: list, source: holder, lister: Self.lister(listing, wants: wants))
        return Self.handedBack(added, listed: listed)
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

    /// `image` as the store keeps it.
    static func found(_ image: ImgurImage, albumID: String?) -> FoundImage {
        FoundImage(id: image.id, payload: json(image), albumID: albumID)
    }

    /// The images of the rows a store hands back (`rows`), each what ``image(_:)`` decodes from
    /// it: the caller's own image when the row is one the caller made from it (`listed`, each
    /// image with its row), the row decoded otherwise. Decoding every image of a first run again,
    /// right after encoding it, cost more than queueing it (see BENCHMARKS.md). Matched by the
    /// whole row, not by id: a row the store kept from another listing holds that listing's JSON.
    static func handedBack(_ rows: [FoundImage], listed: [(image: ImgurImage, row: FoundImage)]) -> [ImgurImage] {
        guard !rows.isEmpty else { return [] }
        var byRow: [FoundImage: ImgurImage] = [:]
        for entry in listed where byRow[entry.row] == nil { byRow[entry.row] = entry.image }
        return rows.compactMap { row in
            guard var image = byRow[row] else { return Self.image(row) }
            if image.album == nil, let albumID = row.albumID { image.album = ImgurAlbumContext(id: albumID) }
            return image
        }
    }

    /// The image a stored row holds; nil for JSON that is not an image (a damaged row is left be).
    static func image(_ found: FoundImage) -> ImgurImage? {
        guard var image = try? JSONDecoder().decode(ImgurImage.self, from: Data(found.payload.utf8)) else { return nil }
        // Queued before images kept their album (schema 3): the row still names it.
        if image.album == nil, let albumID = found.albumID { image.album = ImgurAlbumContext(id: albumID) }
        return image
    }

    // The JSON ``ImgurImage/init(from:)`` and ``ImgurAlbumContext``'s decoding read, written
    // directly: every image of a first run is written once, and `JSONEncoder` (a tree of boxed
    // values and a dictionary per object) cost more than queueing the image (see BENCHMARKS.md).
    // Keys are ``ImgurImage/CodingKeys``'s; a field without a value is left out.

    static func json(_ image: ImgurImage) -> String {
        String(decoding: object(of: image).closed(), as: UTF8.self)
    }

    static func json(_ images: [ImgurImage]) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, image) in images.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += object(of: image).closed()
        }
        bytes.append(UInt8(ascii: "]"))
        return String(decoding: bytes, as: UTF8.self)
    }

    static func json(_ album: ImgurAlbumContext) -> String {
        String(decoding: object(of: album).closed(), as: UTF8.self)
    }

    private static func object(of image: ImgurImage) -> JSONText.Object {
        var object = JSONText.Object()
        object.add("id", image.id)
        object.add("type", image.type)
        object.add("animated", image.animated)
        object.add("size", image.size)
        object.add("mp4_size", image.mp4Size)
        object.add("link", image.link)
        object.add("datetime", image.datetime)
        object.add("title", image.title)
        object.add("description", image.description)
        object.add("width", image.width)
        object.add("height", image.height)
        object.add("tags", image.tags)
        object.add("mirror_album", image.album.map { Self.object(of: $0) })
        return object
    }

    private static func object(of album: ImgurAlbumContext) -> JSONText.Object {
        var object = JSONText.Object()
        object.add("id", album.id)
        object.add("title", album.title)
        object.add("tags", album.tags)
        object.add("datetime", album.datetime)
        return object
    }
}
