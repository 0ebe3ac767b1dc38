import Foundation

/// What the API or the feed said of each file, as a JSON sidecar under `meta/` (`--metadata`):
///
/// - `meta/<image id>.json` for a tag's image: id, title, description, tags, datetime (ISO 8601)
///   and timestamp, type, size, width, height, animated, the album (id, title) it came from, the
///   gallery link, the media link, and the mirror's files of it;
/// - `meta/enclosures/<file name>.json` for a feed's enclosure: the feed's title, the entry's
///   title, id (a docset's identifier where it has one), version, updated and web page, and the
///   enclosure's links, type and stated length.
///
/// A sidecar holds only what its source said, never when it was written, so it is rewritten (whole,
/// by a rename) exactly when that changes: a title edited on Imgur shows up the next time a page
/// lists the image.
struct MetadataSidecars: Sendable {
    let directory: MirrorDirectory

    static let folder = "meta"

    /// The sidecar of an image, named by its id (a plain id: ``MediaURLBuilder/item(for:)``).
    static func path(ofImage id: String) -> String { "\(folder)/\(id).json" }

    /// The sidecar of a feed's enclosure, named by its file in `enclosures/`.
    static func path(ofEnclosure fileName: String) -> String { "\(folder)/enclosures/\(fileName).json" }

    /// What an image's sidecar holds.
    struct ImageFields: Encodable {
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
        var files: [String: String]

        enum CodingKeys: String, CodingKey {
            case id, title, description, tags, datetime, timestamp, type, size, width, height, animated, album, link, files
            case mp4Size = "mp4_size"
            case galleryLink = "gallery_link"
        }
    }

    /// What a feed enclosure's sidecar holds.
    struct EnclosureFields: Encodable {
        var feedTitle: String?
        var feedKind: String
        var title: String?
        var id: String?
        var version: String?
        var updated: String?
        var page: String?
        var links: [String]
        var type: String?
        var length: Int64?
        var file: String

        enum CodingKeys: String, CodingKey {
            case title, id, version, updated, page, links, type, length, file
            case feedTitle = "feed_title"
            case feedKind = "feed_kind"
        }
    }

    /// Writes `image`'s sidecar unless it already says the same; true when it was written.
    /// `replacing` false writes only a missing one: an image resumed from an earlier run carries
    /// what the API said then, older than what a page read since may have written.
    @discardableResult
    func write(_ image: ImgurImage, item: MediaItem, replacing: Bool = true) throws(MirrorError) -> Bool {
        let fields = ImageFields(
            id: image.id, title: image.title, description: image.description, tags: image.tags,
            datetime: image.datetime.map { Date(timeIntervalSince1970: TimeInterval($0)).formatted(.iso8601) },
            timestamp: image.datetime, type: image.type, size: image.size, mp4Size: image.mp4Size, width: image.width,
            height: image.height, animated: image.animated,
            album: image.album.map { ImageFields.Album(id: $0.id, title: $0.title) }, galleryLink: image.galleryLink,
            link: image.link, files: ["full": "full/\(item.fullFileName)", "preview": "preview/\(item.previewFileName)"])
        return try replace(Self.path(ofImage: image.id), with: fields, replacing: replacing)
    }

    /// Writes the sidecar of `enclosure`, mirrored as `enclosures/<fileName>`, unless it already
    /// says the same; true when it was written.
    @discardableResult
    func write(_ enclosure: FeedEnclosure, feed: Feed, fileName: String) throws(MirrorError) -> Bool {
        let fields = EnclosureFields(
            feedTitle: feed.title, feedKind: feed.kind.rawValue, title: enclosure.entryTitle, id: enclosure.entryID,
            version: enclosure.version, updated: enclosure.updated, page: enclosure.entryPage,
            links: [enclosure.url] + enclosure.mirrors, type: enclosure.type, length: enclosure.length,
            file: "enclosures/\(fileName)")
        return try replace(Self.path(ofEnclosure: fileName), with: fields, replacing: true)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return encoder
    }()

    private func replace(_ relativePath: String, with fields: some Encodable, replacing: Bool) throws(MirrorError) -> Bool {
        // Strings, integers and booleans only: nothing here can fail to encode.
        let data = (try? Self.encoder.encode(fields)) ?? Data("{}".utf8)
        return try directory.replaceSmallFile(relativePath, with: Array(data) + [UInt8(ascii: "\n")], replacing: replacing)
    }
}
