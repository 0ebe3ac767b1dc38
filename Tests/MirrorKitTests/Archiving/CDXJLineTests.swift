import Foundation
import Testing
@testable import MirrorKit

/// An index line's JSON strings are Python's `json.dumps` (what cdxj-indexer writes), checked
/// against Python itself.
@Suite("CDXJ strings as cdxj-indexer writes them", .enabled(if: WARCReader.isAvailable, "Python is installed by scripts/setup"))
struct CDXJLineTests {
    @Test func stringsAreQuotedAsJSONDumpsQuotesThem() async throws {
        let texts = ["plain", "a\"b\\c", "tab\tnew\nline\rback\u{8}feed\u{C}", "\u{1}\u{1F}\u{7F}", "café", "日本", "😀 emoji", "/x?y=1&z=%20"]
        // The texts reach Python as JSON of Foundation's own making, which it reads back exactly.
        let json = String(decoding: try JSONSerialization.data(withJSONObject: texts), as: UTF8.self)
        let output = try await WARCReader.python("import json, sys\nfor t in json.loads(sys.argv[1]): print(json.dumps(t))", [json])
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == texts.count)
        for (text, expected) in zip(texts, lines) {
            #expect(JSONText.quoted(text) == expected, "\(text.debugDescription)")
            var bytes: [UInt8] = []
            JSONText.appendQuoted(text, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == expected, "\(text.debugDescription)")
        }
    }
}
