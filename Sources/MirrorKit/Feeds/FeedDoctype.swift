/// A feed's DOCTYPE, read by mirror and taken out of the document before libxml2 reads it, as feed
/// readers read it: its external DTD (Netscape's RSS 0.91, say) is never loaded, and of its
/// internal subset only the internal general entities are kept, to be expanded by
/// ``EntityExpansion`` within a budget. Parameter entities, element and attribute declarations
/// and external entities are read past; a reference to an external entity refuses the feed.
///
/// The DOCTYPE's bytes are replaced by its line breaks, so that libxml2's line numbers stay the
/// document's.
struct FeedDoctype {
    /// Internal general entities: their literal values, as declared (the first declaration of a
    /// name binds, as XML has it).
    var entities: [String: [UInt8]] = [:]
    /// External general entities (`SYSTEM`, `PUBLIC`, `NDATA`), by name: never loaded.
    var externalEntities: Set<String> = []
    /// Netscape's RSS 0.91 DTD, which declares HTML's Latin-1 entities: those are no damage.
    var declaresLatin1Entities = false

    /// Why a DOCTYPE cannot be read.
    struct Unreadable: Error {
        var reason: String
    }

    /// Reads the DOCTYPE at `range` of `bytes` (a byte layout), and returns the bytes without it.
    static func takeOut(of bytes: [UInt8], at range: Range<Int>) throws(Unreadable) -> (bytes: [UInt8], doctype: FeedDoctype) {
        var scanner = Scanner(bytes: bytes, index: range.lowerBound, end: range.upperBound)
        let doctype = try scanner.readDoctype()
        var output = Array(bytes[..<range.lowerBound])
        output.reserveCapacity(bytes.count)
        output += bytes[range].filter { $0 == UInt8(ascii: "\n") }
        output += bytes[range.upperBound...]
        return (output, doctype)
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index: Int
        let end: Int

        mutating func readDoctype() throws(Unreadable) -> FeedDoctype {
            var doctype = FeedDoctype()
            index += "<!DOCTYPE".utf8.count
            try blanks(required: true)
            _ = try name()
            let hadBlank = try blanks(required: false)
            if hadBlank, let keyword = peekKeyword(), keyword == "SYSTEM" || keyword == "PUBLIC" {
                let id = try externalID()
                doctype.declaresLatin1Entities = id.public?.uppercased().contains("DTD RSS 0.91") == true
                    || id.system?.lowercased().hasSuffix("/rss-0.91.dtd") == true
                try blanks(required: false)
            }
            if peek == UInt8(ascii: "[") {
                index += 1
                try readSubset(into: &doctype)
                try blanks(required: false)
            }
            guard peek == UInt8(ascii: ">"), index + 1 == end else { throw unexpected("where it should end with `>`") }
            return doctype
        }

        private mutating func readSubset(into doctype: inout FeedDoctype) throws(Unreadable) {
            while true {
                try blanks(required: false)
                guard let byte = peek else { throw Unreadable(reason: "its internal subset is never closed with `]`") }
                if byte == UInt8(ascii: "]") {
                    index += 1
                    return
                }
                if starts(with: "<!--") {
                    try skip(past: "-->", what: "a comment")
                } else if starts(with: "<?") {
                    try skip(past: "?>", what: "a processing instruction")
                } else if starts(with: "<!ENTITY") {
                    index += "<!ENTITY".utf8.count
                    try readEntity(into: &doctype)
                } else if starts(with: "<!") {
                    try skipDeclaration()
                } else if byte == UInt8(ascii: "%") {
                    // A parameter entity's reference: its declarations (external ones, never
                    // loaded) are not read, as a non-validating reader may do.
                    index += 1
                    _ = try name()
                    guard peek == UInt8(ascii: ";") else { throw unexpected("after a parameter entity's name") }
                    index += 1
                } else {
                    throw unexpected("in its internal subset")
                }
            }
        }

        private mutating func readEntity(into doctype: inout FeedDoctype) throws(Unreadable) {
            try blanks(required: true)
            let isParameter = peek == UInt8(ascii: "%")
            if isParameter {
                index += 1
                try blanks(required: true)
            }
            let entity = try name()
            try blanks(required: true)
            if let keyword = peekKeyword(), keyword == "SYSTEM" || keyword == "PUBLIC" {
                _ = try externalID()
                let hadBlank = try blanks(required: false)
                if hadBlank, peekKeyword() == "NDATA" {
                    index += "NDATA".utf8.count
                    try blanks(required: true)
                    _ = try name()
                }
                if !isParameter && doctype.entities[entity] == nil { doctype.externalEntities.insert(entity) }
            } else {
                let value = try literal()
                if !isParameter && !doctype.externalEntities.contains(entity) && doctype.entities[entity] == nil {
                    doctype.entities[entity] = value
                }
            }
            try blanks(required: false)
            guard peek == UInt8(ascii: ">") else { throw unexpected("at the end of the entity \(entity.prefix(64))") }
            index += 1
        }

        /// `SYSTEM "uri"` or `PUBLIC "id" "uri"`: the identifiers there are.
        private mutating func externalID() throws(Unreadable) -> (public: String?, system: String?) {
            let keyword = peekKeyword()
            index += 6
            try blanks(required: true)
            let first = String(decoding: try literal(), as: UTF8.self)
            guard keyword == "PUBLIC" else { return (nil, first) }
            // The system literal may be left out in a DOCTYPE (SGML's habit, which some write).
            let hadBlank = try blanks(required: false)
            var system: String?
            if hadBlank, peek == UInt8(ascii: "\"") || peek == UInt8(ascii: "'") { system = String(decoding: try literal(), as: UTF8.self) }
            return (first, system)
        }

        /// `<!ELEMENT`, `<!ATTLIST`, `<!NOTATION`: up to its `>`, through its literals.
        private mutating func skipDeclaration() throws(Unreadable) {
            index += 2
            while let byte = peek {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    _ = try literal()
                    continue
                }
                index += 1
                if byte == UInt8(ascii: ">") { return }
            }
            throw Unreadable(reason: "a declaration in its internal subset is never closed")
        }

