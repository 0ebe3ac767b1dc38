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
        // An `@` past the authority is the path's, not a userinfo.
        #expect(URLUserinfo.split("https://h.example/users/@me").credentials == nil)
        #expect(URLUserinfo.split("https://h.example/users/@me").url == "https://h.example/users/@me")
    }

    @Test func everyURLInALineIsRedactedJSONEscapedOnesToo() {
        let line = "feed https://u:pw@a.example/f.rss: HTTP 401; see http://x:y@b.example:81 and mail me@c.example"
        #expect(URLUserinfo.redacting(in: line)
            == "feed https://***@a.example/f.rss: HTTP 401; see http://***@b.example:81 and mail me@c.example")
        #expect(URLUserinfo.redacting(in: #"{"source":"feed https:\/\/u:pw@a.example\/f"}"#)
            == #"{"source":"feed https:\/\/***@a.example\/f"}"#)
        #expect(URLUserinfo.redacting(in: "'https://u:pw@a.example'") == "'https://***@a.example'")
        let plain = "nothing to see at https://a.example/x@y"
        #expect(URLUserinfo.redacting(in: plain) == plain)
    }

    @Test func credentialsServeTheirOriginOnly() {
        let store = CredentialStore()
        store.remember(URLCredentials(user: "u", password: "p"), forOriginOf: "https://Feeds.Example/private/feed.rss")
        #expect(store.credentials(for: "https://feeds.example:443/private/episode.mp3")?.password == "p")
        #expect(store.credentials(for: "http://feeds.example/private/episode.mp3") == nil, "another scheme")
        #expect(store.credentials(for: "https://feeds.example:8443/episode.mp3") == nil, "another port")
        #expect(store.credentials(for: "https://cdn.example/episode.mp3") == nil, "another host")
        // A link in the feed cannot replace what the user gave.
        store.remember(URLCredentials(user: "evil", password: "x"), forOriginOf: "https://feeds.example/other")
        #expect(store.credentials(for: "https://feeds.example/a")?.user == "u")
    }

    @Test func netrcGivesAMachineItsLoginAndTheURLsOwnWins() throws {
        let netrc = try Netrc(parsing: """
            machine feeds.example login reader password "with space"
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
        #expect(store.credentials(for: "https://other.example/f") == URLCredentials(user: "anonymous", password: "guest"))
        store.remember(URLCredentials(user: "given", password: "in-url"), forOriginOf: "https://feeds.example/f")
        #expect(store.credentials(for: "https://feeds.example/g")?.user == "given")
    }

    @Test func aDamagedNetrcIsAClearError() async throws {
        #expect(throws: MirrorError.configuration("netrc: 'login' without a value")) {
            try Netrc(parsing: "machine a login", file: "netrc")
        }
        #expect(throws: MirrorError.configuration("netrc: unexpected 'hello' (expected machine, default, login, password, account or macdef)")) {
            try Netrc(parsing: "hello machine a", file: "netrc")
        }
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
                store.remember(URLCredentials(user: "reader", password: "pw"), forOriginOf: server.baseURL + "/feed")
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
