import Foundation
import Testing
@testable import MirrorKit

/// The index's keys are the `surt` package's: pywb and ReplayWeb.page find a capture by the key
/// they make of its URL, and a key made otherwise finds nothing.
@Suite("SURT keys as the surt package makes them", .enabled(if: WARCReader.isAvailable, "surt comes with warcio, installed by scripts/setup"))
struct SURTTests {
    static let urls = [
        "https://i.imgur.com/aB3dE5f.jpg",
        "https://i.imgur.com/aB3dE5fm.jpg?maxwidth=520&shape=thumb&fidelity=high",
        "http://www.Example.COM:80/Path/To/File.MP3",
        "https://www2.example.org:8443/a/b/",
        "http://example.com",
        "http://example.com/?",
        "http://example.com./a",
        "http://example.com/a%7Eb/c%2Fd%25e",
        "http://example.com/a//b///c",
        "http://example.com/a/./b/../c/",
        "http://example.com/../a",
        "http://example.com/caf\u{E9}/\u{1F600}.png",
        "http://example.com/a b",
        "http://example.com/p?b=2&a=1&a&a=0",
        "http://example.com/p?a=1&&b=2",
        "http://example.com/p?B=2&A=1#fragment",
        "http://example.com/p?sid=0123456789abcdef0123456789ABCDEF&b=1",
        "http://example.com/p?b=1&jsessionid=0123456789abcdef0123456789abcdef",
        "http://example.com/p?phpsessid=0123456789abcdef0123456789abcdef&x=%41",
        "http://example.com/p?sid=short&b=1",
        "http://user:pass@example.com/private/feed.xml",
        "http://[2001:db8::1]:8080/a",
        "http://127.0.0.1:3000/feeds/a.xml",
        "http://3232235777/a",
        "http://a..b.example/c",
        "https://example.com/%E2%82%AC/%e2%82%ac?q=%E2%82%AC",
        "https://example.com/a%2523b",
    ]

    @Test func keysAreTheSurtPackages() async throws {
        let expected = try await WARCReader.surtKeys(Self.urls)
        for (url, key) in zip(Self.urls, expected) {
            #expect(SURT.of(url) == key, "\(url)")
        }
    }
}
