import CLibXML2
import FoundationEssentials

/// The reader's cursor turned into feed structure, one node at a time.
struct FeedWalker {
    private let reader: xmlTextReaderPtr
    private let url: String
    /// Whether relative links have anything to resolve against (a feed read from a file or
    /// standard input without `--base-url` has not).
    private let hasBase: Bool
    private var kind: Feed.Kind?
    /// The format's reader, chosen by the root element.
    private var dialect: (any FeedDialect.Type)?
    private var title: String?
    /// The feed's own image (its logo, a podcast's cover), resolved.
    private var image: String?
    private var enclosures: [FeedEnclosure] = []
    /// Entries read to their end that offered a file: what a damaged feed is read for.
    private(set) var entriesRead = 0
    private var problems: [String] = []
    /// The credentials links carried in their userinfo, taken out of them, by the link.
    private var linkCredentials: [(url: String, credentials: URLCredentials)] = []
    /// The entry (Atom `entry`, RSS `item`) being read, and its depth; `unusable` holds its links
    /// that are no URL, reported once the entry's title is known.
    private var entry: OpenEntry?

    struct OpenEntry {
        var depth: Int32
        var title: String?
        var version: String?
        /// Atom `id`, RSS `guid`.
        var id: String?
        /// A docset's `identifier`: the same for every release, where Apple's ids name the version.
        var docsetIdentifier: String?
        /// Atom `updated`, RSS `pubDate`.
        var updated: String?
        /// The entry's web page: Atom's alternate link, RSS's `link`.
        var page: String?
        /// Media RSS's thumbnail, alt text and rating of the whole item.
        var thumbnail: String?
        var mediaDescription: String?
        var rating: String?
        /// URLs of a Media RSS group's renditions that were not chosen.
        var unchosenRenditions: Set<String> = []
        var found: [FeedEnclosure] = []
        var unusable: [String] = []

        init(depth: Int32) {
            self.depth = depth
        }
    }

    init(reader: xmlTextReaderPtr, url: String, hasBase: Bool, rendition: MediaRendition = .preferred) {
        self.reader = reader
        self.url = url
        self.hasBase = hasBase
        self.rendition = rendition
    }

    var feed: Feed? {
        guard let kind else { return nil }
        var feed = Feed(kind: kind, title: title, enclosures: enclosures, problems: problems, linkCredentials: linkCredentials)
        feed.image = image
        return feed
    }

    mutating func visit() throws(FeedError) {
        switch xmlTextReaderNodeType(reader) {
        case Int32(XML_READER_TYPE_DOCUMENT_TYPE.rawValue):
            // The DOCTYPE is taken out before parsing starts (FeedDoctype); this stays in case
            // libxml2 ever finds one the scan did not, late (its subset parsed) but not in use.
            throw FeedError(url: url, problem: "has a DOCTYPE mirror did not find; entities can reach local files")
        case Int32(XML_READER_TYPE_ELEMENT.rawValue):
            try element()
        case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
            endElement()
        default:
            break
        }
    }

    private mutating func element() throws(FeedError) {
        let node = FeedNode(
            name: string(xmlTextReaderConstLocalName(reader)) ?? "", namespace: string(xmlTextReaderConstNamespaceUri(reader)),
            depth: xmlTextReaderDepth(reader), isEmpty: xmlTextReaderIsEmptyElement(reader) == 1)
        guard let dialect else {
            guard let (dialect, kind) = FeedDialects.reading(root: node) else {
                throw FeedError(url: url, problem: "not an Atom, RSS or Dash feed (root element <\(node.name)>)")
            }
            self.dialect = dialect
            self.kind = kind
            dialect.root(node, in: &self)
            if node.isEmpty, let entry, entry.depth == node.depth { closeEntry() }
            return
        }
        if node.namespace == MediaRSS.namespace, entry != nil {
            MediaRSS.element(node, in: &self)
        } else if entry == nil, FeedImage.element(node, in: &self) {
            // A podcast's or a site's image, in a namespace every format may carry.
        } else {
            dialect.element(node, in: &self)
        }
        if node.isEmpty, let entry, entry.depth == node.depth { closeEntry() }
    }

