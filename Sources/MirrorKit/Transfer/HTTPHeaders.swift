import FoundationEssentials

/// Response headers in the order received, looked up without regard to case.
struct HTTPHeaders: Sendable, Equatable, Sequence {
    package private(set) var fields: [(name: String, value: String)] = []

    init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The first value of the header called `name`, compared case-insensitively.
    subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of the header called `name`, in order, as one list (RFC 9110 §5.3: fields of
    /// one name combine, comma-separated, into one value).
    func combined(_ name: String) -> String? {
        let values = fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// A Content-Length value as RFC 9110 §8.6 writes one: decimal digits only, within 64 bits,
    /// or a list of one such number repeated (as a proxy that combines duplicate fields makes
    /// it, which §8.6 lets a recipient read as the number). Nil for anything else.
    /// Items are separated by commas and optional spaces or tabs (RFC 9110's OWS, nothing else).
    /// Read byte by byte: every response's length goes through here, several times.
    static func contentLength(_ value: String) -> Int64? {
        var value = value
        return value.withUTF8 { bytes -> Int64? in
            var length: Int64?
            var first: Range<Int>?
            var start = 0
            while start <= bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.count
                var lower = start, upper = end
                while lower < upper, bytes[lower] == UInt8(ascii: " ") || bytes[lower] == UInt8(ascii: "\t") { lower += 1 }
                while upper > lower, bytes[upper - 1] == UInt8(ascii: " ") || bytes[upper - 1] == UInt8(ascii: "\t") { upper -= 1 }
                guard lower < upper else { return nil }
                if let first {
                    // The same number written the same way: "5, 05" is two fields that disagree.
                    guard bytes[first].elementsEqual(bytes[lower..<upper]) else { return nil }
                } else {
                    var number: Int64 = 0
                    for byte in bytes[lower..<upper] {
                        guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                        let (times10, over) = number.multipliedReportingOverflow(by: 10)
                        let (sum, overAgain) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                        guard !over, !overAgain else { return nil }
                        number = sum
                    }
                    first = lower..<upper
                    length = number
                }
                start = end + 1
            }
            return length
        }
    }

    /// The first Content-Length field that states no length (see ``contentLength(_:)``), as sent.
    /// libcurl 7.88 reads such a value its own way: the digits it begins with ("1e3" is 1), or,
    /// past 64 bits, no length at all, the body then running until the connection closes.
    var invalidContentLength: String? {
        fields.first { $0.name.caseInsensitiveEquals("Content-Length") && Self.contentLength($0.value) == nil }?.value
    }

    mutating func append(name: String, value: String) {
        fields.append((name, value))
    }

    func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// Adds a folded line (one beginning with a space or a tab) to the value of the last field,
    /// the fold read as one space (RFC 9112 §5.2); nothing when no field came before it.
    mutating func continueLastField(_ line: UnsafeRawBufferPointer) {
        guard let last = fields.indices.last else { return }
        let continuation = Self.trimmed(line, line.startIndex..<line.endIndex)
        guard !continuation.isEmpty else { return }
        let text = Self.text(line, continuation)
        fields[last].value = fields[last].value.isEmpty ? text : fields[last].value + " " + text
    }

    /// Parses one raw header line as libcurl delivers it (with its CRLF). Returns nil for the
    /// status line, the blank line and anything without a colon. Read from the bytes as they
    /// came: only the name and the value become strings (bytes that are no UTF-8 replaced in
    /// each, as decoding the whole line would), and no view's indices are stepped through: every
    /// line of every response comes through here on the engine's thread.
    static func parseField(_ line: UnsafeRawBufferPointer) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = trimmed(line, line.startIndex..<colon)
        guard !name.isEmpty, !line[name].contains(UInt8(ascii: " ")) else { return nil }
        let value = trimmed(line, (colon + 1)..<line.endIndex)
        return (text(line, name), text(line, value))
    }

    /// `range` without the spaces, tabs, CR and LF at either end: the only white space a header
    /// line has.
    private static func trimmed(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Range<Int> {
        var (start, end) = (range.lowerBound, range.upperBound)
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return start..<end
    }

    private static func text(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A
    }
}

extension StringProtocol {
    /// Equal but for ASCII case, as header names and schemes are compared; without allocating.
    func caseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        // Lengths first: nearly every header looked at is another name, and most of a different length.
        guard utf8.count == other.utf8.count else { return false }
        // Byte by byte over the strings' bytes: some 20 lookups a response, each of which cost
        // more through the views' indices than the rest of reading the header.
        return withUTF8Bytes { mine in
            other.withUTF8Bytes { theirs in zip(mine, theirs).allSatisfy { $0.asciiLowercased == $1.asciiLowercased } }
        }
    }
}
