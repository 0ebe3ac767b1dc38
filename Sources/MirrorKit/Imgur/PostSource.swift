import Logging

/// One Imgur album, gallery post or image as a source: a few API calls, then its images as a tag's
/// are mirrored (thumbnail under `preview/`, full-size file under `full/`). Nothing is kept
/// between runs but the files and their records: a later run asks the API again and fetches only
/// what is new (in `new-file` mode, also asks after what this source mirrored before).
package struct PostSource: MirrorSource {
    /// What the address names.
    package enum Target: Sendable, Equatable {
        /// `imgur.com/a/ID`: `/3/album/{id}`.
        case album(String)
        /// `imgur.com/gallery/ID`: `/3/gallery/{id}`, an image or an album; a post no longer in
        /// the gallery is looked up as an album, then as an image.
        case post(String)
        /// `i.imgur.com/ID.ext`, `imgur.com/ID`: `/3/image/{id}`.
        case image(String)
    }

    let client: ImgurClient
    let target: Target
    let urls: MediaURLBuilder
    /// Which images the run takes (`--filter`, `--since`, `--until`).
    let filter: MediaFilter
    let logger: Logger

    init(client: ImgurClient, target: Target, urls: MediaURLBuilder, filter: MediaFilter = MediaFilter(), logger: Logger) {
        self.filter = filter
        self.client = client
        self.target = target
        self.urls = urls
        self.logger = logger
    }

    package var name: String {
        switch target {
        case .album(let id): "album \(id)"
        case .post(let id): "post \(id)"
        case .image(let id): "image \(id)"
        }
    }

    package func list(into sink: SourceSink) async -> SourceListing {
        sink.publish(.phase(.crawling))
        let groups = sink.groups()
        let images = ImageJobs(sink: sink, urls: urls, groups: groups, filter: filter)
        var listing = SourceListing()
        listing.groups = groups
        do throws(MirrorError) {
            if let saved = try await sink.store.budget(api: TagCrawler.budgetKey) { await client.adopt(saved) }
            let found: [ImgurImage]
            do throws(ImgurError) {
                found = try await self.images()
            } catch {
                if !Task.isCancelled { listing.stoppedBy = .api(Self.named(error, target: target)) }
                found = []
            }
            sink.publish(.pagesRead(1))
            sink.publish(.apiCalls(made: await client.callsMade(), left: await client.callsLeft()))
            try await sink.store.saveBudget(await client.budget(), api: TagCrawler.budgetKey)
            await images.submit(found, resumed: false)
        } catch {
            listing.stoppedBy = .mirror(error)
        }
        await sink.revalidateTheRest(claiming: [], restoring: urls.makes)
        return listing
    }

    /// The images the target holds, each with its album's title and tags when it is in one.
    private func images() async throws(ImgurError) -> [ImgurImage] {
        switch target {
        case .album(let id):
            return try await albumImages(try await client.album(id))
        case .image(let id):
            return [try await client.image(id)]
        case .post(let id):
            let post: GalleryItem
            do {
                post = try await client.galleryPost(id)
            } catch where error.isNotFound {
                // Taken out of the gallery (or never in it): the id still names an album or an image.
                do {
                    return try await albumImages(try await client.album(id))
                } catch where error.isNotFound {
                    return [try await client.image(id)]
                }
            }
            switch post {
            case .image(let image): return [image]
            case .album(let album): return try await albumImages(album)
            }
        }
    }

    /// Every image of `album`: embedded, or asked for when the answer holds only some.
    private func albumImages(_ album: ImgurAlbum) async throws(ImgurError) -> [ImgurImage] {
        var images = album.completeImages ?? []
        if album.completeImages == nil { images = try await client.albumImages(album.id) }
        return images.map { $0.inAlbum(album.context) }
    }

    /// A 404 said plainly: "no such album" rather than the API's "Not found" at a URL.
    static func named(_ error: ImgurError, target: Target) -> ImgurError {
        guard error.isNotFound else { return error }
        var named = error
        let what = switch target {
        case .album(let id): "album \(id)"
        case .post(let id): "gallery post \(id)"
        case .image(let id): "image \(id)"
        }
        named.message = "Imgur has no \(what)"
        return named
    }
}
