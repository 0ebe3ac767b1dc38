import Synchronization

/// The credentials a run's requests carry, in memory only: those a source URL of this run was
/// given with, for that URL's origin, and netrc's, for a machine.
///
/// A request gets the credentials of its own origin (scheme, host and port), so a relative
/// enclosure of a private feed is fetched with the feed's password while a link to another
/// origin is not; a redirect to another host drops them (libcurl's rule). Credentials a URL the
/// user gave carries win over netrc's, as in curl.
package final class CredentialStore: Sendable {
    /// From URLs the user gave this run (a feed's, `--media-base`'s): they win over all else.
    private let given = Mutex<[String: URLCredentials]>([:])
    /// From links in feeds: below the user's own, netrc's machines included.
    private let linked = Mutex<[String: URLCredentials]>([:])
    /// The hosts of the sources the user named: only they get netrc's `default` entry, which a
    /// link in a feed must not be able to collect by naming a host of its own.
    private let sourceHosts = Mutex<Set<String>>([])
    private let netrc: Netrc?
    /// Whether there is anything to give: most runs have no login at all, and every request asks.
    private let holdsAny: Atomic<Bool>

    package init(netrc: Netrc? = nil) {
        self.netrc = netrc
        holdsAny = Atomic(netrc != nil)
    }

    /// Keeps `credentials` for the origin of `url`: the first given for an origin stays.
    /// `given`: they came from a URL the user gave, not from a feed's link.
    package func remember(_ credentials: URLCredentials, forOriginOf url: String, given isGiven: Bool) {
        guard let origin = Self.origin(of: url) else { return }
        func keep(_ known: inout [String: URLCredentials]) {
            if known[origin] == nil { known[origin] = credentials }
        }
        if isGiven { given.withLock { keep(&$0) } } else { linked.withLock { keep(&$0) } }
        holdsAny.store(true, ordering: .releasing)
    }

    /// Every password held, in the forms it can take on the wire: as typed, percent-encoded (as a
    /// URL writes it) and inside a Basic token; what a record of an exchange must not keep.
    package func secrets() -> [[UInt8]] {
        guard holdsAny.load(ordering: .acquiring) else { return [] }
        var logins = Array(given.withLock { $0.values }) + Array(linked.withLock { $0.values })
        if let netrc { logins += Array(netrc.machines.values) + (netrc.fallback.map { [$0] } ?? []) }
        var secrets: Set<[UInt8]> = []
        for login in logins where !login.password.isEmpty {
            secrets.insert(Array(login.password.utf8))
            secrets.insert(Array(login.password.percentEncodedSegment.utf8))
            secrets.insert(Array(Self.base64(Array("\(login.user):\(login.password)".utf8)).utf8))
        }
        // The longest first: one that contains another is replaced whole.
        return secrets.sorted { $0.count > $1.count }
    }

    private static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for position in 0..<4 {
                out.append(position <= chunk.count ? alphabet[Int((value >> (18 - 6 * UInt32(position))) & 63)] : UInt8(ascii: "="))
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `url` is a source the user named: its host may use netrc's `default` entry.
    package func trustDefaultLogin(forHostOf url: String) {
        guard let origin = Self.origin(of: url) else { return }
        sourceHosts.withLock { _ = $0.insert(Self.host(ofOrigin: origin)) }
    }

    /// What a request to `url` authenticates with, if anything: the user's URL's, netrc's
    /// machine, a feed link's, then netrc's default for a source's own host.
    func credentials(for url: String) -> URLCredentials? {
        guard holdsAny.load(ordering: .acquiring), let origin = Self.origin(of: url) else { return nil }
        if let known = given.withLock({ $0[origin] }) { return known }
        let host = Self.host(ofOrigin: origin)
        if let machine = netrc?.machine(host) { return machine }
        if let known = linked.withLock({ $0[origin] }) { return known }
        return sourceHosts.withLock({ $0.contains(host) }) ? netrc?.fallback : nil
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
