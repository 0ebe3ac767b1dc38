/// What `FoundationEssentials` leaves out of Foundation's string editing, for the few places that
/// need it: trimming and percent-encoding.
package enum TrimmedCharacters {
    /// Spaces and tabs: any Unicode space separator (what `CharacterSet.whitespaces` holds).
    case spaces
    /// Those and line breaks (`CharacterSet.whitespacesAndNewlines`).
    case spacesAndNewlines

    func contains(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator { return true }
        guard self == .spacesAndNewlines else { return false }
        return ("\n"..."\r").contains(scalar) || scalar == "\u{85}" || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}

extension StringProtocol {
    /// This text without `characters` at either end.
    package func trimming(_ characters: TrimmedCharacters) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !characters.contains($0) }),
              let last = scalars.lastIndex(where: { !characters.contains($0) })
        else { return "" }
        var trimmed = String.UnicodeScalarView()
        trimmed.append(contentsOf: scalars[first...last])
        return String(trimmed)
    }

    /// This text with its `%XX` escapes decoded; nil when an escape is malformed or the bytes it
    /// gives are not UTF-8 (as Foundation's `removingPercentEncoding`).
    package var percentDecoded: String? {
        var bytes: [UInt8] = []
        var utf8 = self.utf8.makeIterator()
        while let byte = utf8.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = utf8.next().flatMap(Self.hexValue), let low = utf8.next().flatMap(Self.hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// This text with every byte but RFC 3986's unreserved characters (ASCII letters and digits,
    /// `-._~`) percent-encoded: one safe path segment.
    package var percentEncodedSegment: String {
        var result = ""
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return result
    }

    /// `body` over this text's UTF-8 bytes: in place where the text keeps them together (every
    /// native String and Substring), else over a copy. Byte scans on hot paths (header names,
    /// file names, URLs) read them so, not through the view's indices.
    func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        return try Array(utf8).withUnsafeBufferPointer(body)
    }

    /// The value of a hex digit, either case; nil for any other byte.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension UInt8 {
    /// This byte with an ASCII capital made small; any other byte as it is.
    var asciiLowercased: UInt8 { self &- UInt8(ascii: "A") < 26 ? self | 0x20 : self }

    /// Whether this byte is an ASCII letter or digit.
    var isASCIILetterOrDigit: Bool {
        switch self {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: false
        }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether these bytes begin with `prefix`'s (generic `starts(with:)` over a string's view
    /// costs ten times as much, on a path asked of every file).
    func starts(withBytesOf prefix: some StringProtocol) -> Bool {
        prefix.withUTF8Bytes { prefix in prefix.count <= count && hasBytes(prefix, at: 0) }
    }

    /// Whether these bytes end with `suffix`'s.
    func ends(withBytesOf suffix: some StringProtocol) -> Bool {
        suffix.withUTF8Bytes { suffix in suffix.count <= count && hasBytes(suffix, at: count - suffix.count) }
    }

    private func hasBytes(_ other: UnsafeBufferPointer<UInt8>, at offset: Int) -> Bool {
        for index in other.indices where self[offset + index] != other[index] { return false }
        return true
    }
}
