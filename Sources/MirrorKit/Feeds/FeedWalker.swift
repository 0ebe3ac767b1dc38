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
    private var title: String?
    private var enclosures: [FeedEnclosure] = []
    private var problems: [String] = []
    /// The credentials links carried in their userinfo, taken out of them, by the link.
    private var linkCredentials: [(url: String, credentials: URLCredentials)] = []
    /// The entry (Atom `entry`, RSS `item`) being read, and its depth; `unusable` holds its links
    /// that are no URL, reported once the entry's title is known.
    private var entry: OpenEntry?

    private struct OpenEntry {
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
        var found: [FeedEnclosure] = []
        var unusable: [String] = []

        init(depth: Int32) {
            self.depth = depth
        }
    }

    init(reader: xmlTextReaderPtr, url: String, hasBase: Bool) {
        self.reader = reader
        self.url = url
        self.hasBase = hasBase
    }

    var feed: Feed? {
        guard let kind else { return nil }
        return Feed(kind: kind, title: title, enclosures: enclosures, problems: problems, linkCredentials: linkCredentials)
    }

    mutating func visit() throws(FeedError) {
        switch xmlTextReaderNodeType(reader) {
        case Int32(XML_READER_TYPE_DOCUMENT_TYPE.rawValue):
            // FeedProlog refuses a DOCTYPE before parsing starts; this stays in case libxml2 ever
            // finds one the scan did not, late (its subset parsed) but not with entities in use.
            throw FeedError(url: url, problem: FeedProlog.doctypeRefusal)
        case Int32(XML_READER_TYPE_ELEMENT.rawValue):
            try element()
        case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
            if let entry, xmlTextReaderDepth(reader) == entry.depth { closeEntry() }
        default:
            break
        }
    }

    private mutating func element() throws(FeedError) {
        let name = string(xmlTextReaderConstLocalName(reader)) ?? ""
        let namespace = string(xmlTextReaderConstNamespaceUri(reader))
        let depth = xmlTextReaderDepth(reader)
        guard let kind else {
            switch (name, namespace) {
            case ("feed", FeedReader.atomNamespace?): kind = .atom
            case ("rss", nil): kind = .rss
            case ("entry", nil):
                kind = .dash
                entry = OpenEntry(depth: depth)
            default: throw FeedError(url: url, problem: "not an Atom, RSS or Dash feed (root element <\(name)>)")
            }
            return
        }
        switch kind {
        case .atom: atomElement(name, namespace, depth)
        case .rss: rssElement(name, namespace, depth)
        case .dash: dashElement(name, depth)
        }
        if xmlTextReaderIsEmptyElement(reader) == 1, let entry, entry.depth == depth { closeEntry() }
    }

    private mutating func atomElement(_ name: String, _ namespace: String?, _ depth: Int32) {
        let isAtom = namespace == FeedReader.atomNamespace
        if isAtom && name == "entry" {
            // An entry quoted inside another's content is content, not a second entry.
            if entry == nil { entry = OpenEntry(depth: depth) }
        } else if isAtom && name == "title" {
            let value = text()
            if let open = entry, depth == open.depth + 1 { entry?.title = value } else if depth == 1 { title = value }
        } else if isAtom && name == "link", entry != nil {
            // A link without rel is an alternate link (RFC 4287 §4.2.7.2).
            guard let href = attribute("href") else { return }
            switch attribute("rel") {
            case "enclosure": addEnclosure(href: href, length: attribute("length"), type: attribute("type"))
            case nil, "alternate":
                let page = pageLink(href)
                if entry?.page == nil { entry?.page = page }
            default: break
            }
        } else if let open = entry, depth == open.depth + 1, isAtom && (name == "id" || name == "updated") {
            let value = text()
            if name == "id" { entry?.id = value } else { entry?.updated = value }
        } else if namespace == FeedReader.docsetNamespace && name == "version", entry != nil {
            let value = text()
            entry?.version = value
        } else if namespace == FeedReader.docsetNamespace && name == "identifier", entry != nil {
            let value = text()
            entry?.docsetIdentifier = value
        }
    }

    private mutating func rssElement(_ name: String, _ namespace: String?, _ depth: Int32) {
        guard namespace == nil else { return }
        switch name {
        case "item":
            if entry == nil { entry = OpenEntry(depth: depth) }
        case "guid", "pubDate":
            guard let open = entry, depth == open.depth + 1 else { return }
            let value = text()
            if name == "guid" { entry?.id = value } else { entry?.updated = value }
        case "title":
            let value = text()
            if let open = entry, depth == open.depth + 1 { entry?.title = value } else if entry == nil && title == nil { title = value }
        case "link":
            guard let open = entry, depth == open.depth + 1, let href = text() else { return }
            let page = pageLink(href)
            entry?.page = page
        case "enclosure" where entry != nil:
            guard let href = attribute("url") else { return }
            addEnclosure(href: href, length: attribute("length"), type: attribute("type"))
        default:
            break
        }
    }

    /// Dash: `<version>` and the mirror `<url>`s of one archive, directly under the root.
    private mutating func dashElement(_ name: String, _ depth: Int32) {
        guard let open = entry, depth == open.depth + 1 else { return }
        switch name {
        case "version":
            let value = text()
            entry?.version = value
        case "url":
            guard let href = text(), let resolved = resolve(href) else { return }
            if entry?.found.isEmpty == true {
                entry?.found.append(FeedEnclosure(url: resolved))
            } else {
                entry?.found[0].mirrors.append(resolved)
            }
        default:
            break
        }
    }

    private mutating func addEnclosure(href: String, length: String?, type: String?) {
        guard let resolved = resolve(href) else { return }
        let size = length.flatMap { Int64($0.trimming(.spaces)) }.flatMap { $0 > 0 ? $0 : nil }
        entry?.found.append(FeedEnclosure(url: resolved, length: size, type: type))
    }

    private mutating func closeEntry() {
        guard let open = entry else { return }
        // An entry's several enclosures (an episode as MP3 and as MP4) are told apart by type,
        // which a new release keeps, rather than by their order, which it may not.
        let types = open.found.map { $0.type ?? "" }
        let typesTell = Set(types).count == types.count
        for (index, var enclosure) in open.found.enumerated() {
            enclosure.entryTitle = open.title
            enclosure.version = open.version
            enclosure.updated = open.updated
            enclosure.entryPage = open.page
            enclosure.entryID = (open.docsetIdentifier ?? open.id).map { id in
                guard open.found.count > 1 else { return id }
                return typesTell ? "\(id)#\(types[index])" : "\(id)#\(index)"
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

    // MARK: - libxml2 access

    /// An entry's web page, resolved as an enclosure is; one that is no URL is left out quietly
    /// (it is only metadata: nothing is fetched from it).
    private func pageLink(_ href: String) -> String? {
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
        entry?.unusable.append(URLUserinfo.redacted(trimmed))
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
    /// leaving existing escapes and reserved characters alone.
    static func escapeForbiddenCharacters(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            if byte > 0x20 && byte < 0x7F && !Array("\"<>\\^`{|}".utf8).contains(byte) {
                result.append(Character(UnicodeScalar(byte)))
            } else {
                result += CFormat.string("%%%02X", byte)
            }
        }
        return result
    }

    private func attribute(_ name: String) -> String? {
        guard let value = xmlTextReaderGetAttribute(reader, name) else { return nil }
        defer { mirror_xml_free(value) }
        return String(cString: value)
    }

    /// The element's text content, trimmed; nil when empty.
    private func text() -> String? {
        guard let value = xmlTextReaderReadString(reader) else { return nil }
        defer { mirror_xml_free(value) }
        let text = String(cString: value).trimming(.spacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    private func string(_ pointer: UnsafePointer<xmlChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}
