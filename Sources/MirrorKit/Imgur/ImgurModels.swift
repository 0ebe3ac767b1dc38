/// An image as the Imgur API describes it, in a tag page, an album or an album's image list.
///
/// Only the fields mirror needs are decoded, and each leniently: the API has changed shapes over
/// the years (`nsfw` null, `edited` a string), and one odd field must not lose a whole page.
public struct ImgurImage: Sendable, Hashable, Codable {
    public var id: String
    public var type: String?
    public var animated: Bool
    public var size: Int64?
    public var mp4Size: Int64?
    public var link: String?
    public var datetime: Int64?
    public var title: String?

    public init(
        id: String, type: String? = nil, animated: Bool = false, size: Int64? = nil, mp4Size: Int64? = nil,
        link: String? = nil, datetime: Int64? = nil, title: String? = nil
    ) {
        self.id = id
        self.type = type
        self.animated = animated
        self.size = size
        self.mp4Size = mp4Size
        self.link = link
        self.datetime = datetime
        self.title = title
    }

    enum CodingKeys: String, CodingKey {
        case id, type, animated, size, link, datetime, title
        case mp4Size = "mp4_size"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        type = try? container.decodeIfPresent(String.self, forKey: .type)
        animated = (try? container.decodeIfPresent(Bool.self, forKey: .animated)) ?? false
        size = try? container.decodeIfPresent(Int64.self, forKey: .size)
        mp4Size = try? container.decodeIfPresent(Int64.self, forKey: .mp4Size)
        link = try? container.decodeIfPresent(String.self, forKey: .link)
        datetime = try? container.decodeIfPresent(Int64.self, forKey: .datetime)
        title = try? container.decodeIfPresent(String.self, forKey: .title)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(type, forKey: .type)
        try container.encode(animated, forKey: .animated)
        try container.encodeIfPresent(size, forKey: .size)
        try container.encodeIfPresent(mp4Size, forKey: .mp4Size)
        try container.encodeIfPresent(link, forKey: .link)
        try container.encodeIfPresent(datetime, forKey: .datetime)
        try container.encodeIfPresent(title, forKey: .title)
    }
}

/// An album in a tag page. `images` is absent in older responses and may hold fewer than
/// `imagesCount` entries in newer ones.
public struct ImgurAlbum: Sendable, Hashable, Decodable {
    public var id: String
    public var cover: String?
    public var imagesCount: Int?
    public var images: [ImgurImage]?
    public var title: String?

    enum CodingKeys: String, CodingKey {
        case id, cover, images, title
        case imagesCount = "images_count"
    }

    /// The embedded images, when they are all there.
    public var completeImages: [ImgurImage]? {
        guard let images, images.count >= (imagesCount ?? 0) else { return nil }
        return images
    }
}

/// One entry of a gallery listing.
public enum GalleryItem: Sendable, Hashable, Decodable {
    case image(ImgurImage)
    case album(ImgurAlbum)

    enum CodingKeys: String, CodingKey {
        case isAlbum = "is_album"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if try container.decodeIfPresent(Bool.self, forKey: .isAlbum) == true {
            self = .album(try ImgurAlbum(from: decoder))
        } else {
            self = .image(try ImgurImage(from: decoder))
        }
    }

    public var id: String {
        switch self {
        case .image(let image): image.id
        case .album(let album): album.id
        }
    }
}

/// `{"data": …, "success": true, "status": 200}`.
struct ImgurEnvelope<Payload: Decodable>: Decodable {
    var data: Payload
}

/// The `data` of a tag page: its entries, and how many the whole tag holds.
public struct TagPage: Sendable, Decodable {
    public var items: [GalleryItem]
    /// The tag's size as the API states it (`total_items`), for "page N of about M".
    public var totalItems: Int?

    enum CodingKeys: String, CodingKey {
        case items
        case totalItems = "total_items"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        items = try container.decode([GalleryItem].self, forKey: .items)
        totalItems = try? container.decodeIfPresent(Int.self, forKey: .totalItems)
    }
}
