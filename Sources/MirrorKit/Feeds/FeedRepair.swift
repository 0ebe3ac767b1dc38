import FoundationEssentials

/// Mends the damage feed readers forgive before libxml2 reads a feed: a named reference XML does
/// not know (`&eacute;`, `&nbsp;`: HTML's, undeclared in XML) becomes its numeric reference, and
/// an `&` that starts no reference (`?a=1&b=2`) becomes `&amp;`. Comments, CDATA sections and
/// processing instructions are left as they are.
///
/// Only references change, and only into references: no markup can appear or vanish. A feed with
/// a DOCTYPE is refused before this runs (``FeedProlog``), so no entity of the document's own can
/// be meant. Bytes in an encoding that does not keep ASCII's bytes (UTF-16) are left to libxml2.
enum FeedRepair {
    /// `bytes` mended, and how many references were.
    static func mendingReferences(_ bytes: [UInt8]) -> (bytes: [UInt8], mended: Int) {
        guard bytes.contains(UInt8(ascii: "&")), isASCIICompatible(bytes) else { return (bytes, 0) }
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
            let (replacement, length) = reference(bytes, at: index)
            if let replacement {
                output += replacement
                mended += 1
            } else {
                output += bytes[index..<(index + length)]
            }
            index += length
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

    /// What the `&` at `index` becomes (nil: it stays), and how many bytes it and its
    /// reference take.
    private static func reference(_ bytes: [UInt8], at index: Int) -> (replacement: [UInt8]?, length: Int) {
        var end = index + 1
        while end < bytes.count, end - index <= 40, isNameByte(bytes[end]) || (end == index + 1 && bytes[end] == UInt8(ascii: "#")) {
            end += 1
        }
        guard end < bytes.count, bytes[end] == UInt8(ascii: ";"), end > index + 1 else {
            return (Array("&amp;".utf8), 1)
        }
        let name = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
        let length = end + 1 - index
        if name.hasPrefix("#") || ["amp", "lt", "gt", "quot", "apos"].contains(name) { return (nil, length) }
        if let codePoint = HTMLEntities.codePoints[name] { return (Array("&#\(codePoint);".utf8), length) }
        // A name no one declared: its text, as written.
        return (Array("&amp;".utf8), 1)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "x")
    }

    /// Not UTF-16 (by byte-order mark or by the zero bytes of `<?`): ASCII's bytes are ASCII.
    private static func isASCIICompatible(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 2 else { return true }
        return !((bytes[0] == 0xFE && bytes[1] == 0xFF) || (bytes[0] == 0xFF && bytes[1] == 0xFE) || bytes[0] == 0 || bytes[1] == 0)
    }
}
