/// Atom 1.0 (RFC 4287), and Atom 0.3 as Blogger and early WordPress wrote it: entries with
/// `link rel="enclosure"`, an alternate link for the page, `id`, and `updated` (0.3: `modified`).
/// Apple's docset feeds add `docset:version` and `docset:identifier`.
enum AtomDialect: FeedDialect {
    static let namespace = "http://www.w3.org/2005/Atom"
    static let namespace03 = "http://purl.org/atom/ns#"
    static let docsetNamespace = "http://developer.apple.com/rss/docset_extensions"

    static func element(_ node: FeedNode, in walker: inout FeedWalker) {
        let isAtom = node.namespace == namespace || node.namespace == namespace03
        if isAtom {
            atomElement(node, in: &walker)
        } else if node.namespace == docsetNamespace, walker.isInAnEntry {
            switch node.name {
            case "version": walker.setEntry(\.version, walker.text())
            case "identifier": walker.setEntry(\.docsetIdentifier, walker.text())
            default: break
            }
        }
    }

    private static func atomElement(_ node: FeedNode, in walker: inout FeedWalker) {
        switch node.name {
        case "entry":
            walker.openEntry(at: node.depth)
        case "title":
            let value = walker.text()
            if walker.isInEntry(node) { walker.setEntry(\.title, value) } else if node.depth == 1 { walker.setFeedTitle(value) }
        case "link" where walker.isInAnEntry:
            // A link without rel is an alternate link (RFC 4287 §4.2.7.2).
            guard let href = walker.attribute("href") else { return }
            switch walker.attribute("rel") {
            case "enclosure": walker.addFile(FeedFile(href: href, length: walker.attribute("length"), type: walker.attribute("type")))
            case nil, "alternate": walker.setEntryPage(href)
            default: break
            }
        case "logo" where node.depth == 1, "icon" where node.depth == 1:
            walker.setFeedImage(walker.text())
        case "id" where walker.isInEntry(node):
            walker.setEntry(\.id, walker.text())
        case "updated" where walker.isInEntry(node), "modified" where walker.isInEntry(node):
            walker.setEntry(\.updated, walker.text())
        default:
            break
        }
    }
}
