import FoundationEssentials
import Glibc

/// Reads what comes before a feed's root element, byte by byte, and finds its DOCTYPE before any
/// of it reaches libxml2.
///
/// libxml2 reads a DOCTYPE's internal subset whole, declarations and entities, before it reports
/// it: a gigabyte of entity declarations costs that time and memory however the reader treats the
/// node afterwards, and libxml2 2.9 has no option to skip the subset. So the prolog is scanned
/// first: the XML declaration, comments, processing instructions and blanks are passed over; a
/// `<!DOCTYPE` (in any case) is followed to its end through quoted literals, comments and
/// instructions of its subset, and refused past ``maximumDoctypeUnits``; the first other markup,
/// normally the root element, ends the scan. ``FeedDoctype`` then takes the DOCTYPE out of the
/// document, so libxml2 never sees one. Feeding the scan a body as it downloads (it is a
/// ``BodyInspector``) ends the download at a DOCTYPE too long, as at once as the bytes show it.
///
/// The scan sees what libxml2 sees only if it decodes the bytes alike: it reads UTF-8, UTF-16 and
/// UTF-32 with either byte order (found as libxml2 finds them, by byte-order mark or by `<` in the
/// first four bytes) and the encodings that keep ASCII's bytes for ASCII's characters, and
/// overrides or refuses any other a feed declares or starts with (UTF-7, ISO-2022, EBCDIC), where
/// a DOCTYPE could hide.
struct FeedProlog: BodyInspector {
    /// The most code units a DOCTYPE may take. A feed's is a line (Netscape's RSS 0.91 public
    /// identifier) or a few entity declarations.
    static let maximumDoctypeUnits = 1 << 20
    static let doctypeTooLong = "has a DOCTYPE longer than 1 MiB; a feed's is a line or a few declarations"

    private enum Layout: Equatable {
        /// One byte per code unit: UTF-8 and the ASCII-based encodings.
        case bytes
        case utf16(bigEndian: Bool)
        case utf32(bigEndian: Bool)

        var unitSize: Int {
            switch self {
            case .bytes: 1
            case .utf16: 2
            case .utf32: 4
            }
        }
    }

    private enum State {
        /// Between markup; `atStart` before anything at all, where an XML declaration may begin.
        case between(atStart: Bool)
        /// After `<`.
        case open(atStart: Bool)
        /// After `<?`: the target, matched against `xml` (`matched` is nil once it is not).
        case target(atStart: Bool, matched: Int?)
        /// Inside a processing instruction; `question` when the last character was `?`.
        case instruction(question: Bool)
        /// Inside the XML declaration, which is kept to read its encoding.
        case declaration(question: Bool)
        /// After `<!`: how many characters of `--` or of `DOCTYPE` have matched.
        case bang(matched: Int, comment: Bool)
        /// Inside a comment, after this many consecutive `-`.
        case comment(dashes: Int)
        /// Inside the DOCTYPE, within a quoted literal or not, within its internal subset or not.
        case doctype(quote: UInt8?, subset: Bool)
        /// In the internal subset, after `<`.
        case subsetOpen
        /// In the internal subset, after `<!` and this many `-`.
        case subsetBang(dashes: Int)
        case subsetComment(dashes: Int)
        case subsetInstruction(question: Bool)
    }

