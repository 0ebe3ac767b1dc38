import FoundationEssentials

/// What an image's sidecar (`meta/<image id>.json`) holds: id, title, description, tags,
/// datetime (ISO 8601) and timestamp, type, size, width, height, animated, the album (id, title)
/// it came from, the gallery link, the media link, the mirror's files of it, and the sources that
/// listed it (`tag cats`, `album Ef1gH`).
struct ImageSidecar: Encodable {
    struct Album: Encodable {
        var id: String
        var title: String?
    }

    var id: String
    var title: String?
    var description: String?
    var tags: [String]?
    var datetime: String?
    var timestamp: Int64?
    var type: String?
    var size: Int64?
    var mp4Size: Int64?
    var width: Int?
    var height: Int?
    var animated: Bool
    var album: Album?
    var galleryLink: String
    var link: String?
    /// The mirror's files of the image, by kind (`full`, `preview`): only those it has or will have.
    var files: [String: String]
    /// Kinds of file the host has removed (`full`): the mirror has none of them.
    var removedUpstream: [String]?
    var sources: [String]

    enum CodingKeys: String, CodingKey {
        case id, title, description, tags, datetime, timestamp, type, size, width, height, animated, album, link, files
        case sources
        case removedUpstream = "removed_upstream"
        case mp4Size = "mp4_size"
        case galleryLink = "gallery_link"
    }

    /// The sidecar's name: the image's plain id (see ``MediaURLBuilder/item(for:)``).
    static func name(of id: String) -> String { "\(id).json" }

    init(_ image: ImgurImage, item: MediaItem, sources: [String]) {
        id = image.id
        title = image.title
        description = image.description
        tags = image.tags
        datetime = image.datetime.map { Date(timeIntervalSince1970: TimeInterval($0)).formatted(.iso8601) }
        timestamp = image.datetime
        type = image.type
        size = image.size
        mp4Size = image.mp4Size
        width = image.width
        height = image.height
        animated = image.animated
        album = image.album.map { Album(id: $0.id, title: $0.title) }
        galleryLink = image.galleryLink
        link = image.link
        var files = ["full": "full/\(item.fullFileName)"]
        if let preview = item.previewFileName { files["preview"] = "preview/\(preview)" }
        self.files = files
        self.sources = sources
    }
}
