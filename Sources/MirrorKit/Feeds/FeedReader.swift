import CLibXML2
import Glibc
import FoundationEssentials

/// A file a feed offers for download.
struct FeedEnclosure: Sendable, Equatable {
    /// The URL to fetch, resolved against `xml:base` and the feed's own URL.
    var url: String
    /// Other URLs of the same file (a Dash feed lists mirrors).
    var mirrors: [String] = []
    /// The size the feed states. Advisory only (RFC 4287 §4.2.7.6); RSS feeds write 0 for unknown.
    var length: Int64?
    var type: String?
    var entryTitle: String?
    /// The entry's release: a docset's `version`, and Atom's `updated` or RSS's `pubDate`.
    var version: String?
    var updated: String?
    /// What names the entry across its releases: a docset's `identifier`, else the Atom `id` or
    /// RSS `guid` (with `#type`, or `#n` by position, when the entry has several); nil for none.
    var entryID: String?
    /// The entry's web page (Atom's alternate link, RSS's `link`), where it has one.
    var entryPage: String?
    /// Media RSS: the file's thumbnail (mirrored as its preview), its kind, alt text and rating.
    var preview: String?
    var medium: String?
    var mediaDescription: String?
    var rating: String?
    /// Read from Media RSS (not an enclosure): named apart, so that its reading changes no
    /// enclosure's item.
    var isMediaRSS = false
}

/// A parsed feed: its kind and every enclosure in document order.
struct Feed: Sendable, Equatable {
    enum Kind: String, Sendable {
        case atom, rss, dash
    }

    var kind: Kind
    var title: String?
    var enclosures: [FeedEnclosure]
    /// Enclosures that could not be used (a link that is no URL even once escaped).
    var problems: [String] = []
    /// Damage read past, as feed readers do (HTML entities, a document cut short): said, not failed.
    var warnings: [String] = []
    /// The feed's own image (RSS's `image`, `itunes:image`, `webfeeds:icon`, Atom's `logo` or `icon`).
    var image: String?
    /// Credentials that links carried (`https://user:pass@host/file`), taken out of the links.
    var linkCredentials: [(url: String, credentials: URLCredentials)] = []

    static func == (lhs: Feed, rhs: Feed) -> Bool {
        lhs.kind == rhs.kind && lhs.title == rhs.title && lhs.enclosures == rhs.enclosures && lhs.problems == rhs.problems
            && lhs.warnings == rhs.warnings && lhs.image == rhs.image
            && lhs.linkCredentials.map(\.url) == rhs.linkCredentials.map(\.url)
            && lhs.linkCredentials.map(\.credentials) == rhs.linkCredentials.map(\.credentials)
    }
}

/// Why a feed could not be read.
package struct FeedError: Error, Sendable, Equatable, CustomStringConvertible {
    var url: String
    var problem: String
    /// The feed could not be fetched at all (as opposed to fetched and found wrong).
    package var isFetchFailure = false

    package var description: String { "feed \(url): \(problem)" }
}

/// Reads Atom, RSS and Dash docset feeds with libxml2's pull parser.
///
/// libxml2 never sees a DOCTYPE: mirror reads it and takes it out first (``FeedProlog``,
/// ``FeedDoctype``), expanding the internal entities it declares within a budget
/// (``EntityExpansion``) and loading nothing it names. The parser runs with `NONET` and without
/// `NOENT`, `DTDLOAD` or `HUGE` all the same. Elements are matched by namespace URI, never by
/// prefix. A document that is not well-formed is read as far as its whole entries go (or as
/// libxml2's recovery reads it), with a warning: libxml2 streams nodes before it notices.
enum FeedReader {

    /// Parses a feed fetched from `url`; relative links resolve against it (and `xml:base`).
    static func parse(_ bytes: [UInt8], url: String) throws(FeedError) -> Feed {
        try parse(bytes, url: url, base: url)
    }

