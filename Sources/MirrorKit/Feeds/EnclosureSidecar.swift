/// What a feed enclosure's sidecar (`meta/enclosures/<file name>.json`) holds: the feed's title,
/// the entry's title, id (a docset's identifier where it has one), version, updated and web page,
/// the enclosure's links, type and stated length, and the feeds that listed it.
struct EnclosureSidecar: Encodable {
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
    var sources: [String]
    /// Media RSS: the kind of file, its alt text, its rating and its thumbnail's URL.
    var medium: String?
    var description: String?
    var rating: String?
    var preview: String?

    enum CodingKeys: String, CodingKey {
        case title, id, version, updated, page, links, type, length, file, sources, medium, description, rating, preview
        case feedTitle = "feed_title"
        case feedKind = "feed_kind"
    }

    /// The sidecar's name, after the enclosure's file in `enclosures/`.
    static func name(of fileName: String) -> String { "enclosures/\(fileName).json" }

    init(_ enclosure: FeedEnclosure, feed: Feed, fileName: String, sources: [String]) {
        feedTitle = feed.title
        feedKind = feed.kind.rawValue
        title = enclosure.entryTitle
        id = enclosure.entryID
        version = enclosure.version
        updated = enclosure.updated
        page = enclosure.entryPage
        links = [enclosure.url] + enclosure.mirrors
        type = enclosure.type
        length = enclosure.length
        file = "enclosures/\(fileName)"
        self.sources = sources
        medium = enclosure.medium
        description = enclosure.mediaDescription
        rating = enclosure.rating
        preview = enclosure.preview
    }
}
