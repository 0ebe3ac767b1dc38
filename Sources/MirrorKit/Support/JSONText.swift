/// JSON written straight into bytes, for text mirror writes often: an index line per record, a
/// crawl row per image. `JSONEncoder` builds a tree of boxed values and a dictionary per object
/// first, which cost more than storing the row (see BENCHMARKS.md, issue 23).
enum JSONText {
    /// A JSON string, as Python's `json.dumps` writes one (non-ASCII as `\u` escapes).
    static func quoted(_ text: String) -> String {
        var bytes: [UInt8] = []
        appendQuoted(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `text` as a JSON string, appended to `bytes`. With `asciiOnly` (Python's `ensure_ascii`,
    /// which cdxj-indexer's lines have), every character past ASCII is a `\u` escape, surrogate
    /// pairs beyond the first plane; without, it is its UTF-8 bytes, as RFC 8259 allows, and only
    /// the quote, the backslash and control characters are escaped.
    static func appendQuoted(_ text: String, to bytes: inout [UInt8], asciiOnly: Bool = true) {
        bytes.append(UInt8(ascii: "\""))
        text.withUTF8Bytes { utf8 in
            // Most text needs no escape: copied whole.
            if !utf8.contains(where: { needsEscape($0, asciiOnly: asciiOnly) }) {
                bytes.append(contentsOf: utf8)
                return
            }
            if asciiOnly {
                for unit in text.utf16 { appendEscaped(unit, to: &bytes) }
            } else {
                // DEL is no control character to JSON: written as it is, as the copy above writes it.
                for byte in utf8 {
                    if byte < 0x7F { appendEscaped(UInt16(byte), to: &bytes) } else { bytes.append(byte) }
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8, asciiOnly: Bool) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || (asciiOnly && byte >= 0x7F)
    }

    private static func appendEscaped(_ unit: UInt16, to bytes: inout [UInt8]) {
        switch unit {
        case 0x22: bytes += #"\""#.utf8
        case 0x5C: bytes += #"\\"#.utf8
        case 0x0A: bytes += #"\n"#.utf8
        case 0x0D: bytes += #"\r"#.utf8
        case 0x09: bytes += #"\t"#.utf8
        case 0x08: bytes += #"\b"#.utf8
        case 0x0C: bytes += #"\f"#.utf8
        case 0x20..<0x7F: bytes.append(UInt8(unit))
        default:
            bytes += #"\u"#.utf8
            for shift in stride(from: 12, through: 0, by: -4) {
                let digit = UInt8(unit >> UInt16(shift) & 0xF)
                bytes.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
            }
        }
    }

    /// A JSON object written a member at a time; members with no value (nil) are left out, as
    /// `encodeIfPresent` leaves them out.
    struct Object {
        private(set) var bytes: [UInt8] = [UInt8(ascii: "{")]

        /// The object's text, closed: its own bytes, not a copy.
        consuming func closed() -> [UInt8] {
            bytes.append(UInt8(ascii: "}"))
            return bytes
        }

        private mutating func key(_ name: StaticString) {
            if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            bytes += "\":".utf8
        }

        mutating func add(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            key(name)
            JSONText.appendQuoted(value, to: &bytes, asciiOnly: false)
        }

        mutating func add(_ name: StaticString, _ value: (some BinaryInteger)?) {
            guard let value else { return }
            key(name)
            bytes += String(value).utf8
        }

        mutating func add(_ name: StaticString, _ value: Bool) {
            key(name)
            bytes += (value ? "true" : "false").utf8
        }

        mutating func add(_ name: StaticString, _ values: [String]?) {
            guard let values else { return }
            key(name)
            bytes.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONText.appendQuoted(value, to: &bytes, asciiOnly: false)
            }
            bytes.append(UInt8(ascii: "]"))
        }

        mutating func add(_ name: StaticString, _ object: Object?) {
            guard let object else { return }
            key(name)
            bytes += object.closed()
        }
    }
}
