import Foundation
import Testing
@testable import MirrorKit

/// The byte-level checks every response and every file step goes through: a header name matched
/// but for ASCII case, a name refused when it could leave its folder, a URL's authority. They read
/// the strings' contiguous bytes; on Linux every String has them (no bridged storage), so the
/// fallbacks for strings without (Darwin's bridged ones) are the code these replaced and are not
/// reached here.
@Suite("Byte-level text checks")
struct ByteLevelTextTests {
    @Test func headerNamesMatchButForASCIICase() {
        var headers = HTTPHeaders()
        headers.append(name: "content-LENGTH", value: "12")
        headers.append(name: "ETag", value: "\"v1\"")
        #expect(headers["Content-Length"] == "12")
        #expect(headers["etag"] == "\"v1\"")
        #expect(headers["ETAG"] == "\"v1\"")
        // Letters only: '@' and '`' sit next to 'A' and 'a' and are not their cases.
        #expect(!"@tag".caseInsensitiveEquals("`tag"))
        #expect(!"[tag".caseInsensitiveEquals("{tag"))
        #expect(headers["Content-Lengt"] == nil)
        #expect(headers["Date"] == nil)
        // Beyond ASCII, bytes compare as they are: "É" is not "é".
        #expect(!"Éxpires".caseInsensitiveEquals("éxpires"))
        #expect("Éxpires".caseInsensitiveEquals("ÉXPIRES"))
        // Substrings compare by their own bytes, wherever they start in their string.
        let line = "x-Cache: HIT"
        #expect(line.prefix(7).caseInsensitiveEquals("X-CACHE"))
        #expect("x: Content-Length".dropFirst(3).caseInsensitiveEquals("content-length"))
        #expect(!"x: Content-Length".dropFirst(2).caseInsensitiveEquals("content-length"))
    }

    @Test func aNameThatCouldLeaveItsFolderIsRefused() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try Directory.open(existing: dir.path)
            for name in ["", ".", "..", "a/b", "/etc", "b/", "a\u{0}b", "\u{0}"] {
                #expect(throws: FileSystemError.self, "\(name.debugDescription)") { try directory.checkName(name) }
            }
            for name in ["a.jpg", "...", ".hidden", "a\\b", String(repeating: "n", count: 255), "Ünïcode ☃.png"] {
                #expect(throws: Never.self, "\(name.debugDescription)") { try directory.checkName(name) }
            }
            // Refused for its byte wherever it sits, also in a name cut from a longer string.
            #expect(throws: FileSystemError.self) { try directory.checkName(String("folder/x/y".dropFirst(7))) }
            #expect(throws: Never.self) { try directory.checkName(String("folder/x.jpg".dropFirst(7))) }
        }
    }

    @Test func aURLsAuthorityIsWhatFollowsItsSchemeUpToItsPath() {
        let cases: [(String, String)] = [
            ("https://i.imgur.com/abc.jpg", "i.imgur.com"),
            ("https://a.example:8443/x?y", "a.example:8443"),
            ("http://h?q=1", "h"), ("http://h#top", "h"), ("http://h", "h"), ("http://", ""),
            ("https://reader@feeds.example/f", "reader@feeds.example"),
            ("http://[::1]:8080/x", "[::1]:8080"), ("https://ü.example/ä", "ü.example"),
            ("mailto:someone@example.org", ""), ("http:/one-slash", ""), ("no scheme", ""), ("", ""),
        ]
        for (url, authority) in cases {
            #expect(URLAuthority.of(url) == authority, "\(url)")
            // Cut from a longer string, the same.
            #expect(URLAuthority.of(String(("<" + url).dropFirst())) == authority, "\(url), cut")
        }
    }
}