    /// An element ends: a Media RSS content or group is complete, or the entry is.
    private mutating func endElement() {
        let depth = xmlTextReaderDepth(reader)
        MediaRSS.end(depth: depth, in: &self)
        if let entry, depth == entry.depth { closeEntry() }
    }

    // MARK: - What dialects build

    /// Opens an entry at `depth`, unless one is open (an entry quoted in another's content is
    /// content); true when it opened one.
    @discardableResult
    mutating func openEntry(at depth: Int32) -> Bool {
        guard entry == nil else { return false }
        entry = OpenEntry(depth: depth)
        return true
    }

    /// An RSS item: one met inside another open item means the other was never closed (libxml2's
    /// recovery nests the items after a tag left open): that one ends here. Whether an entry was opened.
    @discardableResult
    mutating func openItem(at depth: Int32) -> Bool {
        if entry != nil { closeEntry() }
        return openEntry(at: depth)
    }

    /// Remembers the URLs of a group's renditions that were not chosen.
    mutating func setUnchosenRenditions(_ urls: [String]) {
        let resolved = urls.compactMap(pageLink)
        entry?.unchosenRenditions.formUnion(resolved)
    }

    /// Whether `node` is a direct child of the open entry.
    func isInEntry(_ node: FeedNode) -> Bool {
        entry.map { node.depth == $0.depth + 1 } ?? false
    }

    var isInAnEntry: Bool { entry != nil }

    mutating func setFeedTitle(_ value: String?) {
        if title == nil { title = value }
    }

    /// The feed's own image, the first one given.
    mutating func setFeedImage(_ href: String?) {
        guard image == nil, let href else { return }
        image = pageLink(href)
    }

    mutating func setEntry(_ field: WritableKeyPath<OpenEntry, String?>, _ value: String?) {
        entry?[keyPath: field] = value
    }

    /// The entry's web page, the first one given.
    mutating func setEntryPage(_ href: String) {
        let page = pageLink(href)
        if entry?.page == nil { entry?.page = page }
    }

    /// A Dash archive's URL: its first is the file, the others mirrors of it.
    mutating func addDashURL(_ href: String) {
        guard let resolved = resolve(href) else { return }
        if entry?.found.isEmpty == true {
            entry?.found.append(FeedEnclosure(url: resolved))
        } else {
            entry?.found[0].mirrors.append(resolved)
        }
    }

    /// A file of the open entry, with what the feed says of it.
    mutating func addFile(_ file: FeedFile) {
        guard let resolved = resolve(file.href) else { return }
        let size = file.length.flatMap { Int64($0.trimming(.spaces)) }.flatMap { $0 > 0 ? $0 : nil }
        var enclosure = FeedEnclosure(url: resolved, length: size, type: file.type)
        enclosure.preview = file.thumbnail.flatMap(pageLink)
        enclosure.medium = file.medium
        enclosure.mediaDescription = file.description
        enclosure.rating = file.rating
        enclosure.isMediaRSS = file.isMediaRSS
        entry?.found.append(enclosure)
    }

    /// The open entry's own thumbnail (Media RSS's on the item): the preview of files without one.
    mutating func setEntryThumbnail(_ href: String) {
        let link = pageLink(href)
        if entry?.thumbnail == nil { entry?.thumbnail = link }
    }

    /// The open entry's own alt text or rating (Media RSS's on the item), the first given: those of
    /// files without one.
    mutating func setEntryMedia(_ field: WritableKeyPath<OpenEntry, String?>, _ value: String?) {
        if entry?[keyPath: field] == nil { entry?[keyPath: field] = value }
    }

    /// Media RSS's state: the content and group open in the entry.
    var media = MediaRSS.State()
    /// Which rendition of a Media RSS group is mirrored.
    let rendition: MediaRendition

