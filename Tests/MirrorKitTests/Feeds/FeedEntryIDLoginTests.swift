import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// An entry's id that is a link with a login (WordPress and many podcast hosts make the guid the
/// enclosure's URL, and a private feed's links carry the login): it names the entry with the
/// login as `***`, the form migration 7 gave the items older versions stored, and the password
/// reaches no file of the mirror.
@Suite("An entry id with a login names the entry without the password", .timeLimit(.minutes(2)))
struct FeedEntryIDLoginTests {
    static let password = "s3cret"

    /// RSS's guid, Atom's id and RSS 1.0's `rdf:about`, each the link of its own enclosure.
    private static func feeds(login: String) -> [(format: String, text: String)] {
        let link = "\(login)/files/ep3.mp3"
        return [
            ("rss", """
                <?xml version="1.0"?><rss version="2.0"><channel><title>Private</title>
                <item><title>Episode 3</title><guid>\(link)</guid><enclosure url="\(link)" length="3000" type="audio/mpeg"/></item>
                </channel></rss>
                """),
            ("atom", """
                <?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Private</title>
                <entry><title>Episode 3</title><id>\(link)</id><link rel="enclosure" href="\(link)" length="3000"/></entry>
                </feed>
                """),
            ("rdf", """
                <?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
                  xmlns:enc="http://purl.oclc.org/net/rss_2.0/enc#" xmlns="http://purl.org/rss/1.0/">
                <channel rdf:about="\(login)/"><title>Private</title></channel>
                <item rdf:about="\(link)"><title>Episode 3</title><enc:enclosure rdf:resource="\(link)" enc:length="3000"/></item>
                </rdf:RDF>
                """),
        ]
    }

    @Test func aGuidAtomIdOrRdfAboutWithALoginLeavesNoPasswordInTheMirror() async throws {
        try await TestSupport.withServer { server in
            server.requireBasicLogin(user: "reader", password: Self.password)
            server.addMedia(path: "/files/ep3.mp3", size: 3000)
            let host = String(server.baseURL.dropFirst("http://".count))
            let login = "http://reader:\(Self.password)@\(host)"
            for (format, text) in Self.feeds(login: login) {
                server.setFeed(path: "/feeds/\(format).xml", text: text)
                try await TestSupport.withTemporaryDirectory { dir in
                    let out = dir.appendingPathComponent("out").path
                    let run = try await MirrorProcess.run(["feed", "\(login)/feeds/\(format).xml", "--out", out, "--metadata"])
                    #expect(run.status == 0, "\(format): \(run.stderr)")
                    #expect(TestSupport.digest(ofFile: out + "/enclosures/ep3.mp3") == TestSupport.digest(server.content(of: "/files/ep3.mp3")))
                    let sidecar = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/ep3.mp3.json") ?? [], as: UTF8.self)
                    #expect(sidecar.contains("\"id\" : \"http://***@\(host)/files/ep3.mp3\""), "\(format): \(sidecar)")
                    var written: [String] = []
                    let walker = FileManager.default.enumerator(atPath: out)!
                    while let path = walker.nextObject() as? String {
                        var isFolder: ObjCBool = false
                        if FileManager.default.fileExists(atPath: out + "/" + path, isDirectory: &isFolder), !isFolder.boolValue {
                            written.append(out + "/" + path)
                        }
                    }
                    #expect(written.contains { $0.hasSuffix(".mirror/state.sqlite3") })
                    for path in written {
                        #expect(TestSupport.bytes(at: path)?.firstRange(of: Array(Self.password.utf8)) == nil, "\(format): the password in \(path)")
                    }
                }
            }
        }
    }
}
