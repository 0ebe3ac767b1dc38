import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// What `mirror feed` writes quotes feed titles, links and file names: none of their controls or
/// bidi overrides may reach the terminal or the cron mail, and no line break may forge a line.
@Suite("Escaping feed text in what mirror prints", .timeLimit(.minutes(1)))
struct FeedLogEscapingTests {
    @Test func aHostileTitleLinkAndFileNameArePrintedEscaped() async throws {
        try await TestSupport.withServer { server in
            // U+009B is CSI, ESC [ in one character; XML allows it, and U+202E, and line breaks.
            let title = "Evil&#x202E;txt.exe&#x9B;2J&#xA;mirror: forged line"
            let file = "\u{1B}]0;owned\u{7}\u{202E}gpj.mp3"
            server.addMedia(path: "/files/\(file)", size: 2048)
            let feed = """
                <?xml version="1.0"?><rss><channel><title>t</title>
                <item><title>\(title)</title><enclosure url="%zz://&#x202E;x"/></item>
                <item><enclosure url="\(server.baseURL)/files/%1B%5D0%3Bowned%07%E2%80%AEgpj.mp3"/></item>
                </channel></rss>
                """
            server.inject(.respond(status: 200, headers: ["Content-Type": "application/rss+xml"], body: feed), path: "/feeds/hostile.rss")
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run(["feed", "\(server.baseURL)/feeds/hostile.rss", "--out", out, "--verbose"])
                #expect(run.status == 1, "\(run.stderr)")
                #expect(FileManager.default.fileExists(atPath: out + "/enclosures/_]0;owned__gpj.mp3"))
                let printed = run.stdout + run.stderr
                let unsafe = printed.unicodeScalars.filter { $0 != "\n" && DisplayControl.contains($0) }
                #expect(unsafe.isEmpty, "\(unsafe.map { String($0.value, radix: 16) })")
                #expect(run.stderr.split(separator: "\n").allSatisfy { $0.hasPrefix("mirror: ") && !$0.hasPrefix("mirror: forged") })
                #expect(run.stderr.contains(
                    "mirror: skipped an enclosure of “Evil\\u{202E}txt.exe\\u{9B}2J\\nmirror: forged line” whose link is not a URL: %zz://\\u{202E}x\n"))
                #expect(run.stderr.contains("saved enclosures/_]0;owned__gpj.mp3\n"), "\(run.stderr)")
            }
        }
    }
}