    /// Parses the feed read from `url` (a URL, or a file's name, for messages); relative links
    /// resolve against `base` and `xml:base`, and are reported as problems without either.
    static func parse(_ bytes: [UInt8], url: String, base: String?, rendition: MediaRendition = .preferred) throws(FeedError) -> Feed {
        guard !bytes.isEmpty else { throw FeedError(url: url, problem: "empty document") }
        guard bytes.count < Int(Int32.max) else { throw FeedError(url: url, problem: "larger than 2 GiB") }
        var prolog = FeedProlog()
        if case .refused(let reason) = bytes.withUnsafeBytes({ prolog.inspect($0) }) {
            throw FeedError(url: url, problem: reason)
        }
        initializeParserOnce()
        let (normalized, encoding, encodingWarning) = FeedRepair.normalizingEncoding(bytes, prolog: prolog)
        let (withoutDoctype, doctype) = try takingOutDoctype(normalized, seen: prolog.doctypeStart != nil, url: url)
        var entities = EntityExpansion(doctype)
        let bytes: [UInt8]
        let mended: Int
        do {
            (bytes, mended) = try FeedRepair.mendingReferences(withoutDoctype, entities: &entities)
        } catch {
            throw FeedError(url: url, problem: error.reason)
        }
        let errors = ErrorCollector()
        // libxml2 reads the buffer in place, without copying, for as long as the reader lives:
        // the whole read loop runs inside the closure that lends the buffer, and the error
        // collector handed to C as an unretained pointer is kept alive until it ends.
        let result: Result<Feed, FeedError> = bytes.withUnsafeBufferPointer { buffer in
            withExtendedLifetime(errors) {
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    read(chars, url: url, base: base, encoding: encoding, rendition: rendition, errors: errors)
                }
            }
        }
        var feed = try result.get()
        if let encodingWarning { feed.warnings.insert(encodingWarning, at: 0) }
        if mended > 0 {
            feed.warnings.insert("\(mended) references XML does not know (HTML's `&eacute;`, a bare `&`) read as HTML reads them", at: 0)
        }
        return feed
    }

    /// The document without its DOCTYPE (``FeedDoctype``), found again in the bytes as they now
    /// are (UTF-16 and UTF-32 made UTF-8), and checked to be the only one.
    private static func takingOutDoctype(_ bytes: [UInt8], seen: Bool, url: String) throws(FeedError) -> ([UInt8], FeedDoctype) {
        guard seen else { return (bytes, FeedDoctype()) }
        func scanned(_ bytes: [UInt8]) -> (prolog: FeedProlog, refusal: String?) {
            var prolog = FeedProlog()
            let verdict = bytes.withUnsafeBytes { prolog.inspect($0) }
            if case .refused(let reason) = verdict { return (prolog, reason) }
            return (prolog, nil)
        }
        let (found, refusal) = scanned(bytes)
        // Made UTF-8, a UTF-16 DOCTYPE can grow past the limit.
        if let refusal { throw FeedError(url: url, problem: refusal) }
        guard let start = found.doctypeStart, let end = found.doctypeEnd else {
            throw FeedError(url: url, problem: "has a DOCTYPE mirror cannot read: it is never closed")
        }
        let taken: (bytes: [UInt8], doctype: FeedDoctype)
        do {
            taken = try FeedDoctype.takeOut(of: bytes, at: start..<end)
        } catch {
            throw FeedError(url: url, problem: "has a DOCTYPE mirror cannot read: \(error.reason)")
        }
        guard scanned(taken.bytes).prolog.doctypeStart == nil else { throw FeedError(url: url, problem: "has two DOCTYPEs") }
        return taken
    }

    private static func read(
        _ chars: UnsafeBufferPointer<CChar>, url: String, base: String?, encoding: String?, rendition: MediaRendition,
        errors: ErrorCollector
    ) -> Result<Feed, FeedError> {
        let options = Self.options(encoding: encoding)
        guard let reader = xmlReaderForMemory(chars.baseAddress, Int32(chars.count), base, encoding, options) else {
            return .failure(FeedError(url: url, problem: "libxml2 could not start a reader"))
        }
        defer { xmlFreeTextReader(reader) }
        let context = Unmanaged.passUnretained(errors).toOpaque()
        xmlTextReaderSetStructuredErrorHandler(reader, { context, error in
            guard let context, let error else { return }
            let collector = Unmanaged<ErrorCollector>.fromOpaque(context).takeUnretainedValue()
            collector.record(line: Int(error.pointee.line), message: error.pointee.message.map { String(cString: $0) } ?? "")
        }, context)

        var walker = FeedWalker(reader: reader, url: url, hasBase: base != nil, rendition: rendition)
        do throws(FeedError) {
            while true {
                let status = xmlTextReaderRead(reader)
                if status == 0 { break }
                guard status == 1 else {
                    let problem = errors.summary ?? "not well-formed XML"
                    // Read as feed readers read it: what came before the damage, or what libxml2's
                    // recovery makes of the whole (a tag left open), whichever holds more entries.
                    // libxml2's recovery builds the whole tree: only for feeds of a size a tree of
                    // which stays small (a hostile 64 MiB of tiny elements would be gigabytes).
                    // Nor where a DOCTYPE is left anywhere: libxml2's recovery may read one where
                    // its strict reading (and the scan) did not.
                    let recovered = chars.count <= Self.maximumRecoveredBytes && !Self.mentionsDoctype(chars)
                        ? recover(chars, url: url, base: base, encoding: encoding, rendition: rendition) : nil
                    let (entries, best) = recovered.map { $0.entries > walker.entriesRead ? $0 : (walker.entriesRead, walker.feed) }
                        ?? (walker.entriesRead, walker.feed)
                    // Not a Dash feed: its one entry's URLs are mirrors of one file, and a damaged
                    // one cannot say which are (the real one that is damaged lists eight files).
                    guard entries > 0, var feed = best, feed.kind != .dash else { throw FeedError(url: url, problem: problem) }
                    feed.warnings.append("\(problem): read \(entries) \(entries == 1 ? "entry" : "entries") anyway")
                    return .success(feed)
                }
                try walker.visit()
            }
        } catch {
            return .failure(error)
        }
        guard let feed = walker.feed else { return .failure(FeedError(url: url, problem: "no root element")) }
        return .success(feed)
    }

    /// Whether `<!DOCTYPE`, in any case, is anywhere in the bytes.
    private static func mentionsDoctype(_ chars: UnsafeBufferPointer<CChar>) -> Bool {
        let word = Array("<!DOCTYPE".utf8)
        guard chars.count >= word.count else { return false }
        var index = 0
        while index <= chars.count - word.count {
            guard let found = memchr(chars.baseAddress! + index, Int32(UInt8(ascii: "<")), chars.count - word.count + 1 - index) else { return false }
            index = UnsafeRawPointer(chars.baseAddress!).distance(to: UnsafeRawPointer(found))
            if (0..<word.count).allSatisfy({ UInt8(bitPattern: chars[index + $0]) & 0xDF == word[$0] & 0xDF }) { return true }
            index += 1
        }
        return false
    }

    /// The largest feed read again with libxml2's recovery when it is not well-formed.
    static let maximumRecoveredBytes = 8 << 20

    /// The feed libxml2's recovery reads from a document that is not well-formed: the tree it
    /// builds as best it can, walked as a document is. (The DOCTYPE was taken out before: no
    /// entity is expanded in recovery either.)
    private static func recover(
        _ chars: UnsafeBufferPointer<CChar>, url: String, base: String?, encoding: String?, rendition: MediaRendition
    ) -> (entries: Int, feed: Feed?)? {
        // libxml2's recovery drops the other characters XML forbids, but stops at a NUL byte (the
        // end of its C string), losing every entry after it: NUL goes the way the others go.
        if chars.contains(0) {
            return chars.filter { $0 != 0 }.withUnsafeBufferPointer {
                recover($0, url: url, base: base, encoding: encoding, rendition: rendition)
            }
        }
        let options = Self.options(encoding: encoding) | Int32(XML_PARSE_RECOVER.rawValue)
        guard let document = xmlReadMemory(chars.baseAddress, Int32(chars.count), base, encoding, options) else { return nil }
        defer { xmlFreeDoc(document) }
        guard let reader = xmlReaderWalker(document) else { return nil }
        defer { xmlFreeTextReader(reader) }
        var walker = FeedWalker(reader: reader, url: url, hasBase: base != nil, rendition: rendition)
        while xmlTextReaderRead(reader) == 1 {
            do throws(FeedError) {
                try walker.visit()
            } catch {
                return nil
            }
        }
        return (walker.entriesRead, walker.feed)
    }

    /// No network, no messages of libxml2's own; with an encoding given, the document's
    /// declaration is not heeded (its bytes were made that encoding).
    private static func options(encoding: String?) -> Int32 {
        var options = XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue
        if encoding != nil { options |= XML_PARSE_IGNORE_ENC.rawValue }
        return Int32(options)
    }

    private static let parserInitialized: Bool = {
        // Not reentrant, per libxml2's documentation: once, before any parsing thread starts.
        xmlInitParser()
        return true
    }()

    private static func initializeParserOnce() {
        _ = parserInitialized
    }
}

/// Collects the first error libxml2 reports, with its line.
private final class ErrorCollector {
    private(set) var summary: String?

    func record(line: Int, message: String) {
        guard summary == nil else { return }
        let text = message.trimming(.spacesAndNewlines)
        summary = "not well-formed XML at line \(line): \(text)"
    }
}
