import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// A URL's userinfo taken out and shown as `***`; credentials kept per origin and read from netrc.
@Suite("Credentials: a URL's userinfo, origins and netrc")
struct CredentialTests {
    @Test func aURLLosesItsUserinfoAndTheCredentialsAreDecoded() {
        let (url, credentials) = URLUserinfo.split("https://reader:p%40ss:word@feeds.example:8443/private/feed.rss?x=1")
        #expect(url == "https://feeds.example:8443/private/feed.rss?x=1")
        #expect(credentials == URLCredentials(user: "reader", password: "p@ss:word"))
        #expect(URLUserinfo.split("https://TOKEN@h.example/f").credentials == URLCredentials(user: "TOKEN", password: ""))
        // An `@` past the authority is the path's, not a userinfo; a URL in the query is not the URL's.
        #expect(URLUserinfo.split("https://h.example/users/@me").credentials == nil)
        #expect(URLUserinfo.split("https://h.example/users/@me").url == "https://h.example/users/@me")
        let quoting = "https://h.example/login?next=https://u:p@other.example/"
        #expect(URLUserinfo.split(quoting).url == quoting && URLUserinfo.split(quoting).credentials == nil)
        // A quote is a character a password may hold (RFC 3986's sub-delims).
        #expect(URLUserinfo.split("https://u:it's@h.example/f").credentials == URLCredentials(user: "u", password: "it's"))
        #expect(URLUserinfo.redacted("https://u:it's@h.example/f") == "https://***@h.example/f")
    }