    private mutating func closeEntry() {
        MediaRSS.closeAll(in: &self)
        guard var open = entry else { return }
        // A group's renditions not chosen are not mirrored, even where an enclosure names one.
        open.found.removeAll { open.unchosenRenditions.contains($0.url) && !$0.isMediaRSS }
        // One file the entry lists twice (an enclosure and a Media RSS content) is one download,
        // the enclosure's whichever comes first (its identity, type and length), with what Media
        // RSS says of it; the item's own thumbnail is the preview of those without one.
        var merged: [FeedEnclosure] = []
        for file in open.found {
            guard let index = merged.firstIndex(where: { $0.url == file.url }) else {
                merged.append(file)
                continue
            }
            var other = file
            if merged[index].isMediaRSS, !file.isMediaRSS { swap(&merged[index], &other) }
            merged[index].preview = merged[index].preview ?? other.preview
            merged[index].medium = merged[index].medium ?? other.medium
            merged[index].mediaDescription = merged[index].mediaDescription ?? other.mediaDescription
            merged[index].rating = merged[index].rating ?? other.rating
            merged[index].length = merged[index].length ?? other.length
        }
        open.found = merged
        if !open.found.isEmpty { entriesRead += 1 }
        for index in open.found.indices {
            open.found[index].preview = open.found[index].preview ?? open.thumbnail
            open.found[index].mediaDescription = open.found[index].mediaDescription ?? open.mediaDescription
            open.found[index].rating = open.found[index].rating ?? open.rating
        }
        // An entry's several enclosures (an episode as MP3 and as MP4) are told apart by type,
        // which a new release keeps, rather than by their order, which it may not. Media RSS's
        // files are told apart by their URL, so that reading them changes no enclosure's item.
        let classic = open.found.filter { !$0.isMediaRSS }
        let types = classic.map { $0.type ?? "" }
        let typesTell = Set(types).count == types.count
        // A guid may be a private feed's link: its login as `***`, as migration 7 left stored items.
        let entryID = (open.docsetIdentifier ?? open.id).map(URLUserinfo.redacting(in:))
        var classicIndex = 0
        for var enclosure in open.found {
            enclosure.entryTitle = open.title
            enclosure.version = open.version
            enclosure.updated = open.updated
            enclosure.entryPage = open.page
            if enclosure.isMediaRSS {
                enclosure.entryID = entryID.map { "\($0)#media:\(Self.tag(enclosure.url))" }
            } else {
                let index = classicIndex
                classicIndex += 1
                enclosure.entryID = entryID.map { id in
                    guard classic.count > 1 else { return id }
                    return typesTell ? "\(id)#\(types[index])" : "\(id)#\(index)"
                }
            }
            enclosures.append(enclosure)
        }
        for link in open.unusable {
            let of = open.title.map { " of “\($0)”" } ?? ""
            if !hasBase && !link.contains(":") {
                problems.append("skipped an enclosure\(of) whose link is relative, with no base URL to resolve it against (give --base-url): \(link)")
            } else {
                problems.append("skipped an enclosure\(of) whose link is not a URL: \(link)")
            }
        }
        entry = nil
    }

