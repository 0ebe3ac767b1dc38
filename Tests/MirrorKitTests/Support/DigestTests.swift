import Foundation
import Testing
@testable import MirrorKit

/// The digests name partials and check downloads: each way of computing one gives the published
/// test vectors (RFC 1321 for MD5, FIPS 180-2 for SHA-1 and SHA-256).
@Suite("Digests")
struct DigestTests {
    static let md5Vectors: [(text: String, md5: String)] = [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
        ("12345678901234567890123456789012345678901234567890123456789012345678901234567890", "57edf4a22be3c955ac49da2e2107b67a"),
    ]

    @Test func everyWayOfHashingGivesTheRFCVectors() throws {
        for (text, md5) in Self.md5Vectors {
            #expect(try Digest.md5Hex(Array(text.utf8)) == md5, "\(text)")
            #expect(try Digest.md5Hex(of: text, suffix: "") == md5, "\(text)")
            #expect(try Digest.md5Hex(of: text, suffix: ".part") == md5 + ".part", "\(text)")
            let context = try MD5Context()
            for piece in Array(text.utf8).chunked(by: 7) { try context.update(Array(piece)) }
            #expect(try context.finalizeHex() == md5, "\(text)")
            #expect(try Digest.md5Prefix(of: text) == UInt64(md5.prefix(16), radix: 16), "\(text)")
        }
        #expect(MD5Context.hex(try MD5Context.hash(of: Array("abc".utf8), .sha1)) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(MD5Context.hex(try MD5Context.hash(of: Array("abc".utf8), .sha256))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(MD5Context.hex([0x00, 0x09, 0x0a, 0x7f, 0x80, 0xff]) == "00090a7f80ff")
        #expect(MD5Context.hex([UInt8]()) == "")
    }

    /// A partial's name is the MD5 of its URL's UTF-8, however the string is held: inline (15
    /// bytes or fewer), on the heap, cut from a longer one, or made from Foundation's text.
    @Test func aPartialsNameIsTheMD5OfItsURLHoweverTheStringIsHeld() throws {
        let long = "https://i.example.org/ünïcödé/" + String(repeating: "x", count: 300) + ".jpg"
        let urls = ["http://a/b", "https://i.imgur.com/abcdefg.jpg", long, String(long.dropFirst(8)),
                    NSString(string: "https://example.org/ä?q=1").description]
        let partials = PartialStore(folder: try Directory.open(existing: FileManager.default.temporaryDirectory.path))
        for url in urls {
            let expected = try Digest.md5Hex(Array(url.utf8)) + ".part"
            #expect(try partials.partName(for: url) == expected, "\(url)")
            #expect(try Digest.md5Prefix(of: url) == UInt64(expected.prefix(16), radix: 16), "\(url)")
            #expect(expected.count == 37)
        }
    }
}

extension Array {
    fileprivate func chunked(by size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
