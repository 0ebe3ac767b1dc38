import Synchronization
import Glibc

/// One WARC/1.1 record (ISO 28500:2017): its named fields, and a block of a head held in memory
/// and a body held in memory or read from a file. The digests are the block's and the
/// payload's, computed by the archive as it writes the record.
struct WARCRecord: Sendable {
    var type: String
    var id = WARCRecord.newID()
    var fields: [(name: String, value: String)]
    /// The part of the block before the body: an HTTP message's head.
    var head: [UInt8]
    var body: WARCBody
    var contentType: String?
    /// What the HTTP head says (a response's), read once when the record is made.
    var http = HTTPHead([])

    var blockLength: Int64 { Int64(head.count) + body.length }

    /// The record's header, up to and including the blank line before the block, whose body is
    /// `bodyLength` bytes when given (a body not yet taken).
    func header(date: String, bodyLength: Int64? = nil) -> [UInt8] {
        var text = "WARC/1.1\r\nWARC-Type: \(type)\r\nWARC-Record-ID: \(id)\r\nWARC-Date: \(date)\r\n"
        for field in fields { text += "\(field.name): \(field.value)\r\n" }
        if let contentType { text += "Content-Type: \(contentType)\r\n" }
        text += "Content-Length: \(bodyLength.map { Int64(head.count) + $0 } ?? blockLength)\r\n\r\n"
        return Array(text.utf8)
    }

    /// A process's random start, and a count on from it: ids unique within the process, and
    /// across processes as random ones are, for one call to the kernel's generator.
    private static let idBase: (UInt64, UInt64) = (UInt64.random(in: 0...UInt64.max), UInt64.random(in: 0...UInt64.max))
    private static let idCount = Atomic<UInt64>(0)

    /// A new `<urn:uuid:…>` (version 4).
    static func newID() -> String {
        let count = idCount.add(1, ordering: .relaxed).newValue
        let high = idBase.0
        let low = idBase.1 &+ count
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) } + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = MD5Context.hex(bytes)
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex.dropFirst(range.lowerBound).prefix(range.count))
        }
        return "<urn:uuid:\(parts.joined(separator: "-"))>"
    }

    /// `sha1:` and the digest in base32 (RFC 4648, upper case, no padding needed for 20 bytes),
    /// as wget, warcio and the Internet Archive write it.
    static func digestLabel(sha1 bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
        var text: [UInt8] = []
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                text.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { text.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return "sha1:" + String(decoding: text, as: UTF8.self)
    }

    /// WARC-Date's form: UTC, to the microsecond (WARC/1.1 allows a fraction).
    static func date(_ time: timespec) -> String {
        var seconds = time_t(time.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var micros = String(Int(time.tv_nsec) / 1000)
        micros = String(repeating: "0", count: 6 - micros.count) + micros
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(micros)Z"
    }

    static func now() -> timespec {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return time
    }
}

/// A record's body: bytes, a range of a file (closed when the body is dropped), or a body
/// archived as it arrived, into a file of its own (with the CRC-32 it arrived with).
enum WARCBody: Sendable {
    case bytes([UInt8])
    case file(BodyFile)
    case streamed(WARCStream, crc: UInt32)

    var length: Int64 {
        switch self {
        case .bytes(let bytes): Int64(bytes.count)
        case .file(let file): file.length
        case .streamed(let stream, _): stream.length
        }
    }
}

/// A body too large to hold in memory while it waits to be archived: the bytes at `offset` of a
/// descriptor of the archive's own (closed when the body is dropped): the file the body was
/// downloaded into, whose CRC-32 as received is known, so that bytes written over it since are
/// found out.
final class BodyFile: Sendable {
    let fd: Int32
    let offset: Int64
    let length: Int64
    /// The CRC-32 of the bytes as they arrived, where they may be written over before they are read.
    let crc: UInt32?

    init(fd: Int32, offset: Int64 = 0, length: Int64, crc: UInt32? = nil) {
        self.fd = fd
        self.offset = offset
        self.length = length
        self.crc = crc
    }

    deinit {
        close(fd)
    }
}