    private var layout: Layout?
    /// The first bytes, kept until they tell the layout.
    private var head: [UInt8] = []
    /// A UTF-16 code unit's first byte when a chunk ended between its two.
    private var halfUnit: UInt8?
    /// A UTF-32 code unit's first bytes when a chunk ended inside it.
    private var partialUnit: [UInt8] = []
    /// The encoding the XML declaration names, where it names one.
    private(set) var declaredEncoding: String?
    /// The declared encoding is one libxml2 must not be left to read (see ``endDeclaration()``):
    /// the feed is read as UTF-8, else Windows-1252, with a warning, as the scan read it.
    private(set) var overridesDeclaredEncoding = false
    /// The bytes are UTF-32: they are made UTF-8 before libxml2 reads them.
    var isUTF32: Bool { if case .utf32? = layout { true } else { false } }
    /// One byte per code unit (UTF-8 or an ASCII-based encoding), as far as the first bytes tell.
    var isByteLayout: Bool { if case .bytes? = layout { true } else { false } }
    var isUTF32BigEndian: Bool { if case .utf32(true)? = layout { true } else { false } }
    /// The bytes are UTF-16: they are made UTF-8 before libxml2 reads them.
    var isUTF16: Bool { if case .utf16? = layout { true } else { false } }
    var isUTF16BigEndian: Bool { if case .utf16(true)? = layout { true } else { false } }
    private var state = State.between(atStart: true)
    /// Code units stepped through so far (a byte-order mark counted).
    private var units = 0
    /// Where the DOCTYPE starts (its `<`) and ends (after its `>`), in code units: in bytes, for
    /// a byte layout.
    private(set) var doctypeStart: Int?
    private(set) var doctypeEnd: Int?
    /// The XML declaration's text, blanks collapsed, non-ASCII as 0x80.
    private var declaration: [UInt8] = []
    private var verdict = BodyInspection.undecided

    static let maximumDeclarationBytes = 1024

    mutating func inspect(_ bytes: UnsafeRawBufferPointer) -> BodyInspection {
        guard verdict == .undecided else { return verdict }
        var rest = bytes[...]
        if layout == nil {
            // The first four bytes wait in `head` until all four are in, then are scanned first.
            let taken = min(4 - head.count, rest.count)
            head.append(contentsOf: rest.prefix(taken))
            rest = rest.dropFirst(taken)
            guard head.count == 4 else { return .undecided }
            guard let (found, skip) = detectLayout() else { return verdict }
            layout = found
            units = skip / found.unitSize
            let first = head
            first.withUnsafeBytes { feed(units: UnsafeRawBufferPointer(rebasing: $0.dropFirst(skip))) }
        }
        feed(units: UnsafeRawBufferPointer(rebasing: rest))
        return verdict
    }

    /// The layout the first four bytes show, and the length of the byte-order mark to skip; nil
    /// (and the feed refused) for UCS-4 and EBCDIC.
    private mutating func detectLayout() -> (Layout, Int)? {
        switch (head[0], head[1], head[2], head[3]) {
        case (0x00, 0x00, 0xFE, 0xFF): return (.utf32(bigEndian: true), 4)
        case (0xFF, 0xFE, 0x00, 0x00): return (.utf32(bigEndian: false), 4)
        case (0x00, 0x00, 0x00, 0x3C): return (.utf32(bigEndian: true), 0)
        case (0x3C, 0x00, 0x00, 0x00): return (.utf32(bigEndian: false), 0)
        case (0x00, 0x00, 0xFF, 0xFE), (0xFE, 0xFF, 0x00, 0x00), (0x00, 0x00, 0x3C, 0x00), (0x00, 0x3C, 0x00, 0x00):
            verdict = .refused("is in UCS-4 of an unusual byte order (2143 or 3412); " + Self.readableEncodings)
            return nil
        case (0x4C, 0x6F, 0xA7, 0x94):
            verdict = .refused("is in EBCDIC; " + Self.readableEncodings)
            return nil
        case (0xFE, 0xFF, _, _): return (.utf16(bigEndian: true), 2)
        case (0xFF, 0xFE, _, _): return (.utf16(bigEndian: false), 2)
        case (0x00, 0x3C, 0x00, 0x3F): return (.utf16(bigEndian: true), 0)
        case (0x3C, 0x00, 0x3F, 0x00): return (.utf16(bigEndian: false), 0)
        case (0xEF, 0xBB, 0xBF, _): return (.bytes, 3)
        default: return (.bytes, 0)
        }
    }

