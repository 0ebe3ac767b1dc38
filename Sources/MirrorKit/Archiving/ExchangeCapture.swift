import CCurl
import CMirrorSystem
import CZlib
import Glibc

/// What one transfer exchanged, hop by hop (each redirect a hop), taken as libcurl reports it:
/// the request head as sent, the response head as received, the body as it arrives. Lives on the
/// engine thread, with its transfer; handed to the ``WARCArchive`` when the transfer ends.
///
/// HTTP/2 exchanges are written in HTTP/1.1 form, as Browsertrix and warcprox write them. libcurl
/// takes a chunked body's framing off before mirror sees it: the `Transfer-Encoding` field is
/// kept as `X-Archive-Orig-Transfer-Encoding`, so a replay does not look for chunks the block
/// does not have. An `Authorization` field's value (the API's Client-ID, a feed's password) is
/// replaced by ``redacted``.
final class ExchangeCapture {
    static let redacted = "[redacted by mirror]"
    /// Bodies downloaded into a file up to this size wait in memory; larger ones are read back
    /// from the file. An API answer or a feed is taken whole from the transfer's memory.
    static let inMemoryLimit = 256 << 10

    private struct Hop {
        var url: String
        var time: timespec
        var requestHead: [UInt8]
        var responseHead: [UInt8] = []
        var status = 0
        var address: String?
    }

    private let archive: WARCArchive
    private let easy: UnsafeMutableRawPointer
    private var hops: [Hop] = []
    /// The last hop's body, where it is kept here: a small one, or an error page.
    private var body: [UInt8] = []
    /// An error page longer than ``inMemoryLimit`` is kept to that length.
    private var bodyCut = false
    /// The last hop's body has begun: header lines after it are a chunked body's trailer.
    private var bodyStarted = false
    /// The last hop's body went into the transfer's file: its length and CRC-32 as it arrived
    /// (the archive digests it as it reads it back, off the transfers' thread).
    private var intoFile = false
    /// Whether the next line of a head is a status line: at a hop's start, and after an interim
    /// (1xx) answer's blank line. Elsewhere a line beginning `HTTP/` is a field.
    private var statusLineNext = true
    /// Whether the hop's final head has ended (its blank line): later lines are a trailer.
    private var headEnded = false
    private var fileLength: Int64 = 0
    private var fileCRC = crc32(0, nil, 0)
    /// A large body's record, archived as its bytes are written out (``WARCStream``): looked at
    /// once, when its first bytes reach the file.
    private var stream: (record: WARCRecord, writer: WARCStream)?
    private var streamConsidered = false
    private var streamedUpTo: Int64 = 0

    private let credentials: CredentialStore
    /// The passwords no record may hold, taken once, when the first request is sent: by then the
    /// store holds this request's.
    private lazy var secrets = credentials.secrets()

    init(archive: WARCArchive, easy: UnsafeMutableRawPointer, credentials: CredentialStore) {
        self.archive = archive
        self.easy = easy
        self.credentials = credentials
    }

