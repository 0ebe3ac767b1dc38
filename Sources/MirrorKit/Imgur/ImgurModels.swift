import FoundationEssentials
/// An image as the Imgur API describes it, in a tag page, an album or an album's image list.
///
/// Only the fields mirror needs are decoded (to mirror it, and for its metadata sidecar), each
/// leniently: the API has changed shapes over the years (`nsfw` null, `edited` a string, tags as
/// objects), and one odd field must not lose a whole page.
struct ImgurImage: Sendable, Hashable, Decodable {
    var id: String
    var type: String?
    var animated: Bool
    var size: Int64?
    var mp4Size: Int64?
    var link: String?
    var datetime: Int64?
    var title: String?
    var description: String?
    var width: Int?
    var height: Int?
    /// The tags' names: the image's own, else its album's.
    var tags: [String]?
    /// The album the image came from, when it came from one.
    var album: ImgurAlbumContext?

    init(
        id: String, type: String? = nil, animated: Bool = false, size: Int64? = nil, mp4Size: Int64? = nil,
        link: String? = nil, datetime: Int64? = nil, title: String? = nil, description: String? = nil,
        width: Int? = nil, height: Int? = nil, tags: [String]? = nil, album: ImgurAlbumContext? = nil
    ) {
        self.id = id
        self.type = type
        self.animated = animated
        self.size = size
        self.mp4Size = mp4Size
        self.link = link
        self.datetime = datetime
        self.title = title
        self.description = description
        self.width = width
        self.height = height
        self.tags = tags
        self.album = album
    }

    enum CodingKeys: String, CodingKey {
        case id, type, animated, size, link, datetime, title, description, width, height, tags
        case mp4Size = "mp4_size"
        /// Not the API's: what mirror adds when it queues an album's image.
        case album = "mirror_album"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        type = try? container.decodeIfPresent(String.self, forKey: .type)
        animated = (try? container.decodeIfPresent(Bool.self, forKey: .animated)) ?? false
        size = try? container.decodeIfPresent(Int64.self, forKey: .size)
        mp4Size = try? container.decodeIfPresent(Int64.self, forKey: .mp4Size)
        link = try? container.decodeIfPresent(String.self, forKey: .link)
        datetime = try? container.decodeIfPresent(Int64.self, forKey: .datetime)
        title = try? container.decodeIfPresent(String.self, forKey: .title)
        description = try? container.decodeIfPresent(String.self, forKey: .description)
        width = try? container.decodeIfPresent(Int.self, forKey: .width)
        height = try? container.decodeIfPresent(Int.self, forKey: .height)
        tags = ImgurTagNames.decode(from: container, forKey: .tags)
        album = try? container.decodeIfPresent(ImgurAlbumContext.self, forKey: .album)
    }

    /// The image as part of `album`: it carries the album's id and title, and its tags when it has none.
    func inAlbum(_ album: ImgurAlbumContext) -> ImgurImage {
        var image = self
        image.album = album
        if image.tags?.isEmpty ?? true { image.tags = album.tags }
        return image
    }

    /// When its post went up: the album's date for an album's image (its own is the upload's).
    var postDate: Date? {
        (album?.datetime ?? datetime).map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    /// The post on Imgur's site: the album's, for an album's image.
    var galleryLink: String {
        "https://imgur.com/gallery/\(album?.id ?? id)"
    }
}

/// The album an image came from, as its metadata names it.
struct ImgurAlbumContext: Sendable, Hashable, Decodable {
    var id: String
    var title: String?
    var tags: [String]?
    /// When the album was posted (Unix seconds).
    var datetime: Int64?

    init(id: String, title: String? = nil, tags: [String]? = nil, datetime: Int64? = nil) {
        self.id = id
        self.title = title
        self.tags = tags
        self.datetime = datetime
    }

    var postDate: Date? { datetime.map { Date(timeIntervalSince1970: TimeInterval($0)) } }
}

/// Tags as the API writes them (objects with a `name`), or as mirror stores them (names).
enum ImgurTagNames {
    static func decode<Key: CodingKey>(from container: KeyedDecodingContainer<Key>, forKey key: Key) -> [String]? {
        if let names = try? container.decodeIfPresent([String].self, forKey: key) { return names }
        guard let tags = try? container.decodeIfPresent([LenientTag].self, forKey: key) else { return nil }
        return tags.compactMap(\.name)
    }

    /// A tag object; one without a usable name is dropped, not the page.
    private struct LenientTag: Decodable {
        var name: String?

        init(from decoder: any Decoder) throws {
            name = try? decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .name)
        }

        enum CodingKeys: String, CodingKey {
            case name
        }
    }
}

/// An album in a tag page. `images` is absent in older responses and may hold fewer than
/// `imagesCount` entries in newer ones.
struct ImgurAlbum: Sendable, Hashable, Decodable {
    var id: String
    var cover: String?
    var imagesCount: Int?
    var images: [ImgurImage]?
    var title: String?
    var tags: [String]?
    /// When it was posted (Unix seconds).
    var datetime: Int64?

    enum CodingKeys: String, CodingKey {
        case id, cover, images, title, tags, datetime
        case imagesCount = "images_count"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        cover = try? container.decodeIfPresent(String.self, forKey: .cover)
        imagesCount = try? container.decodeIfPresent(Int.self, forKey: .imagesCount)
        images = try container.decodeIfPresent([ImgurImage].self, forKey: .images)
        title = try? container.decodeIfPresent(String.self, forKey: .title)
        tags = ImgurTagNames.decode(from: container, forKey: .tags)
        datetime = try? container.decodeIfPresent(Int64.self, forKey: .datetime)
    }

    /// What an image of this album carries of it.
    var context: ImgurAlbumContext {
        ImgurAlbumContext(id: id, title: title, tags: tags, datetime: datetime)
    }

    /// The embedded images, when they are all there.
    var completeImages: [ImgurImage]? {
        guard let images, images.count >= (imagesCount ?? 0) else { return nil }
        return images
    }
}

/// One entry of a gallery listing.
enum GalleryItem: Sendable, Hashable, Decodable {
    case image(ImgurImage)
    case album(ImgurAlbum)

    enum CodingKeys: String, CodingKey {
        case isAlbum = "is_album"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if try container.decodeIfPresent(Bool.self, forKey: .isAlbum) == true {
            self = .album(try ImgurAlbum(from: decoder))
        } else {
            self = .image(try ImgurImage(from: decoder))
        }
    }

    var id: String {
        switch self {
        case .image(let image): image.id
        case .album(let album): album.id
        }
    }

    /// When the entry was posted, where the API says.
    var postDate: Date? {
        let seconds = switch self {
        case .image(let image): image.datetime
        case .album(let album): album.datetime
        }
        return seconds.map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }
}

/// `{"data": …, "success": true, "status": 200}`.
struct ImgurEnvelope<Payload: Decodable>: Decodable {
    var data: Payload
}

/// The `data` of a tag page: its entries, and how many the whole tag holds.
struct TagPage: Sendable, Decodable {
    var items: [GalleryItem]
    /// The tag's size as the API states it (`total_items`), for "page N of about M".
    var totalItems: Int?

    enum CodingKeys: String, CodingKey {
        case items
        case totalItems = "total_items"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        items = try container.decode([GalleryItem].self, forKey: .items)
        totalItems = try? container.decodeIfPresent(Int.self, forKey: .totalItems)
    }
}