    private static let readableEncodings = "mirror reads feeds in UTF-8, UTF-16 and encodings that extend ASCII"

    /// Decodes code units and steps the scan with each, ASCII as itself and anything else as 0x80.
    private mutating func feed(units bytes: UnsafeRawBufferPointer) {
        switch layout {
        case .bytes?:
            var index = 0
            while index < bytes.count, verdict == .undecided {
                // In a comment or an instruction only `-` or `?` can begin its end: a prolog of
                // megabytes of comment is skipped at memchr's pace, not a step at a time.
                let awaited: UInt8? = switch state {
                case .comment(dashes: 0), .subsetComment(dashes: 0): UInt8(ascii: "-")
                case .instruction(question: false), .subsetInstruction(question: false): UInt8(ascii: "?")
                case .doctype(let quote?, _): quote
                default: nil
                }
                if let awaited {
                    guard let found = memchr(bytes.baseAddress! + index, Int32(awaited), bytes.count - index) else {
                        units += bytes.count - index
                        checkDoctypeLength()
                        return
                    }
                    let skipped = bytes.baseAddress!.distance(to: UnsafeRawPointer(found))
                    units += skipped - index
                    index = skipped
                }
                let byte = bytes[index]
                step(byte < 0x80 ? byte : 0x80)
                index += 1
            }
        case .utf16(let bigEndian)?:
            for byte in bytes where verdict == .undecided {
                guard let first = halfUnit else {
                    halfUnit = byte
                    continue
                }
                halfUnit = nil
                let unit = bigEndian ? UInt16(first) << 8 | UInt16(byte) : UInt16(byte) << 8 | UInt16(first)
                step(unit < 0x80 ? UInt8(unit) : 0x80)
            }
        case .utf32(let bigEndian)?:
            for byte in bytes where verdict == .undecided {
                partialUnit.append(byte)
                guard partialUnit.count == 4 else { continue }
                let value = partialUnit.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                let unit = bigEndian ? value : value.byteSwapped
                partialUnit = []
                step(unit < 0x80 ? UInt8(unit) : 0x80)
            }
        case nil:
            break
        }
    }

    private mutating func step(_ c: UInt8) {
        units += 1
        advance(c)
        checkDoctypeLength()
    }

    private mutating func checkDoctypeLength() {
        if let doctypeStart, doctypeEnd == nil, units - doctypeStart > Self.maximumDoctypeUnits, verdict == .undecided {
            verdict = .refused(Self.doctypeTooLong)
        }
    }

