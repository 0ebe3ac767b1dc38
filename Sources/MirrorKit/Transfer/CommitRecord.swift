import FoundationEssentials

/// What a finished download carries from its sync until its state row is written: enough for the
/// next run, should a kill come between the two, to record the named file without a request
/// (which URL it is, its validators and its length).
///
/// Small files carry it in a compact binary form that, for the validators of Imgur, nginx, Apache
/// and single-part S3, fits in an ext4 inode beside the attribute's name (``inodeRoom`` bytes with
/// the default 256-byte inodes and no other attribute there): set and taken off again
/// in place, where the full ``PartialRecord`` (its URL in full, its date as text) takes a block of
/// its own, allocated, journalled and freed again for every file. The URL is kept as the first 8
/// bytes of its MD5: the record is only ever checked against the URL of the job that wants the name.
///
/// Larger files keep the full record, a partial's. A partial found carrying the compact form (a
/// kill during its commit's sync) is whole; it is read by the URL that names it (its name is the
/// URL's MD5) and committed without its bytes again, and kept by the budget's sweep.
struct CommitRecord: Equatable, Sendable {
    /// The first 8 bytes of the MD5 of the URL.
    var urlDigest: UInt64
    var etag: String?
    var lastModified: String?
    /// The size of the whole file, when the record says it.
    var length: Int64?

    /// The files carrying the compact form at commit: up to 1 MiB. Files up to this size are
    /// written whole at once (``FileSink``'s largest buffer) and, unless an earlier attempt was cut
    /// short, carry no record while they download: the compact one is their only attribute.
    static let compactUpTo = Int64(FileSink.largestBuffer)
    /// The most a value may take and still fit in a 256-byte ext4 inode beside the attribute's
    /// name (`mirror.partial`): 96 bytes of room, less the header, the entry and its end mark.
    static let inodeRoom = 56

    init(url: String, etag: String?, lastModified: String?, length: Int64?) throws(DigestError) {
        urlDigest = try Digest.md5Prefix(of: url)
        self.etag = etag
        self.lastModified = lastModified
        self.length = length
    }

    /// The record of `url` a full ``PartialRecord`` gives.
    init(_ record: PartialRecord) throws(DigestError) {
        try self.init(url: record.url, etag: record.etag, lastModified: record.lastModified, length: record.totalLength)
    }

    /// The URL's digest as the first 16 hex digits of a partial's name.
    var urlDigestHex: String {
        var bytes: [UInt8] = []
        appendURLDigest(to: &bytes)
        return MD5Context.hex(bytes)
    }

