import Testing
@testable import MirrorKit

@Suite("Content-Length values: a number, or one number repeated; nothing else")
struct ContentLengthTests {
    @Test(arguments: [
        ("51200", 51200),
        ("0", 0),
        (" 8192\t", 8192),
        ("5, 5", 5),
        ("5,5,5", 5),
        ("5 ,\t5", 5),
        ("9223372036854775807", Int64.max),
    ] as [(String, Int64)])
    func aLengthIsRead(value: String, length: Int64) {
        #expect(HTTPHeaders.contentLength(value) == length)
    }

    @Test(arguments: [
        "", " ", "1e3", "-1", "+5", "0x10", "5 5", "5, 6", "5,", ",5", "5,,5",
        // Written differently, the same number is still two fields that disagree.
        "5, 05",
        // Past 64 bits: libcurl 7.88 reads no length at all there.
        "9223372036854775808", "99999999999999999999999",
        // Only spaces and tabs separate items (RFC 9110's OWS): not a no-break space, not a line.
        "\u{A0}5", "5\u{A0}", "5\n", "５",
    ])
    func anythingElseIsNoLength(value: String) {
        #expect(HTTPHeaders.contentLength(value) == nil)
    }
}
