import Foundation
import Testing
@testable import MirrorKit

/// The byte-level checks every response and every file step goes through: a header name matched
/// but for ASCII case, a name refused when it could leave its folder, a URL's authority, an ETag
/// that is an MD5, an Imgur id fit for a file name, a URL's login. They read the strings'
/// contiguous bytes (``StringProtocol/withUTF8Bytes(_:)``); on Linux every String has them (no
/// bridged storage), so its fallback, a copy of the bytes, is not reached here. Each case gives
/// what the code these replaced gave.
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
        }
    }

    /// A header line as libcurl hands it over, CRLF and all, read from its bytes.
    @Test func aHeaderLineIsSplitAtItsFirstColonAndTrimmedOfItsWhiteSpace() {
        func field(_ bytes: [UInt8]) -> [String]? {
            bytes.withUnsafeBytes { HTTPHeaders.parseField($0) }.map { [$0.name, $0.value] }
        }
        func field(_ line: String) -> [String]? { field(Array(line.utf8)) }
        #expect(field("Content-Length: 51200\r\n") == ["Content-Length", "51200"])
        #expect(field("ETag:\t\"a:b\" \r\n") == ["ETag", "\"a:b\""])
        #expect(field("  X-Odd :  spaced value  \r\n") == ["X-Odd", "spaced value"])
        #expect(field("Empty:\r\n") == ["Empty", ""])
        #expect(field("Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT\r\n") == ["Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT"])
        // Not fields: the status line, the blank line, a name with a space, no name.
        #expect(field("HTTP/1.1 200 OK\r\n") == nil)
        #expect(field("\r\n") == nil)
        #expect(field("Bad Name: x\r\n") == nil)
        #expect(field(": x\r\n") == nil)
        // Bytes that are no UTF-8 are replaced, as decoding the whole line replaced them.
        let latin1: [UInt8] = Array("Content-Disposition: attachment; filename=caf".utf8) + [0xE9] + Array(".jpg\r\n".utf8)
        #expect(field(latin1) == ["Content-Disposition", "attachment; filename=caf\u{FFFD}.jpg"])
        #expect(field([0xFF, 0x3A, 0x20, 0x78]) == ["\u{FFFD}", "x"])
        // Handed a slice of a longer buffer (as libcurl hands a line of its own): nothing before
        // the slice is read.
        let buffer = Array("junk:Name: value\r\n".utf8)
        let cut = buffer.withUnsafeBytes { HTTPHeaders.parseField(UnsafeRawBufferPointer(rebasing: $0[5...])) }
        #expect(cut?.name == "Name" && cut?.value == "value")
    }

    /// An obsolete folded line continues the field before it, joined by one space.
    @Test func aFoldedLineContinuesTheFieldBeforeIt() {
        var headers = HTTPHeaders()
        func fold(_ line: String) { Array(line.utf8).withUnsafeBytes { headers.continueLastField($0) } }
        fold("  before any field\r\n")
        #expect(headers.fields.isEmpty)
        headers.append(name: "Content-Encoding", value: "identity,")
        fold(" \t gzip \r\n")
        fold("   \r\n")
        #expect(headers["Content-Encoding"] == "identity, gzip")
        headers.append(name: "X-Empty", value: "")
        fold("\tcaf\u{E9}\r\n")
        #expect(headers["X-Empty"] == "café")
    }

    /// An ETag is taken for the body's MD5 only when it is 32 ASCII hex digits in quotes (as S3
    /// and nginx-style servers send it); the digest is given in small letters.
    @Test func anETagIsAnMD5OnlyWhenItIsThirtyTwoHexDigitsQuoted() {
        let hex = "0123456789abcdef0123456789ABCDEF"
        #expect(Digest.md5(inETag: "\"\(hex)\"") == hex.lowercased())
        for etag in [hex, "W/\"\(hex)\"", "\"\(hex.dropLast())\"", "\"\(hex)0\"", "\"\(hex.dropLast())g\"", "\"\(hex)",
                     "\"\(hex.dropLast())\u{FF10}\"", "\"\(hex.dropLast(2))é\"", "", "\"", "\"\""] {
            #expect(Digest.md5(inETag: etag) == nil, "\(etag.debugDescription)")
        }
    }

    /// Five to ten ASCII letters and digits; nothing else (a fullwidth digit, a letter with an
    /// accent, a dot) makes a safe media name.
    @Test func aPlainImgurIDIsFiveToTenASCIILettersAndDigits() {
        for id in ["abcde", "ABCDE", "a1B2c3", "0123456789", "Zz9Zz"] { #expect(MediaURLBuilder.isPlainID(id), "\(id)") }
        for id in ["abcd", "abcdefghijk", "abcd.", "abcd-", "abcd_", "abcdé", "abcd\u{FF10}", "ab cd", "../ab", "abc\r\n", ""] {
            #expect(!MediaURLBuilder.isPlainID(id), "\(id.debugDescription)")
        }
    }

    /// A URL without an `@` has no login and comes back as it is; one with a login in its own
    /// authority loses it, one quoting a URL with a login in its query keeps it.
    @Test func aURLsLoginIsSplitOffItsOwnAuthorityOnly() {
        let plain = "https://example.org/a/b.jpg?x=1"
        #expect(URLUserinfo.split(plain).url == plain)
        #expect(URLUserinfo.split(plain).credentials == nil)
        let login = URLUserinfo.split("https://alice:s%40cret@example.org/feed.rss")
        #expect(login.url == "https://example.org/feed.rss")
        #expect(login.credentials == URLCredentials(user: "alice", password: "s@cret"))
        let quoted = "https://example.org/go?next=https://u:p@other/"
        #expect(URLUserinfo.split(quoted).url == quoted)
        #expect(URLUserinfo.split(quoted).credentials == nil)
    }
}