    /// The URL's digest as its 8 bytes, big-endian: as the MD5 gave them.
    private func appendURLDigest(to bytes: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: urlDigest >> UInt64(shift))) }
    }

    /// Whether the record is that of `url`'s download.
    func isFor(_ url: String) -> Bool {
        (try? Digest.md5Prefix(of: url)) == urlDigest
    }

    // MARK: - The compact form

    // "m", 3; the URL's digest; the length (LEB128); the date; the ETag. A date is absent (0),
    // the seconds of an IMF-fixdate that reads back as sent (1, LEB128), or text (2, a length byte
    // and the bytes). An ETag is absent (0), a strong quoted lower-case 32-hex one as its 16 bytes
    // (1: Imgur's and S3's MD5s), or text (2).
    private static let magic: [UInt8] = [UInt8(ascii: "m"), 3]
    private enum Tag: UInt8 { case absent = 0, compact = 1, text = 2 }

    /// The compact form; nil when a field is too long for it (a text over 255 bytes) or the length
    /// is not known. It reads back as this record: a date is written as a number only when its
    /// text is the one the number formats to, an ETag as bytes only when it is the quoted
    /// lower-case hex they format to, and a text is bytes of UTF-8 (the tests try every shape).
    var compactEncoded: [UInt8]? {
        guard let length, length >= 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.inodeRoom)
        bytes += Self.magic
        appendURLDigest(to: &bytes)
        Self.appendNumber(UInt64(length), to: &bytes)
        if let lastModified {
            if let seconds = Self.fixdateSeconds(lastModified) {
                bytes.append(Tag.compact.rawValue)
                Self.appendNumber(seconds, to: &bytes)
            } else {
                guard Self.appendText(lastModified, to: &bytes) else { return nil }
            }
        } else {
            bytes.append(Tag.absent.rawValue)
        }
        if let etag {
            if let md5 = Digest.md5(inETag: etag), "\"\(md5)\"".utf8.elementsEqual(etag.utf8) {
                bytes.append(Tag.compact.rawValue)
                bytes += Self.bytes(ofHex: md5)
            } else {
                guard Self.appendText(etag, to: &bytes) else { return nil }
            }
        } else {
            bytes.append(Tag.absent.rawValue)
        }
        return bytes
    }

    /// A stored record: the compact form, or a full ``PartialRecord`` (what older builds and
    /// larger files carry). Nil for anything else.
    init?(stored bytes: [UInt8]) {
        guard bytes.starts(with: Self.magic) else {
            guard let full = PartialRecord(stored: bytes), let record = try? CommitRecord(full) else { return nil }
            self = record
            return
        }
        self.init(compact: bytes)
    }

    /// The compact form alone; nil for anything else, or anything left over after the fields.
    init?(compact bytes: [UInt8]) {
        guard bytes.starts(with: Self.magic) else { return nil }
        var reader = Reader(bytes: bytes, position: Self.magic.count)
        guard let digest = reader.take(8), let length = reader.number(), length <= UInt64(Int64.max) else { return nil }
        urlDigest = digest.reduce(0) { $0 << 8 | UInt64($1) }
        self.length = Int64(length)
        switch reader.tag() {
        case .absent: lastModified = nil
        case .compact:
            // No date the encoder writes is past the last one with four digits of year, and one
            // past it would not fit the calendar's arithmetic.
            guard let seconds = reader.number(), seconds <= Self.lastFourDigitYearSecond else { return nil }
            lastModified = HTTPDate.format(Date(timeIntervalSince1970: Double(seconds)))
        case .text:
            guard let text = reader.text() else { return nil }
            lastModified = text
        case nil: return nil
        }
        switch reader.tag() {
        case .absent: etag = nil
        case .compact:
            guard let md5 = reader.take(16) else { return nil }
            etag = "\"" + MD5Context.hex(md5) + "\""
        case .text:
            guard let text = reader.text() else { return nil }
            etag = text
        case nil: return nil
        }
        guard reader.isAtEnd else { return nil }
    }

    /// 9999-12-31 23:59:59 GMT.
    private static let lastFourDigitYearSecond: UInt64 = 253_402_300_799

    /// The seconds since 1970 of an IMF-fixdate that formats back to exactly `text` (its weekday
    /// and zone as sent): the date read back is the server's, byte for byte.
    private static func fixdateSeconds(_ text: String) -> UInt64? {
        guard let date = HTTPDate.parseFixdate(text), date.timeIntervalSince1970 >= 0,
              UInt64(date.timeIntervalSince1970) <= lastFourDigitYearSecond, HTTPDate.format(date).utf8.elementsEqual(text.utf8)
        else { return nil }
        return UInt64(date.timeIntervalSince1970)
    }

    private static func appendNumber(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private static func appendText(_ text: String, to bytes: inout [UInt8]) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.count <= 255 else { return false }
        bytes.append(Tag.text.rawValue)
        bytes.append(UInt8(utf8.count))
        bytes += utf8
        return true
    }

    private static func bytes(ofHex hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in hex.utf8 {
            let digit = character <= UInt8(ascii: "9") ? character - UInt8(ascii: "0") : character - UInt8(ascii: "a") + 10
            if let first = high {
                bytes.append(first << 4 | digit)
                high = nil
            } else {
                high = digit
            }
        }
        return bytes
    }

    /// Reads the compact form's fields in turn; each nil when the bytes run out or are malformed.
    private struct Reader {
        let bytes: [UInt8]
        var position: Int

        var isAtEnd: Bool { position == bytes.count }

        mutating func take(_ count: Int) -> [UInt8]? {
            guard bytes.count - position >= count else { return nil }
            defer { position += count }
            return Array(bytes[position..<position + count])
        }

        mutating func tag() -> Tag? {
            take(1).flatMap { Tag(rawValue: $0[0]) }
        }

        /// LEB128, at most 10 bytes, with no bits beyond 64 and no needless trailing zero byte.
        mutating func number() -> UInt64? {
            var value: UInt64 = 0
            for index in 0..<10 {
                guard let byte = take(1)?[0] else { return nil }
                let bits = UInt64(byte & 0x7F)
                guard index < 9 || bits <= 1 else { return nil }
                value |= bits << (7 * UInt64(index))
                if byte & 0x80 == 0 { return index > 0 && byte == 0 ? nil : value }
            }
            return nil
        }

        mutating func text() -> String? {
            guard let count = take(1)?[0], let utf8 = take(Int(count)) else { return nil }
            let text = String(decoding: utf8, as: UTF8.self)
            // Header values are bytes; anything that does not read back as sent is not ours.
            return Array(text.utf8) == utf8 ? text : nil
        }
    }
}