        private mutating func literal() throws(Unreadable) -> [UInt8] {
            guard let quote = peek, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
                throw unexpected("where a quoted value should be")
            }
            let start = index + 1
            guard let close = bytes[start..<end].firstIndex(of: quote) else { throw Unreadable(reason: "a quoted value is never closed") }
            index = close + 1
            return Array(bytes[start..<close])
        }

        private mutating func name() throws(Unreadable) -> String {
            let start = index
            while let byte = peek, Self.isNameByte(byte) { index += 1 }
            guard index > start else { throw unexpected("where a name should be") }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        @discardableResult
        private mutating func blanks(required: Bool) throws(Unreadable) -> Bool {
            let start = index
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
            if required && index == start { throw unexpected("where a blank should be") }
            return index > start
        }

        private mutating func skip(past terminator: String, what: String) throws(Unreadable) {
            guard let found = bytes[index..<end].firstRange(of: Array(terminator.utf8)) else {
                throw Unreadable(reason: "\(what) in its internal subset is never closed")
            }
            index = found.upperBound
        }

        private var peek: UInt8? { index < end ? bytes[index] : nil }

        private func starts(with text: String) -> Bool { bytes[index..<end].starts(with: text.utf8) }

        private func peekKeyword() -> String? {
            ["SYSTEM", "PUBLIC", "NDATA"].first { starts(with: $0) }
        }

        private func unexpected(_ place: String) -> Unreadable {
            guard let byte = peek else { return Unreadable(reason: "it ends too soon") }
            let shown = byte < 0x80 && byte >= 0x20 ? "`\(Character(Unicode.Scalar(byte)))`" : "byte 0x" + String(byte, radix: 16, uppercase: true)
            return Unreadable(reason: "\(shown) \(place)")
        }

        static func isNameByte(_ byte: UInt8) -> Bool {
            byte >= 0x80 || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":")
        }
    }
}
