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