    private mutating func advance(_ c: UInt8) {
        switch state {
        case .between(let atStart):
            if c == UInt8(ascii: "<") {
                state = .open(atStart: atStart)
            } else if Self.isBlank(c) {
                state = .between(atStart: false)
            } else {
                // Text before the root element: libxml2 stops there, before any DOCTYPE after it.
                verdict = .accepted
            }
        case .open(let atStart):
            switch c {
            case UInt8(ascii: "?"): state = .target(atStart: atStart, matched: 0)
            case UInt8(ascii: "!"): state = .bang(matched: 0, comment: false)
            // The root element (or markup libxml2 rejects): the prolog is over.
            default: verdict = .accepted
            }
        case .target(let atStart, let matched):
            if matched == 0 && !Self.startsName(c) {
                // `<?` without a target: libxml2 fails on it, and its recovery reads on after the
                // `<?` as if it were not there, so a DOCTYPE the scan took for the instruction's
                // text would reach libxml2's recovery.
                verdict = .refused("has `<?` without a name before its root element")
            } else if let matched, matched < 3, c == Array("xml".utf8)[matched] {
                state = .target(atStart: atStart, matched: matched + 1)
            } else if Self.isBlank(c) || c == UInt8(ascii: "?") {
                let isDeclaration = atStart && matched == 3 && Self.isBlank(c)
                state = isDeclaration ? .declaration(question: false) : .instruction(question: c == UInt8(ascii: "?"))
            } else {
                state = .target(atStart: atStart, matched: nil)
            }
        case .instruction(let question):
            if question && c == UInt8(ascii: ">") {
                state = .between(atStart: false)
            } else {
                state = .instruction(question: c == UInt8(ascii: "?"))
            }
        case .declaration(let question):
            if question && c == UInt8(ascii: ">") {
                endDeclaration()
                state = .between(atStart: false)
                return
            }
            if c == UInt8(ascii: ">") {
                // libxml2 ends a declaration that lacks its `?` at this `>`: what the scan would
                // go on taking for the declaration, libxml2 reads as the prolog.
                verdict = .refused("has an XML declaration mirror cannot read (a `>` without its `?`)")
                return
            }
            if question { keep(UInt8(ascii: "?")) }
            if c != UInt8(ascii: "?") { keep(Self.isBlank(c) ? UInt8(ascii: " ") : c) }
            state = .declaration(question: c == UInt8(ascii: "?"))
        case .bang(let matched, let comment):
            if matched == 0 && c == UInt8(ascii: "-") {
                state = .bang(matched: 1, comment: true)
            } else if comment {
                if c == UInt8(ascii: "-") { state = .comment(dashes: 0) } else { verdict = .accepted }
            } else if Self.uppercased(c) == Array("DOCTYPE".utf8)[matched] {
                if matched == 6 {
                    doctypeStart = units - "<!DOCTYPE".utf8.count
                    state = .doctype(quote: nil, subset: false)
                } else {
                    state = .bang(matched: matched + 1, comment: false)
                }
            } else {
                // `<!` that opens neither a comment nor a DOCTYPE: libxml2 fails on it.
                verdict = .accepted
            }
        case .comment(let dashes):
            if dashes >= 2 && c == UInt8(ascii: ">") {
                state = .between(atStart: false)
            } else {
                state = .comment(dashes: c == UInt8(ascii: "-") ? dashes + 1 : 0)
            }
        case .doctype(let quote?, let subset):
            if c == quote { state = .doctype(quote: nil, subset: subset) }
        case .doctype(nil, let subset):
            switch c {
            case UInt8(ascii: "\""), UInt8(ascii: "'"): state = .doctype(quote: c, subset: subset)
            case UInt8(ascii: "["): state = .doctype(quote: nil, subset: true)
            case UInt8(ascii: "]") where subset: state = .doctype(quote: nil, subset: false)
            case UInt8(ascii: "<") where subset: state = .subsetOpen
            case UInt8(ascii: ">") where !subset:
                // The DOCTYPE is over; the root element follows (``FeedDoctype`` checks the rest).
                doctypeEnd = units
                verdict = .accepted
            default: break
            }
        case .subsetOpen:
            switch c {
            case UInt8(ascii: "?"): state = .subsetInstruction(question: false)
            case UInt8(ascii: "!"): state = .subsetBang(dashes: 0)
            default:
                state = .doctype(quote: nil, subset: true)
                advance(c)
            }
        case .subsetBang(let dashes):
            if c == UInt8(ascii: "-") {
                state = dashes == 1 ? .subsetComment(dashes: 0) : .subsetBang(dashes: 1)
            } else {
                // A declaration (`<!ENTITY`, `<!ELEMENT`…): its literals are followed as quotes.
                state = .doctype(quote: nil, subset: true)
                advance(c)
            }
        case .subsetComment(let dashes):
            if dashes >= 2 && c == UInt8(ascii: ">") {
                state = .doctype(quote: nil, subset: true)
            } else {
                state = .subsetComment(dashes: c == UInt8(ascii: "-") ? dashes + 1 : 0)
            }
        case .subsetInstruction(let question):
            state = question && c == UInt8(ascii: ">") ? .doctype(quote: nil, subset: true) : .subsetInstruction(question: c == UInt8(ascii: "?"))
        }
    }

