/// An element as the reader meets it: its local name, namespace URI and depth.
struct FeedNode {
    var name: String
    var namespace: String?
    var depth: Int32
    /// `<x/>`: no end element follows.
    var isEmpty: Bool
}

/// A file an entry offers, as its format states it: a link and what the feed says of it.
struct FeedFile {
    var href: String
    /// The stated size, as written (`length`, `fileSize`).
    var length: String?
    var type: String?
    /// Media RSS: the thumbnail, the kind (`image`, `video`, `audio`…), the alt text, the rating.
    var thumbnail: String?
    var medium: String?
    var description: String?
    var rating: String?
    var isMediaRSS = false
}

/// One feed format's reader: which elements open an entry and say what of it. The walker keeps
/// the state (the entry being read, links resolved); a dialect only reads elements into it.
protocol FeedDialect {
    /// The root element: the one that chose this dialect.
    static func root(_ node: FeedNode, in walker: inout FeedWalker)
    /// Any other element (Media RSS's excepted, which every dialect shares).
    static func element(_ node: FeedNode, in walker: inout FeedWalker)
}

extension FeedDialect {
    static func root(_ node: FeedNode, in walker: inout FeedWalker) {}
}

/// The formats read, by their root element.
enum FeedDialects {
    static func reading(root node: FeedNode) -> (any FeedDialect.Type, Feed.Kind)? {
        switch (node.name, node.namespace) {
        case ("feed", AtomDialect.namespace?), ("feed", AtomDialect.namespace03?): (AtomDialect.self, .atom)
        case ("rss", nil), ("rss", RSSDialect.userlandNamespace?): (RSSDialect.self, .rss)
        case ("RDF", RDFDialect.rdfNamespace?): (RDFDialect.self, .rss)
        case ("entry", nil): (DashDialect.self, .dash)
        default: nil
        }
    }
}

/// The feed's own image, outside any entry: a podcast's `itunes:image href` and the
/// `webfeeds:icon` Feedly reads, which any format may carry. (RSS's `image` and Atom's `logo` are
/// their readers'.)
enum FeedImage {
    static let itunesNamespace = "http://www.itunes.com/dtds/podcast-1.0.dtd"
    static let webfeedsNamespace = "http://webfeeds.org/rss/1.0"

    /// Whether `node` was one of these (read into the walker).
    static func element(_ node: FeedNode, in walker: inout FeedWalker) -> Bool {
        switch (node.name, node.namespace) {
        case ("image", itunesNamespace?): walker.setFeedImage(walker.attribute("href"))
        case ("icon", webfeedsNamespace?): walker.setFeedImage(walker.text())
        default: return false
        }
        return true
    }
}
