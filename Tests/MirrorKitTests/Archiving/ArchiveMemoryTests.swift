import Foundation
import Testing
@testable import MirrorKit

/// What an archive keeps while a run goes on is bounded, however many exchanges the run has: the
/// index of the file being written spills to disk, and the payloads it remembers to write a
/// second copy as a revisit are the recent ones.
@Suite("An archive's memory stays bounded through a long run")
struct ArchiveMemoryTests {
    /// Past its memory, the index writes sorted runs to an unnamed file and merges them: the text
    /// is the one an index held whole in memory writes, and nothing is left in the directory.
    @Test func anIndexPastItsMemorySpillsAndWritesTheSameSortedText() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try Directory.open(creating: dir.appendingPathComponent("warc").path)
            let spilled = CDXJIndex(spillingInto: directory, heldLimit: 4 << 10)
            let whole = CDXJIndex()
            var generator = SystemRandomNumberGenerator()
            for serial in 0..<3000 {
                // Hosts and paths in no order, some of them the same, as a tag's are.
                let host = ["i.imgur.com", "api.imgur.com", "example.org"].randomElement(using: &generator)!
                let record = CDXJIndex.IndexedRecord(
                    type: serial % 7 == 0 ? "revisit" : "response", targetURI: "https://\(host)/\(UInt32.random(in: 0..<400, using: &generator)).jpg",
                    date: "2026-11-28T12:00:0\(serial % 10).000000Z", payloadDigest: "sha1:\(serial % 50)", status: 200, mime: "image/jpeg")
                spilled.add(record, offset: Int64(serial) * 1000, length: 1000, file: "mirror-1-00000.warc.gz")
                whole.add(record, offset: Int64(serial) * 1000, length: 1000, file: "mirror-1-00000.warc.gz")
            }
            #expect(spilled.runs.count > 50)
            #expect(whole.runs.isEmpty)
            let text = try spilled.text()
            #expect(text == (try whole.text()))
            let lines = text.split(separator: 0x0A)
            #expect(lines.count == 3000)
            #expect(zip(lines, lines.dropFirst()).allSatisfy { !$1.lexicographicallyPrecedes($0) })
            #expect(directory.names().isEmpty, "\(directory.names())")
        }
    }

    /// A payload seen within the newer two generations is a revisit; one older than that is
    /// written whole again, and the digests held never pass two generations.
    @Test func recentPayloadsAreRevisitsAndOlderOnesAreForgotten() {
        var payloads = RecentPayloads(generationSize: 4)
        func response(_ serial: Int) -> WARCRecord {
            let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n".utf8)
            var record = WARCRecord(
                type: "response", fields: [("WARC-Target-URI", "https://h/\(serial)"), ("WARC-Payload-Digest", "sha1:\(serial)")],
                head: head, body: .bytes([UInt8(serial)]))
            record.http = HTTPHead(head)
            return record
        }
        for serial in 0..<10 {
            #expect(payloads.deduplicated(response(serial), date: "d\(serial)").type == "response")
            #expect(payloads.count <= 8)
        }
        // Real labels (sha1: and 32 characters of base32, held packed) that differ in their last
        // character only are two payloads.
        let label = "sha1:" + String(repeating: "A", count: 31)
        func labelled(_ last: Character, at uri: String) -> WARCRecord {
            var record = response(0)
            record.fields = [("WARC-Target-URI", uri), ("WARC-Payload-Digest", label + String(last))]
            return record
        }
        #expect(payloads.deduplicated(labelled("B", at: "https://h/b"), date: "db").type == "response")
        #expect(payloads.deduplicated(labelled("C", at: "https://h/c"), date: "dc").type == "response")
        let repeated = payloads.deduplicated(labelled("C", at: "https://h/c2"), date: "later")
        #expect(repeated.type == "revisit")
        #expect(repeated.fields.contains { $0 == ("WARC-Refers-To-Target-URI", "https://h/c") })
        let again = payloads.deduplicated(response(9), date: "later")
        #expect(again.type == "revisit")
        #expect(again.fields.contains { $0 == ("WARC-Refers-To-Date", "d9") })
        #expect(payloads.deduplicated(response(5), date: "later").type == "revisit")
        #expect(payloads.deduplicated(response(0), date: "later").type == "response")
    }
}
