import Foundation

/// A tag made up on the spot, shaped like a real one (see ../shared/real-data/imgur: 60 entries a
/// page, about one in five an album whose images the page does not embed), of any size, that can
/// grow at its head while a crawl is under way.
struct GeneratedTag: Sendable {
    struct Entry: Sendable {
        var id: String
        /// The album's images; nil for a plain image.
        var albumImages: [String]?
        /// When it was posted: a minute apart, newest first (see ``GeneratedTag/datetime(ofEntryAt:)``).
        var datetime: Int = GeneratedTag.firstPostTime
    }

    /// The post time of the first entry a tag is made with; each below it is a minute older.
    static let firstPostTime = 1_700_000_000

    var name: String
    var perPage: Int
    /// Newest first.
    var entries: [Entry] = []
    /// Added to the `total_items` the pages state, as a stale count would be.
    var overstatedBy = 0

    /// The API body of page `page` (an empty `items` past the end).
    func pageBody(_ page: Int, imageSize: (String) -> Int) -> Data {
        let start = page * perPage
        let slice = start < entries.count ? Array(entries[start..<min(start + perPage, entries.count)]) : []
        let items: [[String: Any]] = slice.map { entry in
            if let images = entry.albumImages {
                return [
                    "id": entry.id, "is_album": true, "images_count": images.count, "cover": images.first ?? "",
                    "title": "album \(entry.id)", "datetime": entry.datetime,
                ]
            }
            return Self.imageObject(entry.id, size: imageSize(entry.id), datetime: entry.datetime).merging(["is_album": false]) { $1 }
        }
        let body: [String: Any] = [
            "data": ["name": name, "followers": 0, "total_items": entries.count + overstatedBy, "following": false, "items": items],
            "success": true, "status": 200,
        ]
        return (try? JSONSerialization.data(withJSONObject: body)) ?? Data()
    }

    static func imageObject(_ id: String, size: Int, datetime: Int = firstPostTime) -> [String: Any] {
        ["id": id, "type": "image/jpeg", "animated": false, "size": size, "title": "image \(id)", "datetime": datetime]
    }
}

extension FixtureServer {
    /// Serves tag `name` made of `pages` pages of `perPage` entries, every `albumEvery`-th of them an
    /// album of `imagesPerAlbum` images that the page does not embed; every image's full-size file
    /// (`imageSize` bytes) and thumbnails are served too.
    public func addGeneratedTag(
        _ name: String, pages: Int, perPage: Int = 60, albumEvery: Int = 5, imagesPerAlbum: Int = 3,
        imageSize: Int = 4096
    ) {
        state.withLock { state in
            state.generatedTags[name] = GeneratedTag(name: name, perPage: perPage)
            state.appendGenerated(
                to: name, count: pages * perPage, atHead: false, albumEvery: albumEvery,
                imagesPerAlbum: imagesPerAlbum, imageSize: imageSize)
        }
    }

    /// Pushes `count` new entries onto the head of generated tag `name`, as new posts do: every
    /// older entry moves down the listing. Returns the new entries' ids, newest first.
    @discardableResult
    public func prependToGeneratedTag(
        _ name: String, count: Int, albumEvery: Int = 5, imagesPerAlbum: Int = 3, imageSize: Int = 4096
    ) -> [String] {
        state.withLock { state in
            state.appendGenerated(
                to: name, count: count, atHead: true, albumEvery: albumEvery, imagesPerAlbum: imagesPerAlbum,
                imageSize: imageSize)
        }
    }

    /// Makes generated tag `name`'s pages state `extra` more entries than it lists.
    public func overstateGeneratedTag(_ name: String, by extra: Int) {
        state.withLock { $0.generatedTags[name]?.overstatedBy = extra }
    }

    /// Every image of generated tag `name`, albums expanded.
    public func generatedImageIDs(_ name: String) -> [String] {
        state.withLock { state in
            state.generatedTags[name]?.entries.flatMap { $0.albumImages ?? [$0.id] } ?? []
        }
    }

    /// Generated tag `name`'s entries, newest first: each with its images (its own id for a plain
    /// image) and when it was posted.
    public func generatedEntries(_ name: String) -> [(id: String, imageIDs: [String], posted: Date)] {
        state.withLock { state in
            (state.generatedTags[name]?.entries ?? []).map {
                ($0.id, $0.albumImages ?? [$0.id], Date(timeIntervalSince1970: TimeInterval($0.datetime)))
            }
        }
    }

    /// The images of generated album `id`.
    public func generatedAlbumImageIDs(_ id: String) -> [String] {
        state.withLock { $0.generatedAlbums[id] ?? [] }
    }

    /// The ids of generated tag `name`'s albums.
    public func generatedAlbumIDs(_ name: String) -> [String] {
        state.withLock { state in
            state.generatedTags[name]?.entries.filter { $0.albumImages != nil }.map(\.id) ?? []
        }
    }
}

extension ServerState {
    /// Adds `count` entries to a generated tag, at its head or its end, registering their media.
    @discardableResult
    mutating func appendGenerated(
        to name: String, count: Int, atHead: Bool, albumEvery: Int, imagesPerAlbum: Int, imageSize: Int
    ) -> [String] {
        guard var tag = generatedTags[name] else { return [] }
        var added: [GeneratedTag.Entry] = []
        for index in 0..<count {
            if albumEvery > 0, index % albumEvery == albumEvery - 1 {
                let images = (0..<imagesPerAlbum).map { _ in newGeneratedImage(size: imageSize) }
                let id = nextGeneratedID(prefix: "A")
                generatedAlbums[id] = images
                added.append(.init(id: id, albumImages: images))
            } else {
                added.append(.init(id: newGeneratedImage(size: imageSize), albumImages: nil))
            }
        }
        // A minute apart, newest first: new posts at the head are newer than any, older ones at the end older.
        let start = atHead ? (tag.entries.first?.datetime ?? GeneratedTag.firstPostTime) + 60 * count
            : (tag.entries.last.map { $0.datetime - 60 } ?? GeneratedTag.firstPostTime)
        for index in added.indices { added[index].datetime = start - 60 * index }
        tag.entries = atHead ? added + tag.entries : tag.entries + added
        generatedTags[name] = tag
        return added.map(\.id)
    }

    private mutating func newGeneratedImage(size: Int) -> String {
        let id = nextGeneratedID(prefix: "G")
        media["/\(id).jpg"] = MediaResource(size: size, contentType: "image/jpeg")
        generatedImageSizes[id] = size
        for letter in FixtureCatalog.thumbnailLetters {
            let path = "/\(id)\(letter).jpg"
            media[path] = MediaResource(size: 1024 + Int(DeterministicContent.seed(path) % 2048), contentType: "image/jpeg")
        }
        return id
    }

    /// Seven letters and digits, like Imgur's ids: a prefix and a base-36 serial number.
    private mutating func nextGeneratedID(prefix: String) -> String {
        generatedSerial += 1
        let digits = String(generatedSerial, radix: 36)
        return prefix + String(repeating: "0", count: max(6 - digits.count, 0)) + digits
    }

    /// The API body of `/3/album/{id}/images` for a generated album.
    func generatedAlbumBody(_ id: String) -> Data? {
        guard let images = generatedAlbums[id] else { return nil }
        let body: [String: Any] = [
            "data": images.map { GeneratedTag.imageObject($0, size: generatedImageSizes[$0] ?? 0) },
            "success": true, "status": 200,
        ]
        return try? JSONSerialization.data(withJSONObject: body)
    }
}
