import FoundationEssentials

/// What a user names on the command line or in an input file: a tag, or any Imgur URL as a
/// browser shows it (with or without its scheme, `www.` or `m.`, a title slug before the id).
package enum ImgurAddress: Sendable, Equatable, CustomStringConvertible {
    case tag(String)
    case album(String)
    case post(String)
    case image(String)

    /// The forms accepted, for the error that refuses a string.
    package static let acceptedForms =
        "a tag (cats or #cats) or an Imgur URL: imgur.com/t/TAG, imgur.com/a/ID, imgur.com/gallery/ID, imgur.com/ID or i.imgur.com/ID.jpg (a feed goes to 'mirror feed URL')"

    /// Reads `text`; the error says what was wrong with it, to be shown with ``acceptedForms``.
    package init(parsing text: String) throws(AddressError) {
        let text = text.trimming(.spaces)
        guard !text.isEmpty else { throw AddressError(text: text, problem: "is empty") }
        if text.hasPrefix("#") {
            self = .tag(try Self.tagName(String(text.dropFirst()), text: text))
        } else if text.contains("/") || text.contains(".") || text.contains(":") {
            self = try Self.url(text)
        } else {
            self = .tag(try Self.tagName(text, text: text))
        }
    }

    package var description: String {
        switch self {
        case .tag(let name): "tag \(name)"
        case .album(let id): "album \(id)"
        case .post(let id): "post \(id)"
        case .image(let id): "image \(id)"
        }
    }

    private static let hosts: Set<String> = ["imgur.com", "www.imgur.com", "m.imgur.com", "i.imgur.com"]

    /// The orders and windows a tag page's URL may name after the tag.
    private static let listingWords: Set<String> = Set(GallerySort.allCases.map(\.rawValue) + GalleryWindow.allCases.map(\.rawValue) + ["rising", "new", "hot", "best"])

    private static func url(_ text: String) throws(AddressError) -> ImgurAddress {
        var rest = Substring(text)
        if let scheme = rest.firstRange(of: "://") {
            let name = rest[..<scheme.lowerBound].lowercased()
            guard name == "http" || name == "https" else {
                throw AddressError(text: text, problem: "is a \(name): URL, not an http or https one")
            }
            rest = rest[scheme.upperBound...]
        }
        // The query and fragment say nothing of what is named (`?page=2`, `#comments`).
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let hostPart = parts.first else { throw AddressError(text: text, problem: "names no host") }
        let host = hostPart.lowercased()
        guard hosts.contains(host) else {
            // A login typed before the host (its password may hold a `/`, which cut the host
            // short here) is no part of what the message may show: the quoted text shows the host.
            throw AddressError(text: text, problem: text.contains("@") ? "is not an Imgur address" : "is not an Imgur address (\(host))")
        }
        let path = Array(parts.dropFirst())
        if host == "i.imgur.com" {
            guard path.count == 1, let id = imageID(fromFileName: path[0]) else {
                throw AddressError(text: text, problem: "names no image: expected i.imgur.com/ID.jpg")
            }
            return .image(id)
        }
        switch (path.first, path.count) {
        case ("t"?, 2...):
            // `t/TAG/top/week` is the tag in another order; `t/TAG/ID` is one post opened from it.
            if path.count >= 3, !listingWords.contains(path[2].lowercased()) {
                guard path.count == 3 else { throw AddressError(text: text, problem: "names no album, post, tag or image") }
                return .post(try slugID(path[2], text: text))
            }
            let name = path[1].percentDecoded ?? path[1]
            return .tag(try tagName(name, text: text))
        case ("a"?, 2):
            return .album(try slugID(path[1], text: text))
        case ("gallery"?, 2):
            return .post(try slugID(path[1], text: text))
        case (let single?, 1):
            guard let id = imageID(fromFileName: single) else {
                throw AddressError(text: text, problem: "names no album, post, tag or image")
            }
            return .image(id)
        default:
            throw AddressError(text: text, problem: "names no album, post, tag or image")
        }
    }

    /// `ID`, or `some-title-ID` as Imgur's newer links have it: the id is after the last dash.
    private static func slugID(_ segment: String, text: String) throws(AddressError) -> String {
        let id = segment.split(separator: "-").last.map(String.init) ?? segment
        guard MediaURLBuilder.isPlainID(id) else {
            throw AddressError(text: text, problem: "has no Imgur id ('\(id)' is not 5 to 10 letters and digits)")
        }
        return id
    }

    /// `ID` or `ID.ext`, a thumbnail's size letter dropped (`aB3dE5fm.jpg` is `aB3dE5f`'s); nil
    /// when it is no image id.
    private static func imageID(fromFileName name: String) -> String? {
        let stem = String(name.split(separator: ".", maxSplits: 1).first ?? "")
        guard MediaURLBuilder.isPlainID(stem) else { return nil }
        // Ids are 5 or 7 characters; a sixth or eighth that is a size letter names a thumbnail.
        if stem.count == 6 || stem.count == 8, let last = stem.last,
           ThumbnailSize(rawValue: String(last)) != nil {
            return String(stem.dropLast())
        }
        return stem
    }

    /// A tag as Imgur has them: 1 to 100 characters, no space, slash, control or invisible
    /// formatting character (a byte-order mark, a bidi override), and not `.` or `..`, which would
    /// make another API path.
    private static func tagName(_ name: String, text: String) throws(AddressError) -> String {
        guard !name.isEmpty, name.count <= 100 else {
            throw AddressError(text: text, problem: "is not a tag: a tag has 1 to 100 characters")
        }
        guard !name.unicodeScalars.contains(where: {
            $0.properties.isWhitespace || $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
                || $0 == "/"
        }) else {
            throw AddressError(text: text, problem: "is not a tag: a tag has no spaces, slashes, control or formatting characters")
        }
        guard name != ".", name != ".." else { throw AddressError(text: text, problem: "is not a tag") }
        return name
    }
}

/// A string that names no source.
package struct AddressError: Error, Sendable, CustomStringConvertible {
    var text: String
    var problem: String

    /// The text as given, any login in it hidden: a front end escapes it where it reaches a
    /// terminal (``escapedForTerminal``).
    package var description: String {
        "'\(URLUserinfo.redactedArgument(text, schemeless: true))' \(problem)"
    }
}
