import Synchronization

/// The credentials a run's requests carry, in memory only: those a source URL of this run was
/// given with, for that URL's origin, and netrc's, for a machine.
///
/// A request gets the credentials of its own origin (scheme, host and port), so a relative
/// enclosure of a private feed is fetched with the feed's password while a link to another
/// origin is not; a redirect to another host drops them (libcurl's rule). Credentials a URL
/// carries win over netrc's, as in curl.
package final class CredentialStore: Sendable {
    private let byOrigin = Mutex<[String: URLCredentials]>([:])
    private let netrc: Netrc?

    package init(netrc: Netrc? = nil) {
        self.netrc = netrc
    }

    /// Keeps `credentials` for the origin of `url`, unless that origin has some already (the
    /// user's own URL comes first; a link in a feed cannot replace them).
    package func remember(_ credentials: URLCredentials, forOriginOf url: String) {
        guard let origin = Self.origin(of: url) else { return }
        byOrigin.withLock { known in
            if known[origin] == nil { known[origin] = credentials }
        }
    }

    /// What a request to `url` authenticates with, if anything.
    func credentials(for url: String) -> URLCredentials? {
        guard let origin = Self.origin(of: url) else { return nil }
        if let remembered = byOrigin.withLock({ $0[origin] }) { return remembered }
        return netrc?.credentials(forHost: Self.host(ofOrigin: origin))
    }

    /// `scheme://host:port`, lowercased, the port made explicit: what two URLs share when they
    /// are of one origin.
    static func origin(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let scheme = url[..<colon].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        var authority = URLAuthority.of(url).lowercased()
        if let at = authority.lastIndex(of: "@") { authority = String(authority[authority.index(after: at)...]) }
        guard !authority.isEmpty else { return nil }
        // A port follows the last colon, unless that colon is inside an IPv6 literal's brackets.
        let hasPort = authority.lastIndex(of: ":").map { colon in !authority[colon...].contains("]") } ?? false
        if !hasPort { authority += scheme == "https" ? ":443" : ":80" }
        return scheme + "://" + authority
    }

    /// The host of an ``origin(of:)``, without its port or an IPv6 literal's brackets.
    private static func host(ofOrigin origin: String) -> String {
        let authority = origin.dropFirst(origin.prefix { $0 != ":" }.count + 3)
        let host = authority[..<(authority.lastIndex(of: ":") ?? authority.endIndex)]
        return host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : String(host)
    }
}
