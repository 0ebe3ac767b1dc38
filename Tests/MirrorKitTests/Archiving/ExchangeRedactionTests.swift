import Testing
@testable import MirrorKit

/// The passwords mirror was given, masked in what it archives: hidden, and the records still
/// whole for a reader (lengths kept, a response's status line and framing fields as sent).
@Suite("Passwords masked in archived exchanges")
struct ExchangeRedactionTests {
    private func masked(_ text: String, _ secrets: [String], responseHead: Bool = false) -> String {
        String(decoding: ExchangeCapture.redacting(secrets.map { Array($0.utf8) }, in: Array(text.utf8), isResponseHead: responseHead), as: UTF8.self)
    }

    @Test func aPasswordIsMaskedByteForByteSoABodyKeepsItsLength() {
        let body = #"{"user":"reader","token":"s3cr3t-Pa55","again":"s3cr3t-Pa55"}"#
        let result = masked(body, ["s3cr3t-Pa55"])
        #expect(result == #"{"user":"reader","token":"***********","again":"***********"}"#)
        #expect(result.utf8.count == body.utf8.count)
    }

    @Test func aResponsesStatusLineAndFramingStayAsSent() {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 12345678\r\nContent-Range: bytes 0-12345677/12345678\r\nX-Echo: 12345678\r\n\r\n"
        #expect(masked(head, ["12345678"], responseHead: true)
            == "HTTP/1.1 200 OK\r\nContent-Length: 12345678\r\nContent-Range: bytes 0-12345677/12345678\r\nX-Echo: ********\r\n\r\n")
        // A request's head has no such fields: its line is masked too (a password in a query).
        #expect(masked("GET /feed?key=12345678 HTTP/1.1\r\n\r\n", ["12345678"]) == "GET /feed?key=******** HTTP/1.1\r\n\r\n")
    }

    /// A password of a few characters is in everything by chance: masking it would break the
    /// records (a status of 200, every "1" of a body) and hide nothing.
    @Test func aShortPasswordIsNotSought() {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 200\r\nAge: 200\r\n\r\n"
        #expect(masked(head, ["200"], responseHead: true) == head)
        #expect(masked("[1, 2, 3]", ["1"]) == "[1, 2, 3]")
    }

    /// ... but where it is a URL's login, as a feed's links or a Location carry it, it is hidden.
    @Test func aShortPasswordIsMaskedWhereItIsALogin() {
        #expect(masked("<link>https://reader:abc@host.example/ep1.mp3</link> abc", ["abc"])
            == "<link>https://reader:***@host.example/ep1.mp3</link> abc")
        #expect(masked(#"{"url":"https:\/\/reader:abc@host.example\/x"}"#, ["abc"]) == #"{"url":"https:\/\/reader:***@host.example\/x"}"#)
        #expect(masked("Location: http://reader:abd@host.example/\r\n", ["abc"]) == "Location: http://reader:abd@host.example/\r\n")
    }
}