    /// libcurl sent a request head (CURLINFO_HEADER_OUT): a new hop begins.
    func requestSent(_ bytes: UnsafeRawBufferPointer, url: String) {
        // A proxy's tunnel is no exchange with the target (its answer libcurl keeps to itself:
        // CURLOPT_SUPPRESS_CONNECT_HEADERS).
        if bytes.starts(with: "CONNECT ".utf8) { return }
        // Line by line, as bytes (as strings, split, lower-cased and joined, a head cost more than
        // its record's writing).
        var head: [UInt8] = []
        head.reserveCapacity(bytes.count + Self.redacted.utf8.count)
        var lineStart = 0
        while true {
            let lineEnd = Self.lineEnd(in: bytes, from: lineStart)
            let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<(lineEnd ?? bytes.count)])
            if lineStart == 0, lineEnd != nil, line.count >= 7, line.suffix(7).elementsEqual(" HTTP/2".utf8) {
                head += line.dropLast(7)
                head += " HTTP/1.1".utf8
            } else if Self.startsIgnoringCase(line, "authorization:") || Self.startsIgnoringCase(line, "proxy-authorization:"),
                      let colon = line.firstIndex(of: UInt8(ascii: ":")) {
                head += line[...colon]
                head += " \(Self.redacted)".utf8
            } else {
                head += line
            }
            guard let lineEnd else { break }
            head += [13, 10]
            lineStart = lineEnd + 2
        }
        head = Self.redacting(secrets, in: head)
        hops.append(Hop(url: URLUserinfo.split(url).url, time: WARCRecord.now(), requestHead: head))
        body = []
        bodyCut = false
        bodyStarted = false
        intoFile = false
        statusLineNext = true
        headEnded = false
        fileLength = 0
        fileCRC = crc32(0, nil, 0)
        // Another request on the same transfer (libcurl trying again): what began is not this hop's.
        stream?.writer.discard()
        stream = nil
        streamConsidered = false
        streamedUpTo = 0
    }

    /// A line of a response head, as libcurl passes it (its CRLF included).
    func responseHeader(_ bytes: UnsafeRawBufferPointer) {
        // After the body, or after a final head with no body (an empty chunked one), lines are a
        // trailer: not part of the head recorded (and digested) before the body.
        guard !hops.isEmpty, !bodyStarted, !headEnded else { return }
        if bytes.elementsEqual("\r\n".utf8) || bytes.elementsEqual("\n".utf8) {
            hops[hops.count - 1].responseHead += Array(bytes)
            if (100..<200).contains(hops[hops.count - 1].status) { statusLineNext = true } else { headEnded = true }
            return
        }
        if statusLineNext, bytes.starts(with: "HTTP/".utf8) {
            statusLineNext = false
            let line = String(decoding: bytes, as: UTF8.self)
            let parts = line.split(separator: " ", maxSplits: 2)
            let status = parts.count > 1 ? Int(parts[1].prefix(3)) ?? 0 : 0
            // An interim answer (100 Continue) is not the hop's response.
            hops[hops.count - 1].responseHead = []
            hops[hops.count - 1].status = status
            var ip: UnsafeMutablePointer<CChar>?
            mirror_curl_easy_getinfo_string(easy, CURLINFO_PRIMARY_IP, &ip)
            hops[hops.count - 1].address = ip.map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
            if parts.first == "HTTP/2" || parts.first == "HTTP/3" {
                let rest = parts.dropFirst().joined(separator: " ").trimming(.spacesAndNewlines)
                hops[hops.count - 1].responseHead += Array("HTTP/1.1 \(rest)\(rest.count == 3 ? " " + Self.reason(status) : "")\r\n".utf8)
                return
            }
        } else if Self.startsIgnoringCase(bytes, "transfer-encoding:") {
            hops[hops.count - 1].responseHead += Array("X-Archive-Orig-".utf8) + Array(bytes)
            return
        }
        hops[hops.count - 1].responseHead += Array(bytes)
    }

    /// Body bytes the transfer took and wrote into its file: only counted (the archive reads
    /// them back from the file), unless the body is small enough to keep.
    func receivedIntoFile(_ bytes: UnsafeRawBufferPointer) {
        guard !hops.isEmpty else { return }
        bodyStarted = true
        intoFile = true
        fileCRC = crc32(fileCRC, bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(bytes.count))
        fileLength += Int64(bytes.count)
        if fileLength <= Self.inMemoryLimit {
            body.append(contentsOf: bytes)
        } else {
            body = []
        }
    }

    /// The transfer's file holds the last hop's first `flushed` body bytes. A 200 whose head
    /// declares ``WARCArchive/streamsFrom`` bytes or more is archived from here on as it is
    /// written out; `file` gives a descriptor of the file and where the body starts in it.
    func bodyWrittenOut(_ flushed: Int64, file: () -> (fd: Int32, offset: Int64)?) {
        guard flushed > streamedUpTo, let hop = hops.last else { return }
        streamedUpTo = flushed
        if !streamConsidered {
            streamConsidered = true
            let head = Self.redacting(secrets, in: hop.responseHead, isResponseHead: true)
            let http = HTTPHead(head)
            guard hop.status == 200, let length = http.contentLength, length >= archive.streamsFrom, !archive.hasFailed else { return }
            var record = WARCRecord(type: "response", fields: [("WARC-Target-URI", hop.url)], head: head, body: .bytes([]))
            record.contentType = "application/http;msgtype=response"
            record.http = http
            if let address = hop.address { record.fields.append(("WARC-IP-Address", address)) }
            // Text the archive compresses is written by the archive (a stream stores its bytes).
            guard !WARCArchive.compresses(type: http.contentType), let (fd, offset) = file(), fd >= 0, let writer = WARCStream(archive: archive, record: record, date: hop.time, length: length, source: fd, offset: offset) else { return }
            stream = (record, writer)
        }
        stream?.writer.advance(to: flushed)
    }

    /// Body bytes the transfer took that go nowhere else (an error page instead of a file): kept
    /// here, up to ``inMemoryLimit``.
    func received(_ bytes: UnsafeRawBufferPointer) {
        guard !hops.isEmpty else { return }
        bodyStarted = true
        let room = Self.inMemoryLimit - body.count
        body.append(contentsOf: bytes.prefix(room))
        if bytes.count > room { bodyCut = true }
    }

    /// The transfer ended; `truncated` names why its last body is not whole (WARC-Truncated),
    /// nil when it is. `file` gives a descriptor of the file a body written into one went to, and
    /// where in it the body starts, when it is too large to have been kept.
    ///
    /// `writtenToFile`: how much of the body its file holds; less than arrived when a write into
    /// it failed (a full disk where the mirror is, not where the archive is). Such a body, too
    /// large to have been kept here, is archived without it, marked truncated: read back, it
    /// would not be what arrived, and would fail the whole archive for the rest of the run.
    func finish(truncated: String?, file: () -> (fd: Int32, offset: Int64)?, memory: [UInt8]? = nil, writtenToFile: Int64? = nil) {
        guard !hops.isEmpty else { return }
        var truncated = truncated
        if intoFile, fileLength > Self.inMemoryLimit, let written = writtenToFile, written < fileLength {
            intoFile = false
            fileLength = 0
            body = []
            truncated = "unspecified"
        }
        // What mirror was given to log in with is in no record: not in a head (a Location with
        // a login), nor in a body held here (a feed whose links carry the user's password).
        for index in hops.indices { hops[index].responseHead = Self.redacting(secrets, in: hops[index].responseHead, isResponseHead: true) }
        if let memory {
            body = Self.redacting(secrets, in: memory)
        } else if !intoFile {
            body = Self.redacting(secrets, in: body)
            if bodyCut { truncated = truncated ?? "length" }
        }
        var streamed: WARCRecord?
        if let (record, writer) = stream {
            stream = nil
            // Only what its header declared, whole, as it was first seen: anything else is
            // archived as any other body, and the stream's file goes.
            if truncated == nil, fileLength == writer.length, record.head == hops[hops.count - 1].responseHead {
                streamed = record
                streamed?.body = .streamed(writer, crc: UInt32(fileCRC))
            } else {
                writer.discard()
            }
        }
        var fileBody: BodyFile?
        if streamed == nil, fileLength > Self.inMemoryLimit {
            guard let (fd, offset) = file(), fd >= 0 else {
                archive.fail(FileSystemError.last(path: hops.last?.url ?? "(a transfer)"))
                return
            }
            fileBody = BodyFile(fd: fd, offset: offset, length: fileLength, crc: UInt32(fileCRC))
        }
        for (index, hop) in hops.enumerated() where !hop.responseHead.isEmpty {
            let isLast = index == hops.count - 1
            let response = isLast ? streamed ?? Self.response(of: hop, body: fileBody.map { .file($0) } ?? .bytes(body), truncated: truncated)
                : Self.response(of: hop, body: nil, truncated: nil)
            var request = WARCRecord(
                type: "request", fields: [("WARC-Target-URI", hop.url), ("WARC-Concurrent-To", response.id)], head: hop.requestHead,
                body: .bytes([]))
            request.contentType = "application/http;msgtype=request"
            if let address = hop.address { request.fields.append(("WARC-IP-Address", address)) }
            archive.append([request, response], date: hop.time)
        }
    }

    /// The response record of `hop`: the last one's with its `body` (`truncated` says why it is
    /// not whole), an earlier one's (nil) without the body libcurl did not read.
    private static func response(of hop: Hop, body: WARCBody?, truncated: String?) -> WARCRecord {
        var response = WARCRecord(type: "response", fields: [("WARC-Target-URI", hop.url)], head: hop.responseHead, body: body ?? .bytes([]))
        response.contentType = "application/http;msgtype=response"
        response.http = HTTPHead(hop.responseHead)
        if let address = hop.address { response.fields.append(("WARC-IP-Address", address)) }
        if let truncated { response.fields.append(("WARC-Truncated", truncated)) }
        if body == nil, let length = response.http.contentLength, length > 0 {
            // A redirect's body, which libcurl does not read when it follows the redirect.
            response.fields.append(("WARC-Truncated", "length"))
        }
        if hop.status == 304 {
            // A revalidation: the copy held is current, and the archive says so.
            response.type = "revisit"
            response.fields.append(("WARC-Profile", WARCArchive.notModifiedProfile))
        }
        return response
    }

    /// Where the line beginning at `start` ends: the index of its CR LF, nil for the last.
    private static func lineEnd(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == 13 && bytes[index + 1] == 10 { return index }
            index += 1
        }
        return nil
    }

    /// Whether `bytes` begin with `prefix` (lower-case ASCII), in any case.
    private static func startsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ prefix: StaticString) -> Bool {
        guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
        return prefix.withUTF8Buffer { prefix in
            zip(bytes, prefix).allSatisfy { byte, expected in byte.asciiLowercased == expected }
        }
    }

    /// Masks the password of every URL login (`scheme://user:password@`, also with JSON's
    /// escaped slashes) in `bytes` that is one of `passwords`.
    private static func maskPasswords(_ passwords: [[UInt8]], inURLsOf bytes: inout [UInt8]) {
        let ends: Set<UInt8> = [0x2F, 0x3F, 0x23, 0x5C, 0x22, 0x27, 0x3C, 0x3E, 0x20, 0x09, 0x0D, 0x0A]
        var index = 0
        let separators = [Array("://".utf8), Array(#":\/\/"#.utf8)]
        while let found = separators.compactMap({ bytes[index...].firstRange(of: $0) }).min(by: { $0.lowerBound < $1.lowerBound }) {
            let start = found.upperBound
            var end = start
            while end < bytes.count, !ends.contains(bytes[end]) { end += 1 }
            index = max(end, start)
            guard let at = bytes[start..<end].lastIndex(of: UInt8(ascii: "@")),
                  let colon = bytes[start..<at].firstIndex(of: UInt8(ascii: ":")),
                  passwords.contains(where: { bytes[(colon + 1)..<at].elementsEqual($0) })
            else { continue }
            for position in (colon + 1)..<at { bytes[position] = UInt8(ascii: "*") }
        }
    }

    /// Passwords shorter than this are not looked for in what was exchanged: one of a few
    /// characters (`200`, `1`) is in every other head and body by chance, and masking those would
    /// break the records, not hide a password.
    static let shortestSought = 4

    /// `bytes` with every occurrence of each of `secrets` (the longest first) masked, byte for
    /// byte, by `*`: a body keeps its length (its head's Content-Length still true). In a
    /// response's head (`isResponseHead`), the status line and the fields that frame the body
    /// (Content-Length, Content-Range) are left as they are: a reader must still parse them.
    static func redacting(_ all: [[UInt8]], in bytes: [UInt8], isResponseHead: Bool = false) -> [UInt8] {
        let secrets = all.filter { $0.count >= shortestSought }
        let short = all.filter { !$0.isEmpty && $0.count < shortestSought }
        var result = bytes
        // A short one is still hidden where it is a login: a URL's `user:password@`.
        if !short.isEmpty { maskPasswords(short, inURLsOf: &result) }
        guard !secrets.isEmpty, !result.isEmpty, secrets.contains(where: { result.firstRange(of: $0) != nil }) else { return result }
        result.withUnsafeMutableBufferPointer { result in
            var lineStart = 0
            var isFirstLine = true
            while lineStart < result.count {
                var lineEnd = lineStart
                if isResponseHead {
                    while lineEnd < result.count, result[lineEnd] != 10 { lineEnd += 1 }
                    lineEnd = min(lineEnd + 1, result.count)
                } else {
                    lineEnd = result.count
                }
                let line = UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: result[lineStart..<lineEnd]))
                let framing = isResponseHead && (isFirstLine || startsIgnoringCase(line, "content-length:") || startsIgnoringCase(line, "content-range:"))
                if !framing {
                    for secret in secrets {
                        var from = lineStart
                        while from < lineEnd, let found = result[from..<lineEnd].firstRange(of: secret) {
                            for index in found { result[index] = UInt8(ascii: "*") }
                            from = found.upperBound
                        }
                    }
                }
                isFirstLine = false
                lineStart = lineEnd
            }
        }
        return result
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 404: "Not Found"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: ""
        }
    }
}
