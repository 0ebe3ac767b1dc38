/// The payloads an archive wrote lately, by digest: the same bytes again (at this URL or another)
/// are written as a `revisit` record that refers to the first, not a second time.
///
/// Memory is bounded, whatever the size of the run: two generations of at most
/// ``generationSize`` digests each, the older dropped when the newer fills. A payload is found
/// again if it was written within the last 8,192 to 16,384 whole payloads; one seen earlier than
/// that is written whole once more, which costs the archive space, never a record.
struct RecentPayloads {
    static let identicalPayloadProfile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"

    /// Where the first capture of a payload is: its URI, date and record id, in one string (one
    /// allocation an entry, not three).
    struct FirstCapture {
        private let text: String

        init(uri: String, date: String, id: String) {
            text = uri + "\n" + date + "\n" + id
        }

        private var parts: [Substring] { text.split(separator: "\n", omittingEmptySubsequences: false) }
        var uri: String { String(parts[0]) }
        var date: String { String(parts[1]) }
        var id: String { String(parts[2]) }
    }

    /// A SHA-1 label (`sha1:` and 32 characters of base32) held in place, without an allocation
    /// of its own; any other label as its hash and its text.
    private enum Key: Hashable {
        case sha1(UInt64, UInt64, UInt64, UInt64)
        case other(String)

        init(_ label: String) {
            let bytes = Array(label.utf8)
            guard bytes.count == 37, bytes.starts(with: "sha1:".utf8), !label.contains("\n") else {
                self = .other(label)
                return
            }
            let word = { (index: Int) in bytes[(5 + 8 * index)..<(13 + 8 * index)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
            self = .sha1(word(0), word(1), word(2), word(3))
        }
    }

    private let generationSize: Int
    private var newer: [Key: FirstCapture] = [:]
    private var older: [Key: FirstCapture] = [:]

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
        let key = Key(digest)
        guard let first = newer[key] ?? older[key] else {
            remember(key, FirstCapture(uri: uri, date: date, id: record.id))
            return record
        }
        guard record.type == "response", let block = try? MD5Context.hash(of: record.head, .sha1) else { return record }
        var revisit = WARCRecord(
            type: "revisit", id: record.id,
            fields: record.fields.filter { $0.name != "WARC-Block-Digest" } + [
                ("WARC-Block-Digest", WARCRecord.digestLabel(sha1: block)), ("WARC-Profile", Self.identicalPayloadProfile),
                ("WARC-Refers-To-Target-URI", first.uri), ("WARC-Refers-To-Date", first.date), ("WARC-Refers-To", first.id),
                // The response's head without its body (WARC 1.1 §6.7.2, as wget writes it).
                ("WARC-Truncated", "length"),
            ],
            head: record.head, body: .bytes([]))
        revisit.contentType = record.contentType
        revisit.http = record.http
        return revisit
    }

    private mutating func remember(_ digest: Key, _ capture: FirstCapture) {
        if newer.count >= generationSize {
            older = newer
            newer = [:]
        }
        newer[digest] = capture
    }
}
