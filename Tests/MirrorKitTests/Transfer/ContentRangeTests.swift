import Testing
@testable import MirrorKit

@Suite("Content-Range parsing", .timeLimit(.minutes(1)))
struct ContentRangeTests {
    @Test func parsesAByteRangeWithItsTotal() {
        let range = ContentRange(header: "bytes 100-199/1000")
        #expect(range == ContentRange(range: 100...199, total: 1000))
    }

    @Test func parsesTheUnsatisfiedForm() {
        #expect(ContentRange(header: "bytes */4096") == ContentRange(range: nil, total: 4096))
    }

    @Test func acceptsAnUnknownTotal() {
        #expect(ContentRange(header: "bytes 0-9/*") == ContentRange(range: 0...9, total: nil))
    }

    @Test(arguments: ["", "bytes", "bytes 5-1/10", "bytes 0-10/10", "items 0-1/2", "bytes */*", "bytes a-b/c", "bytes 0-1"])
    func rejectsMalformedValues(_ header: String) {
        #expect(ContentRange(header: header) == nil)
    }
}
