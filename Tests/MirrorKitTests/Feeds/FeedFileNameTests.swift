import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// Enclosure file names come from strangers' URLs: they must fit NAME_MAX (255 bytes, not
/// characters) with room for a suffix, and carry no controls or bidi overrides.
@Suite("Naming enclosure files within NAME_MAX and free of controls", .timeLimit(.minutes(1)))
struct FeedFileNameTests {
    /// 100 CJK characters: 300 bytes of UTF-8, though only 100 characters.
    static let cjk = String(repeating: "漢", count: 100)
    /// One character of 2,001 bytes: a letter under a thousand combining acute accents.
    static let stacked = "a" + String(repeating: "\u{301}", count: 1000)
    /// ESC ] 0 ; … BEL sets a terminal's title; U+202E shows `gpj.mp3` as `3pm.jpg`.
    static let hostile = "\u{1B}]0;owned\u{7}\u{202E}gpj.mp3"

    let engine = TransferEngine()

    /// `segment` with every byte but ASCII letters, digits and `.` percent-encoded, as a URL has it.
    static func encoded(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789."))!
    }

    private func name(forLastSegment segment: String) -> String {
        FeedSource.fileName(for: FeedEnclosure(url: "https://h.example/files/\(Self.encoded(segment))"))
    }

    @Test func aHundredCJKCharactersAreCutBetweenCharactersKeepingTheExtension() {
        // 223 bytes less ".mp3" leave room for 73 characters of 3 bytes.
        #expect(name(forLastSegment: Self.cjk + ".mp3") == String(repeating: "漢", count: 73) + ".mp3")
    }

    @Test func oneCharacterLargerThanNameMaxIsCutBetweenItsScalars() {
        let cut = name(forLastSegment: Self.stacked + ".mp3")
        // 223 bytes less ".mp3" less the letter leave room for 109 accents of 2 bytes.
        #expect(cut == "a" + String(repeating: "\u{301}", count: 109) + ".mp3")
        #expect(String(validating: Array(cut.utf8), as: UTF8.self) == cut)
    }

    @Test func controlsAndBidiControlsBecomeUnderscores() {
        #expect(name(forLastSegment: Self.hostile) == "_]0;owned__gpj.mp3")
        let controls = "a\u{0}b\u{9}c\u{7F}d\u{85}e\u{9B}f\u{200E}g\u{200F}h\u{61C}i\u{202A}j\u{2066}k\u{2069}l\u{2028}m.bin"
        #expect(name(forLastSegment: controls) == "a_b_c_d_e_f_g_h_i_j_k_l_m.bin")
        #expect(name(forLastSegment: "..").hasPrefix("enclosure-"))
        #expect(name(forLastSegment: "a/b\\c") == "a_b_c")
    }

    /// `(123456)` or `-0123abcd` inserted into a name that fits must leave it fitting.
    @Test func aSuffixInsertedLaterCutsTheNameToStayWithinNameMax() {
        let longest = String(repeating: "漢", count: 83) + ".bin"  // 253 bytes
        let numbered = MirrorDirectory.numbered("enclosures/" + longest, 123_456)
        #expect(numbered == "enclosures/" + String(repeating: "漢", count: 81) + "(123456).bin")
        let tagged = MirrorDirectory.tagged(String(repeating: "x", count: 255), "0123abcd")
        #expect(tagged == String(repeating: "x", count: 246) + "-0123abcd")
        #expect(MirrorDirectory.numbered("a/b.tar.gz", 2) == "a/b.tar(2).gz")
    }

    @Test func hostileNamesAreMirroredOnEveryRun() async throws {
        try await TestSupport.withServer { server in
            let segments = [Self.cjk + ".mp3", Self.stacked + ".mp3", Self.hostile]
            var items = ""
            for segment in segments {
                server.addMedia(path: "/files/\(segment)", size: 4096)
                items += "<item><enclosure url=\"\(server.baseURL)/files/\(Self.encoded(segment))\" length=\"4096\"/></item>"
            }
            let feed = "<?xml version=\"1.0\"?><rss><channel><title>names</title>\(items)</channel></rss>"
            server.inject(.respond(status: 200, headers: ["Content-Type": "application/rss+xml"], body: feed), path: "/feeds/names.rss", times: 2)
            let expected = [
                String(repeating: "漢", count: 73) + ".mp3",
                "a" + String(repeating: "\u{301}", count: 109) + ".mp3",
                "_]0;owned__gpj.mp3",
            ]
            try await TestSupport.withTemporaryDirectory { dir in
                let first = try await run(server, into: dir)
                #expect(first.failures.map(\.description) == [])
                #expect(first.downloaded == 3)
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("enclosures").path)
                #expect(Set(names) == Set(expected))
                for (segment, name) in zip(segments, expected) {
                    #expect(TestSupport.digest(ofFile: dir.appendingPathComponent("enclosures/\(name)").path)
                        == TestSupport.digest(server.content(of: "/files/\(segment)")))
                }
                let second = try await run(server, into: dir)
                #expect(second.isComplete)
                #expect(second.alreadyPresent == 3)
            }
        }
    }

    private func run(_ server: FixtureServer, into dir: URL) async throws -> MirrorSummary {
        let mirror = try FeedRun(
            directory: try MirrorDirectory(root: dir), engine: engine,
            settings: .init(feedURL: "\(server.baseURL)/feeds/names.rss", retry: RetryPolicy(maxAttempts: 1)),
            logger: TestSupport.logger)
        return await mirror.run()
    }
}
