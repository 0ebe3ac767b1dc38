import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// A private feed given as `http://user:pass@host/feed`: its enclosures behind Basic auth are
/// mirrored, and the password is in no line, status, metrics file, sidecar or state.
@Suite("A private feed's password: used, never written", .timeLimit(.minutes(3)))
struct PrivateFeedTests {
    /// With a quote, which a userinfo may hold and a line of text may quote with.
    static let password = "s3cr3t'Pa55"

    /// An RSS feed of `enclosures` (URL, length), one entry each, with a web page carrying a login.
    private static func rss(_ enclosures: [(url: String, length: Int)], page: String) -> String {
        let items = enclosures.enumerated().map { index, enclosure in
            """
            <item><title>Episode \(index + 1)</title><guid>episode-\(index + 1)</guid><link>\(page)</link>
            <enclosure url="\(enclosure.url)" length="\(enclosure.length)" type="audio/mpeg"/></item>
            """
        }
        return #"<?xml version="1.0"?><rss version="2.0"><channel><title>Private</title>"# + items.joined() + "</channel></rss>"
    }

    @Test func thePasswordReachesItsServerAndNothingElse() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withServer { other in
                server.requireBasicLogin(user: "reader", password: Self.password)
                server.addMedia(path: "/private/episode-1.mp3", size: 100_000)
                server.addMedia(path: "/private/episode-3.mp3", size: 50_000)
                other.addMedia(path: "/cdn/episode-2.mp3", size: 80_000)
                let host = String(server.baseURL.dropFirst("http://".count))
                let withLogin = "http://reader:\(Self.password)@\(host)"
                server.setFeed(path: "/feeds/private.xml", text: Self.rss([
                    ("/private/episode-1.mp3", 100_000),  // relative: the feed's login serves it
                    ("\(other.baseURL)/cdn/episode-2.mp3", 80_000),  // another origin: never given it
                    ("\(withLogin)/private/episode-3.mp3", 50_000),  // a link that names the login itself
                ], page: "\(withLogin)/episodes"))
                let feed = "\(withLogin)/feeds/private.xml"
                try await TestSupport.withTemporaryDirectory { dir in
                    let out = dir.appendingPathComponent("out").path
                    let metrics = dir.appendingPathComponent("mirror.prom").path
                    let warc = dir.appendingPathComponent("warc").path
                    var printed: [String] = []
                    let text = try await MirrorProcess.run(["feed", feed, "--out", out, "--metadata", "--metrics-file", metrics, "-v", "--warc", warc])
                    #expect(text.status == 0, "\(text.stderr)")
                    server.changeContent(path: "/private/episode-1.mp3")
                    let json = try await MirrorProcess.run([
                        "feed", feed, "--out", out, "--metadata", "--metrics-file", metrics, "-v", "--log-format", "json", "--mode", "new-file",
                    ])
                    #expect(json.status == 0, "\(json.stderr)")
                    // A wrong password: the error line cron mails names the feed, not the password.
                    let refused = try await MirrorProcess.run(["feed", "http://reader:wrong-Pa55@\(host)/feeds/private.xml", "--out", out])
                    #expect(refused.status != 0)
                    #expect(refused.stderr.contains("http://***@\(host)/feeds/private.xml") && refused.stderr.contains("401"), "\(refused.stderr)")
                    let status = try await MirrorProcess.run(["status", "--out", out])
                    let statusJSON = try await MirrorProcess.run(["status", "--out", out, "--json"])
                    #expect(status.status == 0 && statusJSON.status == 0)
                    #expect(status.stdout.contains("***@"), "\(status.stdout)")
                    printed += [text, json, refused, status, statusJSON].flatMap { [$0.stdout, $0.stderr] }

                    let secrets = [Self.password, "wrong-Pa55", Data("reader:\(Self.password)".utf8).base64EncodedString()]
                    for output in printed {
                        for secret in secrets { #expect(!output.contains(secret), "\(output)") }
                    }
                    // Every byte written: the mirror (its state, journals and sidecars) and the metrics file.
                    var written = [metrics]
                    let walker = FileManager.default.enumerator(atPath: out)!
                    while let path = walker.nextObject() as? String {
                        var isFolder: ObjCBool = false
                        if FileManager.default.fileExists(atPath: out + "/" + path, isDirectory: &isFolder), !isFolder.boolValue {
                            written.append(out + "/" + path)
                        }
                    }
                    #expect(written.contains { $0.hasSuffix(".mirror/state.sqlite3") })
                    #expect(written.contains { $0.hasSuffix("meta/enclosures/episode-1.mp3.json") })
                    for path in written {
                        let bytes = TestSupport.bytes(at: path) ?? []
                        for secret in secrets {
                            #expect(bytes.firstRange(of: Array(secret.utf8)) == nil, "\(secret) in \(path)")
                        }
                    }
                    // The WARC archive of the run: the feed, whose links carry the password, is
                    // archived with it taken out, and no request head carries the Basic token.
                    if WARCReader.isAvailable {
                        let records = try await WARCReader.records(in: warc)
                        let archivedFeed = records.first { $0.type == "response" && $0.uri == "http://\(host)/feeds/private.xml" }
                        #expect(archivedFeed?.status == 200 && archivedFeed.map { $0.length > 0 } == true)
                        let requests = records.filter { $0.type == "request" && $0.uri?.hasPrefix("http://\(host)/") == true }
                        #expect(!requests.isEmpty && requests.allSatisfy { $0.head.contains("Authorization: [redacted by mirror]") })
                        for name in try FileManager.default.contentsOfDirectory(atPath: warc) where name.hasSuffix(".warc.gz") {
                            let bytes = try await WARCReader.decompressed(warc + "/" + name)
                            let masked = "reader:" + String(repeating: "*", count: Self.password.utf8.count) + "@\(host)/private/episode-3.mp3"
                            #expect(bytes.range(of: Data(masked.utf8)) != nil, "the feed's link, its password masked")
                            for secret in secrets + ["s3cr3t%27Pa55"] {
                                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) in \(name)")
                            }
                        }
                    }
                    let sidecar = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/episode-3.mp3.json") ?? [], as: UTF8.self)
                    #expect(sidecar.contains("http://***@\(host)/feeds/private.xml"), "\(sidecar)")
                    #expect(sidecar.contains("\"http://\(host)/private/episode-3.mp3\""), "\(sidecar)")

                    // Mirrored: the relative enclosure and the one naming its login with the feed's
                    // password, the other origin's without it.
                    #expect(TestSupport.digest(ofFile: out + "/enclosures/episode-1.mp3")
                        != TestSupport.digest(server.content(of: "/private/episode-1.mp3")), "the first run's version")
                    #expect(TestSupport.digest(ofFile: out + "/enclosures/episode-1(1).mp3")
                        == TestSupport.digest(server.content(of: "/private/episode-1.mp3")))
                    #expect(TestSupport.digest(ofFile: out + "/enclosures/episode-2.mp3") == TestSupport.digest(other.content(of: "/cdn/episode-2.mp3")))
                    #expect(TestSupport.digest(ofFile: out + "/enclosures/episode-3.mp3") == TestSupport.digest(server.content(of: "/private/episode-3.mp3")))
                    #expect(!other.requests.isEmpty)
                    #expect(other.requests.allSatisfy { $0.header("Authorization") == nil })

