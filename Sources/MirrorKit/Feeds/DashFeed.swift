/// Dash's docset feeds: the root is the one entry, its `<version>` and the mirror `<url>`s of one
/// archive directly under it.
enum DashDialect: FeedDialect {
    static func root(_ node: FeedNode, in walker: inout FeedWalker) {
        walker.openEntry(at: node.depth)
    }

    static func element(_ node: FeedNode, in walker: inout FeedWalker) {
        guard walker.isInEntry(node) else { return }
        switch node.name {
        case "version": walker.setEntry(\.version, walker.text())
        case "url": if let href = walker.text() { walker.addDashURL(href) }
        default: break
        }
    }
}
