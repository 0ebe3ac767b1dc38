/// A user name and password for HTTP Basic authentication: from a URL's userinfo or from netrc.
/// Held in memory for the requests of one run; never printed nor stored.
package struct URLCredentials: Sendable, Equatable {
    package var user: String
    package var password: String

    package init(user: String, password: String) {
        self.user = user
        self.password = password
    }
}

/// The userinfo (`user:password@`) of URLs: taken out of a URL before it is fetched, named or
/// stored, and shown as `***` wherever a URL that had one is printed.
///
/// Private and paid feeds are handed out as `https://user:pass@host/feed.rss`: the password must
/// reach the server and nothing else (logs, cron mail, the state, sidecars, metrics).
package enum URLUserinfo {
    /// `url` without its userinfo, and the credentials that userinfo held (percent-decoded).
    package static func split(_ url: String) -> (url: String, credentials: URLCredentials?) {
        // The URL's own authority only: a URL quoted in its query (`?next=https://u:p@other/`) is not its login.
        // Most URLs have no `@` at all: one scan of the bytes says so (every response's URL comes here).
        guard url.withUTF8Bytes({ $0.contains(UInt8(ascii: "@")) }),
              let range = userinfoRange(in: url.utf8, from: url.utf8.startIndex, wholeURL: true) else { return (url, nil) }
        let userinfo = String(url[range.userinfo])
        let (user, password) = userinfo.firstIndex(of: ":").map {
            (String(userinfo[..<$0]), String(userinfo[userinfo.index(after: $0)...]))
        } ?? (userinfo, "")
        var stripped = url
        stripped.removeSubrange(range.userinfo.lowerBound..<range.end)
        return (stripped, URLCredentials(user: user.percentDecoded ?? user, password: password.percentDecoded ?? password))
    }

    /// `url` with its userinfo, if any, shown as `***`.
    package static func redacted(_ url: String) -> String { redacting(in: url) }

    /// A string given as a URL that may not be one (a password with `/`, `#` or `@` unescaped
    /// breaks it), as an error quotes it: everything from `://` to its last `@` shown as `***`.
    /// A feed's link is one too, and may be a network-path reference (`//user:pa/ss@host/f`).
    ///
    /// `schemeless`: text typed where a URL was expected may have lost its scheme
    /// (`alice:s3cret@host/feed.rss`): a login at its start is hidden too, up to its last `@`
    /// when the password may hold a `/` (`alice:s3/cret@host`). Not for text that is no URL by
    /// design (`mailto:someone@example.org`), which keeps its `@`.
    package static func redactedArgument(_ text: String, schemeless: Bool = false) -> String {
        let authority = text.hasPrefix("//") ? text.startIndex..<text.index(text.startIndex, offsetBy: 2) : text.firstRange(of: "://")
        guard let authority else {
            guard schemeless else { return redacted(text) }
            let end = text.firstIndex(of: "/") ?? text.endIndex
            if let at = text[..<end].lastIndex(of: "@") { return "***" + String(text[at...]) }
            // `user:pa/ss@host`: a colon not followed by a port's digits, and an `@` further on.
            guard let colon = text[..<end].firstIndex(of: ":"),
                  !text[text.index(after: colon)..<end].allSatisfy(\.isNumber) || text.index(after: colon) == end,
                  let at = text.lastIndex(of: "@")
            else { return text }
            return "***" + String(text[at...])
        }
        guard let at = text.lastIndex(of: "@"), authority.upperBound <= at else {
            return redacted(text)
        }
        return String(text[..<authority.upperBound]) + "***" + String(text[at...])
    }

    /// `text` with the userinfo of every URL in it shown as `***`: the last guard before a line
    /// is printed or a label written.
    package static func redacting(in text: String) -> String {
        let bytes = text.utf8
        // The common case, a line without a URL that has a userinfo, is one scan and no copy.
        guard bytes.contains(UInt8(ascii: "@")), var range = userinfoRange(in: bytes, from: bytes.startIndex) else {
            return text
        }
        var result = ""
        var copied = bytes.startIndex
        while true {
            result += text[copied..<range.userinfo.lowerBound]
            result += "***@"
            copied = range.end
            guard let next = userinfoRange(in: bytes, from: copied) else { break }
            range = next
        }
        return result + text[copied...]
    }

    /// The first `scheme://userinfo@` (or `scheme:\/\/userinfo@`) at or after `start`: the userinfo's range, and where the
    /// host begins (after the `@`). A URL's authority ends at `/`, `?`, `#`, or at a character no
    /// URL holds (space, quote, angle bracket) when the URL is quoted in a sentence.
    private static func userinfoRange(
        in bytes: String.UTF8View, from start: String.Index, wholeURL: Bool = false
    ) -> (userinfo: Range<String.Index>, end: String.Index)? {
        var index = start
        while let colon = bytes[index...].firstIndex(of: UInt8(ascii: ":")) {
            let afterColon = bytes.index(after: colon)
            // `\/\/`: a URL inside JSON that escapes its slashes (JSONEncoder's default).
            let separator = bytes[afterColon...].starts(with: "//".utf8) ? 2 : bytes[afterColon...].starts(with: #"\/\/"#.utf8) ? 4 : 0
            guard separator > 0 else {
                index = afterColon
                continue
            }
            let authorityStart = bytes.index(afterColon, offsetBy: separator)
            var cursor = authorityStart
            var at: String.Index?
            while cursor != bytes.endIndex, !(wholeURL ? endsURLAuthority(bytes[cursor]) : endsAuthority(bytes[cursor])) {
                if bytes[cursor] == UInt8(ascii: "@") { at = cursor }
                cursor = bytes.index(after: cursor)
            }
            if let at { return (authorityStart..<at, bytes.index(after: at)) }
            if wholeURL { return nil }
            // `https://alice:pa/ss@host`: an authority whose port is no port is a password cut
            // short by its `/`, `?` or `#` (or JSON's `\/`); its `@` is further on. Hiding a path's
            // `@` in a line that quotes a link no URL parser takes costs less than printing a password.
            if cursor != bytes.endIndex, endsURLAuthority(bytes[cursor]) || bytes[cursor] == UInt8(ascii: "\\"),
               hasNoPort(bytes[authorityStart..<cursor]) {
                var scan = cursor
                while scan != bytes.endIndex, !endsQuotedText(bytes[scan]) {
                    if bytes[scan] == UInt8(ascii: "@") { at = scan }
                    scan = bytes.index(after: scan)
                }
                if let at { return (authorityStart..<at, bytes.index(after: at)) }
            }
            index = cursor
        }
        return nil
    }

    /// Where an authority ends in a line of text. Not at `'`, which a password may hold (RFC
    /// 3986's sub-delims): a URL quoted in `'…'` still has its `@` before the closing quote.
    private static func endsAuthority(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: " "), UInt8(ascii: "\""),
             UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\\"), 0..<0x20, 0x7F:
            true
        default:
            false
        }
    }

    /// Where a URL quoted in a line ends, whatever its authority held.
    private static func endsQuotedText(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: " "), UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), 0..<0x20, 0x7F: true
        default: false
        }
    }

    /// Whether `authority` (no `@` in it) has a `:` after its host that digits do not follow:
    /// no URL's authority, so a userinfo's start (`[::1]:8080` and `host:` are ports).
    private static func hasNoPort(_ authority: Substring.UTF8View) -> Bool {
        var host = authority[...]
        if host.first == UInt8(ascii: "["), let close = host.firstIndex(of: UInt8(ascii: "]")) {
            host = host[host.index(after: close)...]
        }
        guard let colon = host.firstIndex(of: UInt8(ascii: ":")) else { return false }
        return !host[host.index(after: colon)...].allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Where an authority ends in a URL alone (RFC 3986 §3.2).
    private static func endsURLAuthority(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
    }
}
