/// The payloads an archive wrote lately, by digest: the same bytes again (at this URL or another)
/// are written as a `revisit` record that refers to the first, not a second time.
///
/// Memory is bounded, whatever the size of the run: two generations of at most
/// ``generationSize`` digests each, the older dropped when the newer fills. A payload is found
/// again if it was written within the last 8,192 to 16,384 whole payloads; one seen earlier than
/// that is written whole once more, which costs the archive space, never a record.
struct RecentPayloads {
    static let identicalPayloadProfile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"

    struct FirstCapture {
        var uri: String
        var date: String
        var id: String
    }

    private let generationSize: Int
    private var newer: [String: FirstCapture] = [:]
    private var older: [String: FirstCapture] = [:]

    init(generationSize: Int = 8192) {
        self.generationSize = generationSize
    }

    /// How many digests are held.
    var count: Int { newer.count + older.count }

    /// `record`, or a revisit of the first record that held the same whole payload: a 200's body
    /// (or a resource) seen before, at this URL or another, is written once. `date` is the
    /// record's WARC-Date.
    mutating func deduplicated(_ record: WARCRecord, date: String) -> WARCRecord {
        let field = { (name: String) in record.fields.first { $0.name == name }?.value }
        guard record.type == "response" || record.type == "resource", record.body.length > 0, field("WARC-Truncated") == nil,
              let digest = field("WARC-Payload-Digest"), let uri = field("WARC-Target-URI"),
              record.type == "resource" || record.http.status == 200
        else { return record }
        guard let first = newer[digest] ?? older[digest] else {
            remember(digest, FirstCapture(uri: uri, date: date, id: record.id))
            return record
        }
        guard record.type == "response", let block = try? MD5Context.hash(of: record.head, .sha1) else { return record }
        var revisit = WARCRecord(
            type: "revisit", id: record.id,
            fields: record.fields.filter { $0.name != "WARC-Block-Digest" } + [
                ("WARC-Block-Digest", WARCRecord.digestLabel(sha1: block)), ("WARC-Profile", Self.identicalPayloadProfile),
                ("WARC-Refers-To-Target-URI", first.uri), ("WARC-Refers-To-Date", first.date), ("WARC-Refers-To", first.id),
            ],
            head: record.head, body: .bytes([]))
        revisit.contentType = record.contentType
        revisit.http = record.http
        return revisit
    }

    private mutating func remember(_ digest: String, _ capture: FirstCapture) {
        if newer.count >= generationSize {
            older = newer
            newer = [:]
        }
        newer[digest] = capture
    }
}
