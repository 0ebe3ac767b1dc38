/// Which rendition of a Media RSS `media:group` (one video in several sizes) is mirrored.
package enum MediaRendition: String, Sendable, CaseIterable {
    /// The one marked `isDefault="true"`, else the largest.
    case preferred = "default"
    /// The largest by `fileSize`, else height, else bitrate.
    case largest
    /// The smallest by the same measures.
    case smallest
}

/// Media RSS (Yahoo's `http://search.yahoo.com/mrss/`), as Mastodon, PeerTube, Pixelfed, Flickr
/// and podcast hosts write it, in RSS or Atom: each `media:content` is a file of the entry, with
/// its `fileSize` as the stated size; a `media:group` holds renditions of one file, of which one is
/// mirrored; `media:thumbnail` (on a content, a group or the entry) is its preview, and
/// `media:description` and `media:rating` (on the same three) go into the sidecar.
enum MediaRSS {
    static let namespace = "http://search.yahoo.com/mrss/"

    /// A content or group being read, with what its children said.
    struct Open {
        var depth: Int32
        var file: FeedFile?
        var isDefault = false
        /// What orders renditions: the stated size, height and bitrate.
        var measures: [Int64] = []
        var renditions: [Open] = []
    }

    struct State {
        var content: Open?
        var group: Open?

        /// Changes what the open content says of its file, else what the open group says of
        /// its renditions; false when neither is open.
        mutating func update(_ change: (inout FeedFile) -> Void) -> Bool {
            if var open = content, var file = open.file {
                change(&file)
                open.file = file
                content = open
                return true
            }
            if var open = group {
                var file = open.file ?? FeedFile(href: "")
                change(&file)
                open.file = file
                group = open
                return true
            }
            return false
        }
    }

    static func element(_ node: FeedNode, in walker: inout FeedWalker) {
        switch node.name {
        case "content":
            // A player (Flash) or a live stream is no file to keep.
            guard let href = walker.attribute("url"), walker.attribute("type") != "application/x-shockwave-flash",
                  walker.attribute("expression") != "nonstop" else { return }
            let reader = walker
            func number(_ name: String) -> Int64 { reader.attribute(name).flatMap { Int64($0.trimming(.spaces)) } ?? 0 }
            walker.media.content = Open(
                depth: node.depth,
                file: FeedFile(
                    href: href, length: walker.attribute("fileSize"), type: walker.attribute("type"), medium: walker.attribute("medium"),
                    isMediaRSS: true),
                isDefault: walker.attribute("isDefault") == "true",
                measures: [number("fileSize"), number("height"), number("bitrate")])
            if node.isEmpty { end(depth: node.depth, in: &walker) }
        case "group":
            walker.media.group = node.isEmpty ? nil : Open(depth: node.depth)
        case "thumbnail":
            guard let href = walker.attribute("url") else { return }
            if !walker.media.update({ $0.thumbnail = $0.thumbnail ?? href }) { walker.setEntryThumbnail(href) }
        case "description", "rating":
            let value = walker.text()
            let field: WritableKeyPath<FeedFile, String?> = node.name == "description" ? \.description : \.rating
            if !walker.media.update({ $0[keyPath: field] = value }) {
                walker.setEntryMedia(node.name == "description" ? \.mediaDescription : \.rating, value)
            }
        default:
            break
        }
    }

    /// An element at `depth` ends: a content is complete (a file of the entry, or a rendition of
    /// the group), or a group is (its chosen rendition a file of the entry).
    static func end(depth: Int32, in walker: inout FeedWalker) {
        if let content = walker.media.content, content.depth == depth {
            walker.media.content = nil
            if walker.media.group != nil {
                walker.media.group?.renditions.append(content)
            } else if let file = content.file {
                walker.addFile(file)
            }
        } else if let group = walker.media.group, group.depth == depth {
            walker.media.group = nil
            guard let choice = choose(from: group.renditions, walker.rendition), var chosen = choice.file else { return }
            walker.setUnchosenRenditions(group.renditions.compactMap(\.file?.href).filter { $0 != chosen.href })
            // What the group says applies to the rendition that does not say it itself.
            chosen.thumbnail = chosen.thumbnail ?? group.file?.thumbnail
            chosen.description = chosen.description ?? group.file?.description
            chosen.rating = chosen.rating ?? group.file?.rating
            walker.addFile(chosen)
        }
    }

    /// Ends whatever is still open when its entry ends (a document cut short).
    static func closeAll(in walker: inout FeedWalker) {
        if let content = walker.media.content { end(depth: content.depth, in: &walker) }
        if let group = walker.media.group { end(depth: group.depth, in: &walker) }
    }

    static func choose(from renditions: [Open], _ policy: MediaRendition) -> Open? {
        // By the first measure every rendition states (a missing one is not a small one), else
        // in the feed's order.
        let measure = (0..<3).first { index in renditions.allSatisfy { $0.measures[index] > 0 } }
        let bySize = measure.map { index in renditions.sorted { $0.measures[index] < $1.measures[index] } } ?? renditions
        switch policy {
        case .preferred: return renditions.first(where: \.isDefault) ?? bySize.last
        case .largest: return bySize.last
        case .smallest: return bySize.first
        }
    }
}
