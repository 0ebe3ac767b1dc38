/// The index of a WARC file in CDXJ, as pywb and the Webrecorder project's cdxj-indexer write it:
/// one line per response, resource and revisit record, `SURT timestamp {json}`, sorted, with the
/// record's URL, media type, status, payload digest, and where its gzip member lies in the file.
///
/// Its lines are sorted by an ``ExternalLineSort`` over the archive's directory: past 4 MiB they
/// go to disk in sorted runs, merged as the index is written, so memory stays bounded however
/// many records a WARC file holds.
final class CDXJIndex {
    private let lines: ExternalLineSort
    /// The line being built, its buffer kept from one to the next.
    private var line: [UInt8] = []

    static let emptyPayloadDigest = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"

    init(spillingInto directory: Directory? = nil, heldLimit: Int = 4 << 20) {
        lines = ExternalLineSort(spillingInto: directory, heldLimit: heldLimit)
    }

    /// The sorted runs written out so far.
    var runs: [Range<Int64>] { lines.runs }

    /// Adds the record `record`, dated `date` (WARC-Date's form), whose member of the WARC file
    /// `file` starts at `offset` and is `length` bytes long; records of other types are not indexed.
    func add(_ record: IndexedRecord, offset: Int64, length: Int64, file: String) {
        guard ["response", "resource", "revisit"].contains(record.type), let url = record.targetURI else { return }
        // Written straight into bytes, a field at a time: built as strings and joined, the line
        // cost a quarter of the archive's thread on small files.
        line.removeAll(keepingCapacity: true)
        line += Self.surt(url).utf8
        line.append(0x20)
        line += record.date.filter(\.isNumber).prefix(14).utf8
        line += " {".utf8
        func field(_ name: String, _ value: String) {
            if line[line.count - 1] != 0x7B { line += ", ".utf8 }
            JSONText.appendQuoted(name, to: &line)
            line += ": ".utf8
            JSONText.appendQuoted(value, to: &line)
        }
        field("url", url)
        if let mime = record.mime { field("mime", mime) }
        if let status = record.status { field("status", String(status)) }
        // A revisit without one (a 304's: its payload is the original's) has none in the index,
        // as cdxj-indexer writes it; any other record without one, the digest of no bytes.
        if let digest = record.payloadDigest {
            field("digest", digest)
        } else if record.type != "revisit" {
            field("digest", Self.emptyPayloadDigest)
        }
        field("length", String(length))
        field("offset", String(offset))
        field("filename", file)
        line.append(0x7D)
        lines.append(line: line)
    }

    /// Hands `body` the index's lines, each without its newline, sorted as bytes (as `sort` and
    /// cdxj-indexer's `--sort` order them).
    func forEachLine(_ body: ([UInt8]) throws(FileSystemError) -> Void) throws(FileSystemError) {
        try lines.merge(body)
    }

    /// Hands `write` the index's text, its lines in ``forEachLine(_:)``'s order, a piece at a time.
    func write(_ write: ([UInt8]) throws(FileSystemError) -> Void) throws(FileSystemError) {
        var out: [UInt8] = []
        out.reserveCapacity(256 << 10)
        try forEachLine { (line: [UInt8]) throws(FileSystemError) in
            out += line
            out.append(0x0A)
            if out.count >= 256 << 10 {
                try write(out)
                out.removeAll(keepingCapacity: true)
            }
        }
        if !out.isEmpty { try write(out) }
    }

    /// The whole of the index's text.
    func text() throws(FileSystemError) -> [UInt8] {
        var text: [UInt8] = []
        try write { text += $0 }
        return text
    }

    /// What the index says of a record: read from the record as it is written, or from the file
    /// when a killed run's file is indexed again.
    struct IndexedRecord {
        var type: String
        var targetURI: String?
        var date: String
        var payloadDigest: String?
        var status: Int?
        var mime: String?
    }

    /// The key a capture of `url` is looked up by (see ``SURT``).
    static func surt(_ url: String) -> String { SURT.of(url) }
}

extension CDXJIndex.IndexedRecord {
    /// What a record's first bytes (its WARC header, and an HTTP response's head after it) say;
    /// nil when they are no WARC record.
    init?(recordHead bytes: [UInt8]) {
        guard bytes.starts(with: "WARC/".utf8), let end = bytes.firstRange(of: [13, 10, 13, 10]) else { return nil }
        let text = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        var fields: [String: String] = [:]
        for line in text.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimming(.spaces)
        }
        guard let type = fields["warc-type"], let date = fields["warc-date"] else { return nil }
        self.init(
            type: type, targetURI: fields["warc-target-uri"], date: date, payloadDigest: fields["warc-payload-digest"],
            http: HTTPHead(Array(bytes[end.upperBound...])), contentType: fields["content-type"])
    }

    /// What the index says of a record of `type`: an HTTP answer's status and media type (a
    /// revisit's media type is `warc/revisit`, as cdxj-indexer writes it), else the record's own.
    init(type: String, targetURI: String?, date: String, payloadDigest: String?, http: HTTPHead, contentType: String?) {
        self.init(type: type, targetURI: targetURI, date: date, payloadDigest: payloadDigest)
        switch type {
        case "response", "revisit":
            status = http.status
            mime = type == "revisit" ? "warc/revisit" : http.contentType
        default:
            mime = contentType.map(CDXJIndex.mediaType)
        }
    }
}

extension CDXJIndex {
    /// A Content-Type up to its first `;` or blank, as cdxj-indexer keeps it.
    static func mediaType(_ value: String) -> String {
        String(value.prefix { $0 != ";" && $0 != " " && $0 != "\t" })
    }
}

/// The status, media type and length an HTTP response's head states, read from its bytes.
struct HTTPHead: Sendable {
    var status: Int?
    var contentType: String?
    var contentLength: Int64?

    init(_ bytes: [UInt8]) {
        guard bytes.starts(with: "HTTP/".utf8) else { return }
        var lineStart = 0
        var isFirst = true
        while lineStart < bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: 0x0A) ?? bytes.count
            var end = lineEnd
            if end > lineStart && bytes[end - 1] == 0x0D { end -= 1 }
            if end == lineStart { break }
            let line = bytes[lineStart..<end]
            if isFirst {
                let parts = line.split(separator: 0x20, maxSplits: 2)
                status = parts.count > 1 ? Int(String(decoding: parts[1], as: UTF8.self)) : nil
                isFirst = false
            } else if contentType == nil, let value = Self.value(of: "content-type", in: line) {
                contentType = CDXJIndex.mediaType(value)
            } else if contentLength == nil, let value = Self.value(of: "content-length", in: line) {
                contentLength = Int64(value)
            }
            lineStart = lineEnd + 1
        }
    }

    /// The value of the field `name` (lower case) if `line` is that field.
    private static func value(of name: String, in line: ArraySlice<UInt8>) -> String? {
        let key = Array(name.utf8)
        guard line.count > key.count, line[line.startIndex + key.count] == UInt8(ascii: ":"),
              zip(line.prefix(key.count), key).allSatisfy({ ($0 | 0x20) == $1 })
        else { return nil }
        return String(decoding: line.dropFirst(key.count + 1), as: UTF8.self).trimming(.spaces)
    }
}
