import Logging

/// Walks a tag's gallery page by page and turns every image in it, albums expanded, into a
/// ``MediaItem``.
public struct TagCrawler: Sendable {
    public struct Options: Sendable {
        public var tag: String
        public var sort: GallerySort
        public var window: GalleryWindow
        /// Stop after this many pages; nil walks until the listing ends.
        public var maxPages: Int?

        public init(tag: String, sort: GallerySort = .time, window: GalleryWindow = .all, maxPages: Int? = nil) {
            self.tag = tag
            self.sort = sort
            self.window = window
            self.maxPages = maxPages
        }
    }

    /// What a crawl found, and what went wrong on the way.
    public struct Result: Sendable {
        /// Every image found, each once, in listing order.
        public var items: [MediaItem] = []
        public var pagesRead = 0
        /// Albums or images that could not be listed; the crawl went on without them.
        public var problems: [String] = []
        /// The error that stopped the listing early, if one did.
        public var stoppedBy: ImgurError?
        /// The listing was read to its end, or to a page with nothing new in it.
        public var reachedEnd = false
    }

    let client: ImgurClient
    let urls: MediaURLBuilder
    let logger: Logger

    public init(client: ImgurClient, urls: MediaURLBuilder, logger: Logger) {
        self.client = client
        self.urls = urls
        self.logger = logger
    }

    /// Reads the listing page by page. `isPageKnown`, when given, ends the walk at the first page
    /// whose images it has all seen before: in a newest-first listing, everything after is older.
    public func crawl(
        _ options: Options, isPageKnown: (@Sendable ([MediaItem]) async -> Bool)? = nil
    ) async -> Result {
        var result = Result()
        var seen = Set<String>()
        /// Adds the image once; returns its item (for the page's own list) even when seen before.
        func add(_ image: ImgurImage) -> MediaItem? {
            guard let item = urls.item(for: image) else {
                result.problems.append("skipped image with unusable id '\(image.id)'")
                return nil
            }
            if seen.insert(item.id).inserted { result.items.append(item) }
            return item
        }
        var page = 0
        while options.maxPages.map({ page < $0 }) ?? true {
            let entries: [GalleryItem]
            do {
                entries = try await client.tagPage(options.tag, sort: options.sort, window: options.window, page: page)
            } catch {
                result.stoppedBy = error
                break
            }
            if entries.isEmpty {
                result.reachedEnd = true
                break
            }
            result.pagesRead += 1
            logger.debug("tag \(options.tag) page \(page): \(entries.count) items")
            var pageImages: [ImgurImage] = []
            for entry in entries {
                switch entry {
                case .image(let image): pageImages.append(image)
                case .album(let album): pageImages += await images(of: album, problems: &result.problems)
                }
            }
            let pageItems = pageImages.compactMap(add)
            page += 1
            if let isPageKnown, !pageItems.isEmpty, await isPageKnown(pageItems) {
                logger.debug("tag \(options.tag) page \(page - 1) holds nothing new: stopping")
                result.reachedEnd = true
                break
            }
        }
        return result
    }

    /// The album's images: the embedded ones when complete, else the album endpoint's list.
    private func images(of album: ImgurAlbum, problems: inout [String]) async -> [ImgurImage] {
        if let embedded = album.completeImages { return embedded }
        do {
            return try await client.albumImages(album.id)
        } catch {
            problems.append("album \(album.id): \(error)")
            return album.images ?? []
        }
    }
}