    @Test func everyURLInALineIsRedactedJSONEscapedOnesToo() {
        let line = "feed https://u:pw@a.example/f.rss: HTTP 401; see http://x:y@b.example:81 and mail me@c.example"
        #expect(URLUserinfo.redacting(in: line)
            == "feed https://***@a.example/f.rss: HTTP 401; see http://***@b.example:81 and mail me@c.example")
        #expect(URLUserinfo.redacting(in: #"{"source":"feed https:\/\/u:pw@a.example\/f"}"#)
            == #"{"source":"feed https:\/\/***@a.example\/f"}"#)
        #expect(URLUserinfo.redacting(in: "'https://u:pw@a.example'") == "'https://***@a.example'")
        #expect(URLUserinfo.redactedArgument("https://u:p/#@ss@h.example/f") == "https://***@h.example/f")
        let plain = "nothing to see at https://a.example/x@y"
        #expect(URLUserinfo.redacting(in: plain) == plain)
    }

    /// A password with `/`, `?` or `#` unescaped ends the authority early, at a port that is no
    /// port: the line still shows no password, while real ports and paths with an `@` stay.
    @Test func aLinkALoginBreaksIsRedactedInALineToo() {
        for password in ["s3c/ret", "s3c?ret", "s3c#ret", "s3c/r@t"] {
            #expect(URLUserinfo.redacting(in: "not a URL: https://alice:\(password)@h.example/f.mp3 (E)")
                == "not a URL: https://***@h.example/f.mp3 (E)", "\(password)")
        }
        for kept in ["see http://[::1]:8080/x@y", "see https://h.example:8443/users/@me", "see http://h.example:/@a"] {
            #expect(URLUserinfo.redacting(in: kept) == kept)
        }
        #expect(URLUserinfo.redacting(in: #"{"message":"not a URL: https:\/\/alice:s3c\/ret@h.example\/f"}"#)
            == #"{"message":"not a URL: https:\/\/***@h.example\/f"}"#)
        #expect(URLUserinfo.redactedArgument("//alice:s3c/ret@h.example/f") == "//***@h.example/f")
        // Typed without its scheme: a login is hidden up to its last `@` when the password may
        // hold a `/`; a host and port, or text that is no URL, keep theirs.
        #expect(URLUserinfo.redactedArgument("alice:s3cret@h.example/f", schemeless: true) == "***@h.example/f")
        #expect(URLUserinfo.redactedArgument("alice:s3c/ret@h.example/f", schemeless: true) == "***@h.example/f")
        #expect(URLUserinfo.redactedArgument("h.example:8080/users/@me", schemeless: true) == "h.example:8080/users/@me")
        #expect(URLUserinfo.redactedArgument("mailto:someone@example.org") == "mailto:someone@example.org")
    }

    @Test func credentialsServeTheirOriginOnly() {
        let store = CredentialStore()
        store.remember(URLCredentials(user: "u", password: "p"), forOriginOf: "https://Feeds.Example/private/feed.rss", given: true)
        #expect(store.credentials(for: "https://feeds.example:443/private/episode.mp3")?.password == "p")
        #expect(store.credentials(for: "http://feeds.example/private/episode.mp3") == nil, "another scheme")
        #expect(store.credentials(for: "https://feeds.example:8443/episode.mp3") == nil, "another port")
        #expect(store.credentials(for: "https://cdn.example/episode.mp3") == nil, "another host")
        // A link in the feed cannot replace what the user gave, whichever came first.
        store.remember(URLCredentials(user: "evil", password: "x"), forOriginOf: "https://feeds.example/other", given: false)
        store.remember(URLCredentials(user: "evil", password: "x"), forOriginOf: "https://late.example/", given: false)
        store.remember(URLCredentials(user: "user", password: "y"), forOriginOf: "https://late.example/feed", given: true)
        #expect(store.credentials(for: "https://late.example/a")?.user == "user")
        #expect(store.credentials(for: "https://feeds.example/a")?.user == "u")
    }

    @Test func netrcGivesAMachineItsLoginAndTheURLsOwnWins() throws {
        let netrc = try Netrc(parsing: """
            # curl's and wget's comments
            MACHINE feeds.example login reader password "with space" # and this too
            unknown words are passed over
            macdef init
            cd /pub
            put file

            machine cdn.example
              login cdn
              password secret
            machine feeds.example login second password ignored
            default login anonymous password guest
            """, file: "netrc")
        let store = CredentialStore(netrc: netrc)
        #expect(store.credentials(for: "https://feeds.example/f") == URLCredentials(user: "reader", password: "with space"))
        #expect(store.credentials(for: "http://CDN.example:8080/f") == URLCredentials(user: "cdn", password: "secret"))
        // `default` serves only the hosts of the sources named: a feed's link to a host of its
        // own does not collect it.
        #expect(store.credentials(for: "https://other.example/f") == nil)
        store.trustDefaultLogin(forHostOf: "https://other.example/feed.rss")
        #expect(store.credentials(for: "https://other.example/f") == URLCredentials(user: "anonymous", password: "guest"))
        // A link's login is below netrc's machine; the user's URL's above it.
        store.remember(URLCredentials(user: "linked", password: "l"), forOriginOf: "https://cdn.example/f", given: false)
        #expect(store.credentials(for: "https://cdn.example/f")?.user == "cdn")
        store.remember(URLCredentials(user: "given", password: "in-url"), forOriginOf: "https://feeds.example/f", given: true)
        #expect(store.credentials(for: "https://feeds.example/g")?.user == "given")
    }

    @Test func aDamagedNetrcIsAClearError() async throws {
        #expect(throws: MirrorError.configuration("netrc: 'login' without a value")) {
            try Netrc(parsing: "machine a login", file: "netrc")
        }
        // An empty quoted password is a password; a word no entry takes is passed over.
        #expect(try Netrc(parsing: #"machine a login u password "" hello"#, file: "netrc").machine("a") == URLCredentials(user: "u", password: ""))
        #expect(throws: MirrorError.configuration("netrc file /nonexistent/netrc does not exist")) {
            try Netrc.load(path: "/nonexistent/netrc")
        }
    }

    @Test func theEngineLogsInToTheOriginAndARedirectElsewhereGetsNothing() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withServer { other in
                server.requireBasicLogin(user: "reader", password: "pw")
                server.addMedia(path: "/private/a.bin", size: 1000)
                other.addMedia(path: "/public/b.bin", size: 1000)
                server.inject(.respondWithLines(status: 302, lines: ["Location: \(other.baseURL)/public/b.bin"]), path: "/private/moved.bin")
                let store = CredentialStore()
                let engine = TransferEngine(configuration: .init(credentials: store))
                let request = { (path: String) in TransferRequest(url: server.baseURL + path, destination: .memory(limit: 1 << 20)) }
                let refused = try await engine.perform(request("/private/a.bin"))
                #expect(refused.status == 401)
                store.remember(URLCredentials(user: "reader", password: "pw"), forOriginOf: server.baseURL + "/feed", given: true)
                let admitted = try await engine.perform(request("/private/a.bin"))
                #expect(admitted.status == 200)
                let redirected = try await engine.perform(request("/private/moved.bin"))
                #expect(redirected.status == 200)
                #expect(other.requests.count == 1)
                #expect(other.requests.allSatisfy { $0.header("Authorization") == nil })
                await engine.shutDown()
            }
        }
    }
}
