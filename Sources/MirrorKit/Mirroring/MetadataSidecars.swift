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

    /// Writes `image`'s sidecar unless it already says the same; true when it was written.
    @discardableResult
    func write(_ image: ImgurImage, item: MediaItem) throws(MirrorError) -> Bool {
        var fields: [String: Any] = [
            "id": image.id,
            "animated": image.animated,
            "gallery_link": image.galleryLink,
            "files": ["full": "full/\(item.fullFileName)", "preview": "preview/\(item.previewFileName)"],
        ]
        fields["title"] = image.title
        fields["description"] = image.description
        fields["tags"] = image.tags
        if let datetime = image.datetime {
            fields["timestamp"] = datetime
            fields["datetime"] = Date(timeIntervalSince1970: TimeInterval(datetime)).formatted(.iso8601)
        }
        fields["type"] = image.type
        fields["size"] = image.size
        fields["mp4_size"] = image.mp4Size
        fields["width"] = image.width
        fields["height"] = image.height
        fields["link"] = image.link
        if let album = image.album {
            var albumFields: [String: Any] = ["id": album.id]
            albumFields["title"] = album.title
            fields["album"] = albumFields
        }
        return try replace(Self.path(ofImage: image.id), with: fields)
    }

    /// Writes the sidecar of `enclosure`, mirrored as `enclosures/<fileName>`, unless it already
    /// says the same; true when it was written.
    @discardableResult
    func write(_ enclosure: FeedEnclosure, feed: Feed, fileName: String) throws(MirrorError) -> Bool {
        var fields: [String: Any] = [
            "links": [enclosure.url] + enclosure.mirrors,
            "feed_kind": feed.kind.rawValue,
            "file": "enclosures/\(fileName)",
        ]
        fields["feed_title"] = feed.title
        fields["title"] = enclosure.entryTitle
        fields["id"] = enclosure.entryID
        fields["version"] = enclosure.version
        fields["updated"] = enclosure.updated
        fields["page"] = enclosure.entryPage
        fields["type"] = enclosure.type
        fields["length"] = enclosure.length
        return try replace(Self.path(ofEnclosure: fileName), with: fields)
    }

    private func replace(_ relativePath: String, with fields: [String: Any]) throws(MirrorError) -> Bool {
        let data: Data
        do {
            data = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        } catch {
            throw .configuration("metadata for \(relativePath) cannot be written as JSON: \(error)")
        }
        let bytes = Array(data) + [UInt8(ascii: "\n")]
        return try directory.replaceSmallFile(relativePath, with: bytes)
    }
}
