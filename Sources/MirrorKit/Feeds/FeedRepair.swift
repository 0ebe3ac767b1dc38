import FoundationEssentials

/// Mends the damage feed readers forgive before libxml2 reads a feed: a named reference XML does
/// not know (`&eacute;`, `&nbsp;`: HTML's, undeclared in XML) becomes its numeric reference, a
/// numeric reference to no character XML allows becomes U+FFFD's, and an `&` that starts no
/// reference (`?a=1&b=2`) becomes `&#38;`; XML's own named references become numeric ones too. References to the entities the feed's DOCTYPE declares
/// are expanded (``EntityExpansion``). Comments, CDATA sections and processing instructions are
/// left as they are.
///
/// Only references change, and only into references and escaped text: no markup can appear or
/// vanish. The bytes are UTF-8 or an encoding that keeps ASCII's bytes (UTF-16 and UTF-32 were
/// made UTF-8 before).
enum FeedRepair {
    /// `bytes` mended, and how many references were damage (an expanded entity is none).
    static func mendingReferences(
        _ bytes: [UInt8], entities: inout EntityExpansion
    ) throws(EntityExpansion.Refusal) -> (bytes: [UInt8], mended: Int) {
        guard bytes.contains(UInt8(ascii: "&")) else { return (bytes, 0) }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 64)
        var mended = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "<"), let end = skippedSection(bytes, at: index) {
                output += bytes[index..<end]
                index = end
                continue
            }
            guard byte == UInt8(ascii: "&") else {
                output.append(byte)
                index += 1
                continue
            }
            let mend = try reference(bytes, at: index, entities: &entities)
            if let replacement = mend.replacement {
                output += replacement
                if mend.isDamage { mended += 1 }
            } else {
                output += bytes[index..<(index + mend.length)]
            }
            index += mend.length
        }
        return (output, mended)
    }

    /// The end of the comment, CDATA section or processing instruction starting at `index`;
    /// nil for other markup (or one never closed: the rest is read as it is then).
    private static func skippedSection(_ bytes: [UInt8], at index: Int) -> Int? {
        for (open, close) in [("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>")] {
            guard bytes[index...].starts(with: open.utf8) else { continue }
            let closing = Array(close.utf8)
            guard let found = bytes[(index + open.utf8.count)...].firstRange(of: closing) else { return bytes.count }
            return found.upperBound
        }
        return nil
    }

    /// What the `&` at `index` becomes (nil: it stays), how many bytes it and its reference
    /// take, and whether it was damage.
    static func reference(
        _ bytes: [UInt8], at index: Int, entities: inout EntityExpansion
    ) throws(EntityExpansion.Refusal) -> (replacement: [UInt8]?, length: Int, isDamage: Bool) {
        var end = index + 1
        while end < bytes.count, end - index <= 40, isNameByte(bytes[end]) || (end == index + 1 && bytes[end] == UInt8(ascii: "#")) {
            end += 1
        }
        let asText = (replacement: Optional(Array("&#38;".utf8)), length: 1, isDamage: true)
        guard end < bytes.count, bytes[end] == UInt8(ascii: ";"), end > index + 1 else { return asText }
        let name = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
        let length = end + 1 - index
        if name.hasPrefix("#") {
            guard let codePoint = characterReference(name.dropFirst()) else { return asText }
            guard isXMLCharacter(codePoint) else { return (Array("&#65533;".utf8), length, true) }
            // `&#X41;`: HTML reads an upper-case X, XML only a lower-case one.
            return name.hasPrefix("#X") ? (Array("&#\(codePoint);".utf8), length, true) : (nil, length, false)
        }
        // Numeric, as every reference leaves here: once libxml2's recovery starts it drops every
        // named reference after the damage, XML's own five too (`Tom &amp; Jerry` read `Tom  Jerry`).
        if let codePoint = xmlCharacters[name] { return (Array("&#\(codePoint);".utf8), length, false) }
        if let text = try entities.replacement(for: name) { return (text, length, false) }
        if let codePoint = HTMLEntities.codePoints[name] {
            // Netscape's RSS 0.91 DTD declares HTML's Latin-1 entities: those are no damage there.
            let isDeclared = entities.doctype.declaresLatin1Entities && (160...255).contains(codePoint)
            return (Array("&#\(codePoint);".utf8), length, !isDeclared)
        }
        // A name no one declared: its text, as written.
        return asText
    }

    /// XML's predefined entities, the only names a document needs no DOCTYPE for.
    static let xmlCharacters: [String: UInt32] = ["amp": 38, "lt": 60, "gt": 62, "quot": 34, "apos": 39]

    /// The code point of `&#…;`'s digits (`x` and hex, or decimal); nil for none (or too large:
    /// its text, as written).
    private static func characterReference(_ digits: Substring) -> UInt32? {
        let isHex = digits.first == "x" || digits.first == "X"
        let number = isHex ? digits.dropFirst() : digits
        return UInt32(number, radix: isHex ? 16 : 10)
    }

    /// XML 1.0's `Char`: what a character reference may name.
    private static func isXMLCharacter(_ value: UInt32) -> Bool {
        value == 0x9 || value == 0xA || value == 0xD || (0x20...0xD7FF).contains(value) || (0xE000...0xFFFD).contains(value)
            || (0x10000...0x10FFFF).contains(value)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":") || byte >= 0x80
    }

    /// The bytes as libxml2 is to read them, the encoding it is told they are in (nil: the one
    /// they declare), and what was wrong, said as a warning. UTF-32 (which libxml2 2.9 reads only
    /// through iconv) and UTF-16 become UTF-8; bytes that are not the UTF-8 they claim to be (none declared,
    /// or UTF-8) are read as Windows-1252, as browsers read them, unless they are UTF-8 but for a
    /// few stray bytes (those alone are) or a character cut at the end (left out); a declared name
    /// the prolog scan cannot follow is overridden by UTF-8, else Windows-1252.
    static func normalizingEncoding(_ bytes: [UInt8], prolog: FeedProlog) -> (bytes: [UInt8], encoding: String?, warning: String?) {
        if prolog.isUTF32 {
            return (utf8(fromUTF32: bytes, bigEndian: prolog.isUTF32BigEndian), "UTF-8", nil)
        }
        if prolog.isUTF16 {
            return (utf8(fromUTF16: bytes, bigEndian: prolog.isUTF16BigEndian), "UTF-8", nil)
        }
        guard prolog.isByteLayout else { return (bytes, nil, nil) }
        let declared = prolog.declaredEncoding
        let claimsUTF8 = declared.map { $0.uppercased().filter { $0 != "-" && $0 != "_" } == "UTF8" } ?? true
        guard prolog.overridesDeclaredEncoding || claimsUTF8 else { return (bytes, nil, nil) }
        let said = declared.map { "the encoding \($0.prefix(64))" } ?? "no encoding (so UTF-8)"
        let utf8 = String(validating: bytes, as: UTF8.self) != nil ? (bytes, 0) : mostlyUTF8(bytes)
        guard let (text, strays) = utf8 else {
            return (windows1252ToUTF8(bytes), "UTF-8", "declares \(said) but is not UTF-8: read as Windows-1252")
        }
        if strays > 0 {
            let count = strays == 1 ? "1 byte of it is" : "\(strays) bytes of it are"
            return (text, "UTF-8", "declares \(said) but \(count) not UTF-8: read as Windows-1252's character\(strays == 1 ? "" : "s")")
        }
        return prolog.overridesDeclaredEncoding
            ? (text, "UTF-8", "declares \(said), which mirror does not read: read as UTF-8") : (text, nil, nil)
    }

    /// UTF-8 with a few bytes that are not (a quote pasted from Word, a feed cut inside a
    /// character): those bytes as Windows-1252's characters, a character cut at the end left out,
    /// and how many bytes were not UTF-8. Nil when there are as many of those as characters that
    /// are UTF-8 beyond ASCII: then the document is in another encoding, not damaged UTF-8.
    private static func mostlyUTF8(_ bytes: [UInt8]) -> (bytes: [UInt8], strays: Int)? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 16)
        var characters = 0
        var strays = 0
        var index = 0
        while index < bytes.count {
            guard bytes[index] >= 0x80 else {
                output.append(bytes[index])
                index += 1
                continue
            }
            let (length, isCut) = utf8Sequence(bytes, at: index)
            if isCut { break }
            if length > 0 {
                output += bytes[index..<(index + length)]
                characters += 1
                index += length
            } else {
                output += windows1252ToUTF8([bytes[index]])
                strays += 1
                index += 1
            }
        }
        return strays < characters || strays == 0 ? (output, strays) : nil
    }

    /// The length of the UTF-8 sequence of a non-ASCII character at `index` (0: none), and
    /// whether it is one the end of `bytes` cuts short.
    private static func utf8Sequence(_ bytes: [UInt8], at index: Int) -> (length: Int, isCut: Bool) {
        let lead = bytes[index]
        // RFC 3629's table: the second byte's range excludes overlong forms, surrogates and code
        // points past U+10FFFF.
        let (length, second): (Int, ClosedRange<UInt8>) = switch lead {
        case 0xC2...0xDF: (2, 0x80...0xBF)
        case 0xE0: (3, 0xA0...0xBF)
        case 0xED: (3, 0x80...0x9F)
        case 0xE1...0xEF: (3, 0x80...0xBF)
        case 0xF0: (4, 0x90...0xBF)
        case 0xF1...0xF3: (4, 0x80...0xBF)
        case 0xF4: (4, 0x80...0x8F)
        default: (0, 0x80...0xBF)
        }
        guard length > 0 else { return (0, false) }
        for offset in 1..<length {
            guard index + offset < bytes.count else { return (0, true) }
            let byte = bytes[index + offset]
            guard (offset == 1 ? second : 0x80...0xBF).contains(byte) else { return (0, false) }
        }
        return (length, false)
    }

    /// UTF-16 as UTF-8 (a lone surrogate as U+FFFD), so that it is mended and its DOCTYPE taken
    /// out as any other feed's.
    private static func utf8(fromUTF16 bytes: [UInt8], bigEndian: Bool) -> [UInt8] {
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var index = 0
        while index + 2 <= bytes.count {
            let (high, low) = bigEndian ? (bytes[index], bytes[index + 1]) : (bytes[index + 1], bytes[index])
            units.append(UInt16(high) << 8 | UInt16(low))
            index += 2
        }
        if units.first == 0xFEFF { units.removeFirst() }
        return Array(String(decoding: units, as: UTF16.self).utf8)
    }

    private static func utf8(fromUTF32 bytes: [UInt8], bigEndian: Bool) -> [UInt8] {
        var text = ""
        var index = 0
        while index + 4 <= bytes.count {
            let units = bytes[index..<(index + 4)]
            let value = bigEndian ? units.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : units.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            index += 4
            if index == 4 && value == 0xFEFF { continue }
            text.unicodeScalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
        }
        return Array(text.utf8)
    }

    /// Windows-1252's characters for 0x80–0x9F (Latin-1's for the rest; the five it leaves
    /// undefined as their C1 controls, as browsers do).
    private static let windows1252High: [UInt32] = [
        0x20AC, 0x81, 0x201A, 0x192, 0x201E, 0x2026, 0x2020, 0x2021, 0x2C6, 0x2030, 0x160, 0x2039, 0x152, 0x8D, 0x17D, 0x8F,
        0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x2DC, 0x2122, 0x161, 0x203A, 0x153, 0x9D, 0x17E, 0x178,
    ]

    private static func windows1252ToUTF8(_ bytes: [UInt8]) -> [UInt8] {
        var text = ""
        text.unicodeScalars.reserveCapacity(bytes.count)
        // A UTF-8 byte-order mark before bytes that are not UTF-8 is still no text.
        for byte in bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...] {
            let value = (0x80..<0xA0).contains(byte) ? windows1252High[Int(byte) - 0x80] : UInt32(byte)
            text.unicodeScalars.append(Unicode.Scalar(value)!)
        }
        return Array(text.utf8)
    }
}
