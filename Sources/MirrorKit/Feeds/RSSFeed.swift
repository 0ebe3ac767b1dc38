/// RSS 0.91, 0.92 and 2.0, without a namespace or in Userland's (`http://backend.userland.com/rss2`):
/// `item`s in the `channel`, each with `enclosure url length type`, `guid`, `pubDate` and `link`.
enum RSSDialect: FeedDialect {
    static let userlandNamespace = "http://backend.userland.com/rss2"

    static func element(_ node: FeedNode, in walker: inout FeedWalker) {
        guard node.namespace == nil || node.namespace == userlandNamespace else { return }
        switch node.name {
        case "item":
            walker.openItem(at: node.depth)
        case "guid" where walker.isInEntry(node):
            walker.setEntry(\.id, walker.text())
        case "pubDate" where walker.isInEntry(node):
            walker.setEntry(\.updated, walker.text())
        case "title":
            let value = walker.text()
            if walker.isInEntry(node) { walker.setEntry(\.title, value) } else if !walker.isInAnEntry { walker.setFeedTitle(value) }
        case "link" where walker.isInEntry(node):
            if let href = walker.text() { walker.setEntryPage(href) }
        case "enclosure" where walker.isInAnEntry:
            guard let href = walker.attribute("url") else { return }
            walker.addFile(FeedFile(href: href, length: walker.attribute("length"), type: walker.attribute("type")))
        case "url" where node.depth == 3 && !walker.isInAnEntry:
            // rss > channel > image > url: the channel's image.
            walker.setFeedImage(walker.text())
        default:
            break
        }
    }
}

/// RSS 1.0 and 0.90, RDF documents (Movable Type, Debian's security feed, many academic sites):
/// `item`s beside the `channel`, named by `rdf:about`, dated by Dublin Core's `dc:date`, and their
/// files as mod_enclosure's `enc:enclosure rdf:resource` (with `enc:length`, `enc:type`).
enum RDFDialect: FeedDialect {
    static let rdfNamespace = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    static let rss10Namespace = "http://purl.org/rss/1.0/"
    static let rss090Namespace = "http://my.netscape.com/rdf/simple/0.9/"
    static let dublinCoreNamespace = "http://purl.org/dc/elements/1.1/"
    static let enclosureNamespace = "http://purl.oclc.org/net/rss_2.0/enc#"

    static func element(_ node: FeedNode, in walker: inout FeedWalker) {
        switch (node.name, node.namespace) {
        case ("item", rss10Namespace?), ("item", rss090Namespace?):
            if walker.openItem(at: node.depth) { walker.setEntry(\.id, walker.attribute("about", namespace: rdfNamespace)) }
        case ("title", rss10Namespace?), ("title", rss090Namespace?):
            let value = walker.text()
            if walker.isInEntry(node) { walker.setEntry(\.title, value) } else if !walker.isInAnEntry { walker.setFeedTitle(value) }
        case ("link", rss10Namespace?) where walker.isInEntry(node), ("link", rss090Namespace?) where walker.isInEntry(node):
            if let href = walker.text() { walker.setEntryPage(href) }
        case ("url", rss10Namespace?) where node.depth == 2 && !walker.isInAnEntry, ("url", rss090Namespace?) where node.depth == 2 && !walker.isInAnEntry:
            // rdf:RDF > image > url.
            walker.setFeedImage(walker.text())
        case ("date", dublinCoreNamespace?) where walker.isInEntry(node):
            walker.setEntry(\.updated, walker.text())
        case ("enclosure", enclosureNamespace?) where walker.isInAnEntry:
            guard let href = walker.attribute("resource", namespace: rdfNamespace) else { return }
            walker.addFile(FeedFile(
                href: href, length: walker.attribute("length", namespace: enclosureNamespace),
                type: walker.attribute("type", namespace: enclosureNamespace)))
        default:
            break
        }
    }
}
