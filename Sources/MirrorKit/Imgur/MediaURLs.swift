/// Thumbnail sizes Imgur serves for every image, by suffix letter.
package enum ThumbnailSize: String, Sendable, CaseIterable, Codable {
    /// 90×90, cropped square.
    case smallSquare = "s"
    /// 160×160, cropped square.
    case bigSquare = "b"
    /// 160 px on the long side.
    case small = "t"
    /// 320 px on the long side.
    case medium = "m"
    /// 640 px on the long side.
    case large = "l"
    /// 1024 px on the long side.
    case huge = "h"
    /// No thumbnail: previews are not fetched, only full-size files.
    case skipped = "none"
}

/// The file an animated image is fetched as.
package enum AnimatedFormat: String, Sendable, CaseIterable, Codable {
    /// The MP4 Imgur makes of every animated image: a tenth of the GIF's size, or less.
    case mp4
    /// The GIF as uploaded (Imgur serves one for every animated image it converted).
    case gif
}

/// One image to mirror: its thumbnail and its full-size file.
struct MediaItem: Sendable, Hashable {
    var id: String
    /// The thumbnail; nil when previews are not fetched.
    var previewURL: String?
    var previewFileName: String?
    var fullURL: String
    var fullFileName: String
    /// The full-size file's size as the API states it, when it states it for that file.
    var expectedSize: Int64?
}

/// Builds media URLs from image ids, the way Imgur's CDN names files.
struct MediaURLBuilder: Sendable {
    var mediaBase: String
    var thumbnail: ThumbnailSize
    var animated: AnimatedFormat

    static let defaultMediaBase = "https://i.imgur.com"
    static let defaultThumbnail = ThumbnailSize.medium
    static let defaultAnimated = AnimatedFormat.mp4

    init(mediaBase: String = defaultMediaBase, thumbnail: ThumbnailSize = defaultThumbnail, animated: AnimatedFormat = defaultAnimated) {
        self.mediaBase = mediaBase.hasSuffix("/") ? String(mediaBase.dropLast()) : mediaBase
        self.thumbnail = thumbnail
        self.animated = animated
    }

    /// The item for `image`, or nil when its id is not a plain Imgur id (5 to 10 letters and
    /// digits): such an id would make an unsafe file name and no valid CDN URL.
    ///
    /// The full-size URL comes from the id, never from `link`: for large GIFs the API points
    /// `link` at a thumbnail. Animated images are fetched as `.mp4` (`.gifv` is an HTML page).
    func item(for image: ImgurImage) -> MediaItem? {
        guard Self.isPlainID(image.id) else { return nil }
        let ext: String
        let expectedSize: Int64?
        if image.type == "video/mp4" || (image.animated && animated == .mp4) {
            ext = "mp4"
            expectedSize = image.mp4Size ?? (image.type == "video/mp4" ? image.size : nil)
        } else if image.animated {
            // The GIF's size is the image's, when the API calls it a GIF.
            ext = "gif"
            expectedSize = image.type == "image/gif" ? image.size : nil
        } else {
            ext = Self.fileExtension(forMIMEType: image.type) ?? Self.fileExtension(ofLink: image.link) ?? "jpg"
            expectedSize = image.size
        }
        let previewName = thumbnail == .skipped ? nil : "\(image.id)\(thumbnail.rawValue).jpg"
        return MediaItem(
            id: image.id,
            previewURL: previewName.map { "\(mediaBase)/\($0)" },
            previewFileName: previewName,
            fullURL: "\(mediaBase)/\(image.id).\(ext)",
            fullFileName: "\(image.id).\(ext)",
            expectedSize: expectedSize)
    }

    /// Whether `path` (relative to the mirror) is a file these settings make: a full-size file,
    /// or a thumbnail of the size asked for (none with previews off). A deleted thumbnail of
    /// another size, or any after `--no-previews`, is not fetched again.
    @Sendable func makes(_ path: String) -> Bool {
        // Read as bytes: a sweep asks this of every file the mirror holds. (Unlike `hasPrefix`,
        // a combining mark after the prefix does not make it another character: the paths the
        // sources make are ASCII, and no other name is asked about.)
        path.withUTF8Bytes { bytes in
            if bytes.starts(withBytesOf: "full/") { return true }
            guard thumbnail != .skipped, bytes.starts(withBytesOf: "preview/") else { return false }
            return bytes.ends(withBytesOf: thumbnail.rawValue + ".jpg")
        }
    }

    /// Five to ten ASCII letters and digits: an id that is safe as a file name and in a URL.
    /// Read as bytes: every image of a listing is checked.
    static func isPlainID(_ id: String) -> Bool {
        id.withUTF8Bytes { bytes in (5...10).contains(bytes.count) && bytes.allSatisfy(\.isASCIILetterOrDigit) }
    }

    static func fileExtension(forMIMEType type: String?) -> String? {
        switch type {
        case "image/jpeg": "jpg"
        case "image/png": "png"
        case "image/gif": "gif"
        case "image/webp": "webp"
        case "image/apng": "png"
        case "image/tiff": "tiff"
        case "video/mp4": "mp4"
        default: nil
        }
    }

    /// The extension of an `i.imgur.com/{id}.{ext}` link, when it is a plain one.
    static func fileExtension(ofLink link: String?) -> String? {
        guard let link, let dot = link.lastIndex(of: ".") else { return nil }
        let ext = link[link.index(after: dot)...].lowercased()
        return ["jpg", "jpeg", "png", "gif", "webp"].contains(ext) ? (ext == "jpeg" ? "jpg" : ext) : nil
    }
}