    private mutating func keep(_ c: UInt8) {
        if c == UInt8(ascii: " ") && declaration.last == c { return }
        guard declaration.count < Self.maximumDeclarationBytes else {
            verdict = .refused("has an XML declaration longer than \(Self.maximumDeclarationBytes) bytes")
            return
        }
        declaration.append(c)
    }

    /// Checks the encoding the XML declaration names, which libxml2 switches to from there on.
    private mutating func endDeclaration() {
        let text = String(decoding: declaration, as: UTF8.self)
        guard let range = text.firstRange(of: "encoding") else { return }
        var rest = text[range.upperBound...].drop { $0 == " " }
        guard rest.first == "=" else {
            verdict = .refused("has an XML declaration mirror cannot read")
            return
        }
        rest = rest.dropFirst().drop { $0 == " " }
        guard let quote = rest.first, quote == "\"" || quote == "'",
              let close = rest.dropFirst().firstIndex(of: quote)
        else {
            verdict = .refused("has an XML declaration mirror cannot read")
            return
        }
        let name = String(rest[rest.index(after: rest.startIndex)..<close])
        declaredEncoding = name
        // In a byte layout, a name the scan cannot follow (UTF-7, EBCDIC's, a typo) is overridden:
        // libxml2 is told to read the bytes as the scan read them.
        if case .bytes? = layout, !Self.reads(encoding: name, in: .bytes) {
            overridesDeclaredEncoding = true
            return
        }
        guard let layout, Self.reads(encoding: name, in: layout) else {
            verdict = .refused("declares the encoding \(name.prefix(64)); " + Self.readableEncodings)
            return
        }
    }

    /// Whether `name` is an encoding the scan decodes as libxml2 will: one that keeps every ASCII
    /// byte for its ASCII character in a byte layout (the multibyte ones among them never use the
    /// bytes of `<!-?>` inside a character), or UTF-16 in the byte order already found.
    private static func reads(encoding name: String, in layout: Layout) -> Bool {
        let key = name.uppercased().filter { $0 != "-" && $0 != "_" }
        switch layout {
        case .utf16(let bigEndian):
            return key == "UTF16" || key == (bigEndian ? "UTF16BE" : "UTF16LE")
        case .utf32(let bigEndian):
            return ["UTF32", "UCS4", "ISO10646UCS4", bigEndian ? "UTF32BE" : "UTF32LE"].contains(key)
        case .bytes:
            if asciiBased.contains(key) { return true }
            return asciiBasedFamilies.contains { family in
                key.hasPrefix(family) && key.dropFirst(family.count).allSatisfy(\.isNumber) && key.count > family.count
            }
        }
    }

    private static let asciiBased: Set<String> = [
        "UTF8", "ASCII", "USASCII", "SHIFTJIS", "SJIS", "WINDOWS31J", "CP932", "MSKANJI", "EUCJP", "EUCKR", "EUCCN",
        "EUCTW", "CP949", "UHC", "GB2312", "GBK", "CP936", "GB18030", "BIG5", "BIG5HKSCS", "CP950", "KOI8R", "KOI8U",
        "TIS620", "MACINTOSH", "MACROMAN",
    ]
    /// Followed by digits: ISO-8859-1…16, latin1…, windows-1250…1258, cp1250….
    private static let asciiBasedFamilies = ["ISO8859", "LATIN", "WINDOWS125", "CP125"]

    /// XML's NameStartChar, as far as the scan sees it (anything beyond ASCII is 0x80).
    private static func startsName(_ c: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c)
            || c == UInt8(ascii: "_") || c == UInt8(ascii: ":") || c >= 0x80
    }

    private static func isBlank(_ c: UInt8) -> Bool {
        c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D
    }

    private static func uppercased(_ c: UInt8) -> UInt8 {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) ? c - 0x20 : c
    }
}