    /// A short tag of `text` that stays the same from run to run (FNV-1a, 64 bits, in hex).
    static func tag(_ text: String) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01B3
        }
        return String(hash, radix: 16)
    }

    // MARK: - libxml2 access

    /// An entry's web page, resolved as an enclosure is; one that is no URL is left out quietly
    /// (it is only metadata: nothing is fetched from it).
    func pageLink(_ href: String) -> String? {
        let trimmed = href.trimming(.spacesAndNewlines)
        guard !trimmed.isEmpty else { return nil }
        return (build(trimmed) ?? build(Self.escapeForbiddenCharacters(trimmed))).map { URLUserinfo.split($0).url }
    }

    /// `href` resolved against the element's base URI (`xml:base`, else the feed's URL); escapes
    /// are kept as written. Links with spaces or non-ASCII characters, which RFC 3986 forbids but
    /// feeds contain, are percent-encoded first. Nil when that fails too; the entry notes the link.
    private mutating func resolve(_ href: String) -> String? {
        let trimmed = href.trimming(.spacesAndNewlines)
        guard !trimmed.isEmpty else { return nil }
        if let resolved = build(trimmed) ?? build(Self.escapeForbiddenCharacters(trimmed)) {
            // A link's own userinfo (or one a base given with it passed on) serves the request;
            // the link is named, stored and written without it.
            let (url, credentials) = URLUserinfo.split(resolved)
            if let credentials { linkCredentials.append((url, credentials)) }
            return url
        }
        // No parser took it, so its userinfo's end is a guess: a password's `/`, `?` or `#` broke it.
        entry?.unusable.append(URLUserinfo.redactedArgument(trimmed))
        return nil
    }

    /// libxml2's resolution of `href`, when it is an http(s) URL with a host: mirror fetches
    /// nothing else, and a relative result (left by an `xml:base` that is no URI) would reach curl,
    /// which takes its first segment for a host name.
    private func build(_ href: String) -> String? {
        let base = xmlTextReaderConstBaseUri(reader)
        let built: UnsafeMutablePointer<xmlChar>? = href.withCString { text in
            text.withMemoryRebound(to: xmlChar.self, capacity: href.utf8.count + 1) { xmlBuildURI($0, base) }
        }
        guard let built else { return nil }
        defer { mirror_xml_free(built) }
        let url = String(cString: built)
        let scheme = url.prefix { $0 != ":" }.lowercased()
        return (scheme == "http" || scheme == "https") && !URLAuthority.of(url).isEmpty ? url : nil
    }

    /// Percent-encodes the bytes a URI may not contain (space, controls, non-ASCII, `"<>\^`{|}`),
    /// `[` and `]` outside an IPv6 host (`[HD] ep.mp4`, `?ids[]=1`) and a `%` that starts no
    /// escape (`100%.mp3`), leaving existing escapes and reserved characters alone.
    static func escapeForbiddenCharacters(_ text: String) -> String {
        let bytes = Array(text.utf8)
        let host = hostRange(of: bytes)
        var result = ""
        for (index, byte) in bytes.enumerated() {
            let isAllowed = switch byte {
            case UInt8(ascii: "["), UInt8(ascii: "]"): host.contains(index)
            case UInt8(ascii: "%"):
                index + 2 < bytes.count && String.hexValue(bytes[index + 1]) != nil && String.hexValue(bytes[index + 2]) != nil
            default: byte > 0x20 && byte < 0x7F && !Array("\"<>\\^`{|}".utf8).contains(byte)
            }
            if isAllowed {
                result.append(Character(UnicodeScalar(byte)))
            } else {
                result += CFormat.string("%%%02X", byte)
            }
        }
        return result
    }

    /// Where the authority of `//host/…` or `scheme://host/…` lies (empty for a relative path):
    /// the only place brackets belong, around an IPv6 address.
    private static func hostRange(of bytes: [UInt8]) -> Range<Int> {
        let slashes = Array("//".utf8)
        let start: Int
        if bytes.starts(with: slashes) {
            start = 2
        } else if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[(colon + 1)...].starts(with: slashes),
                  bytes[..<colon].allSatisfy({ isSchemeByte($0) }) {
            start = colon + 3
        } else {
            return 0..<0
        }
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        return start..<(end ?? bytes.count)
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        byte.isASCIILetterOrDigit || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    func attribute(_ name: String) -> String? {
        guard let value = xmlTextReaderGetAttribute(reader, name) else { return nil }
        defer { mirror_xml_free(value) }
        return String(cString: value)
    }

    /// The attribute `name` of `namespace` (`rdf:resource` whatever its prefix).
    func attribute(_ name: String, namespace: String) -> String? {
        guard let value = xmlTextReaderGetAttributeNs(reader, name, namespace) else { return nil }
        defer { mirror_xml_free(value) }
        return String(cString: value)
    }

    /// The element's text content, trimmed; nil when empty.
    func text() -> String? {
        // A reader walking a recovered tree cannot read ahead in the stream: the node's own
        // content is there.
        guard let value = xmlTextReaderReadString(reader) ?? xmlNodeGetContent(xmlTextReaderCurrentNode(reader)) else {
            return nil
        }
        defer { mirror_xml_free(value) }
        let text = String(cString: value).trimming(.spacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    private func string(_ pointer: UnsafePointer<xmlChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}