                    var info = stat()
                    #expect(stat(out + "/.mirror", &info) == 0 && info.st_mode & 0o777 == 0o700)
                    #expect(stat(out + "/.mirror/state.sqlite3", &info) == 0 && info.st_mode & 0o777 == 0o600)
                }
            }
        }
    }

    @Test func netrcLogsInSoTheURLNeedNotCarryThePassword() async throws {
        try await TestSupport.withServer { server in
            server.requireBasicLogin(user: "reader", password: Self.password)
            server.addMedia(path: "/private/episode-1.mp3", size: 10_000)
            server.setFeed(path: "/feeds/private.xml", text: Self.rss([("/private/episode-1.mp3", 10_000)], page: "/"))
            let host = String(server.baseURL.dropFirst("http://".count).prefix { $0 != ":" })
            try await TestSupport.withTemporaryDirectory { dir in
                let netrc = dir.appendingPathComponent("netrc").path
                try TestSupport.write(Array("machine \(host)\n  login reader\n  password \(Self.password)\n".utf8), to: netrc)
                let out = dir.appendingPathComponent("out").path
                let feed = "\(server.baseURL)/feeds/private.xml"
                let without = try await MirrorProcess.run(["feed", feed, "--out", out])
                #expect(without.status != 0 && without.stderr.contains("401"), "\(without.stderr)")
                let with = try await MirrorProcess.run(["feed", feed, "--out", out, "--netrc-file", netrc])
                #expect(with.status == 0, "\(with.stderr)")
                #expect(TestSupport.digest(ofFile: out + "/enclosures/episode-1.mp3") == TestSupport.digest(server.content(of: "/private/episode-1.mp3")))
                let missing = try await MirrorProcess.run(["feed", feed, "--out", out, "--netrc-file", dir.path + "/none"])
                #expect(missing.status == 78)
                #expect(missing.stderr.contains("netrc file \(dir.path)/none does not exist"), "\(missing.stderr)")
            }
        }
    }

    /// A URL with a login given where it is no source (to `mirror` without `feed`, or without its
    /// scheme): the usage error, which the argument parser prints itself, hides the password.
    @Test func aMistypedPrivateFeedIsRefusedWithoutItsPassword() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let out = dir.appendingPathComponent("out").path
            for arguments in [
                ["https://alice:\(Self.password)@example.org/feed.rss", "--out", out],
                ["feed", "alice:\(Self.password)@example.org/feed.rss", "--out", out],
                // A password holding a `/` (which ends a host) or a `?`.
                ["https://alice:pa/\(Self.password)@example.org/feed.rss", "--out", out],
                ["https://alice:pa?\(Self.password)@example.org/feed.rss", "--out", out],
                ["alice:pa/\(Self.password)@example.org/feed.rss", "--out", out],
                ["feed", "alice:pa/\(Self.password)@example.org/feed.rss", "--out", out],
            ] {
                let run = try await MirrorProcess.run(arguments)
                #expect(run.status == 64, "\(arguments): \(run.stderr)")
                #expect(run.stderr.contains("***@example.org"), "\(run.stderr)")
                #expect(!run.stderr.contains("s3cr3t") && !run.stdout.contains("s3cr3t"), "\(run.stderr)")
            }
        }
    }
}
