import Foundation
import Testing
@testable import MirrorKit

/// A DOCTYPE is refused before libxml2 reads the internal subset after it. The subsets here are
/// malformed on purpose: had libxml2 parsed them, the error would be its own "not well-formed".
@Suite("Refusing a feed's DOCTYPE before libxml2 reads its internal subset", .timeLimit(.minutes(1)))
struct FeedDoctypeTests {
    static let doctype = "has a DOCTYPE; feeds have none, and entities can reach local files"
    static let rss = "<rss><channel><title>t</title><item><enclosure url=\"https://h/a.mp3\"/></item></channel></rss>"
    /// An internal subset libxml2 cannot parse: `<!ENTITY` without a name.
    static let brokenSubset = "<!DOCTYPE rss [ <!ENTITY % > <!ELEMENT ]>"

    private func problem(parsing bytes: [UInt8]) -> String? {
        do {
            _ = try FeedReader.parse(bytes, url: "https://h/feed")
            return nil
        } catch {
            return error.problem
        }
    }

    @Test(arguments: [
        "",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "\u{FEFF}<?xml version=\"1.0\"?>",
        "<?xml version='1.0' encoding='iso-8859-1'?><!-- a -- comment <rss> --><?xml-stylesheet href=\"s.xsl\"?>\n\t ",
    ])
    func aDoctypeAfterAnyPrologIsRefusedBeforeItsSubset(_ prolog: String) {
        #expect(problem(parsing: Array((prolog + Self.brokenSubset + Self.rss).utf8)) == Self.doctype)
    }

    @Test func aLowercaseDoctypeIsRefusedToo() {
        #expect(problem(parsing: Array(("<!doctype html [ <!ENTITY % > ]><html></html>").utf8)) == Self.doctype)
    }

    @Test(arguments: [(true, true), (false, true), (true, false), (false, false)])
    func aUTF16DoctypeIsRefusedBeforeItsSubset(bigEndian: Bool, byteOrderMark: Bool) {
        let text = (byteOrderMark ? "\u{FEFF}" : "") + "<?xml version=\"1.0\" encoding=\"UTF-16\"?>" + Self.brokenSubset + Self.rss
        #expect(problem(parsing: Self.utf16(text, bigEndian: bigEndian)) == Self.doctype)
    }

    @Test func aUTF16FeedWithoutDoctypeIsRead() throws {
        let text = "\u{FEFF}<?xml version=\"1.0\" encoding=\"UTF-16\"?><!-- <!DOCTYPE x> -->" + Self.rss
        let feed = try FeedReader.parse(Self.utf16(text, bigEndian: true), url: "https://h/feed")
        #expect(feed.enclosures.map(\.url) == ["https://h/a.mp3"])
    }

    @Test func aLatin1FeedWithADoctypeOnlyInsideACommentIsRead() throws {
        let text = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<!-- <!DOCTYPE rss> --><rss><channel><title>Caf\u{E9}</title></channel></rss>"
        let feed = try FeedReader.parse(Array(text.unicodeScalars.map { UInt8($0.value) }), url: "https://h/feed")
        #expect(feed.title == "Café")
    }

    /// UTF-7 writes `<` as `+ADw-`: a byte scan sees no DOCTYPE where libxml2, decoding, would.
    /// So libxml2 is not left to decode it: the bytes are read as the scan read them (UTF-8), and
    /// the hidden DOCTYPE is text, never a DTD.
    @Test(arguments: ["UTF-7", "ISO-2022-JP", "IBM037", "UTF-16", "utf8x"])
    func aFeedDeclaringAnEncodingTheScanCannotReadIsReadAsTheScanReadIt(_ encoding: String) throws {
        let plain = "<?xml version=\"1.0\" encoding=\"\(encoding)\"?>" + Self.rss
        let feed = try FeedReader.parse(Array(plain.utf8), url: "https://h/feed")
        #expect(feed.enclosures.map(\.url) == ["https://h/a.mp3"])
        #expect(feed.warnings == ["declares the encoding \(encoding), which mirror does not read: read as UTF-8"])
        let hiding = "<?xml version=\"1.0\" encoding=\"\(encoding)\"?>+ADw-!DOCTYPE rss +AFs- +ADw-!ENTITY % +AD4- +AF0APg-" + Self.rss
        if let problem = problem(parsing: Array(hiding.utf8)) {
            #expect(problem.hasPrefix("not well-formed XML at line 1"), "\(problem)")
        }
    }

    @Test(arguments: [(true, true), (false, false), (true, false), (false, true)])
    func aUTF32FeedIsReadAndItsDoctypeRefused(bigEndian: Bool, byteOrderMark: Bool) throws {
        func utf32(_ text: String) -> [UInt8] {
            ((byteOrderMark ? "\u{FEFF}" : "") + text).unicodeScalars.flatMap { scalar -> [UInt8] in
                let value = scalar.value
                let bytes = [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
                return bigEndian ? bytes : bytes.reversed()
            }
        }
        let feed = try FeedReader.parse(utf32("<?xml version=\"1.0\" encoding=\"UTF-32\"?><rss><channel><title>Caf\u{E9} \u{1F408}</title><item><enclosure url=\"https://h/a.mp3\"/></item></channel></rss>"), url: "https://h/feed")
        #expect(feed.title == "Café \u{1F408}")
        #expect(feed.enclosures.map(\.url) == ["https://h/a.mp3"])
        #expect(problem(parsing: utf32("<?xml version=\"1.0\"?>" + Self.brokenSubset + Self.rss)) == Self.doctype)
    }

    /// Windows-1252 bytes under a UTF-8 declaration (or none), as old CMSs write them.
    @Test(arguments: ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>", ""])
    func bytesThatAreNotTheUTF8TheyClaimAreReadAsWindows1252(_ declaration: String) throws {
        let bytes = Array(declaration.utf8) + Array("<rss><channel><title>Caf".utf8) + [0xE9, 0x92, UInt8(ascii: "s"), 0x80]
            + Array("</title><item><enclosure url=\"https://h/a.mp3\"/></item></channel></rss>".utf8)
        let feed = try FeedReader.parse(bytes, url: "https://h/feed")
        #expect(feed.title == "Café\u{2019}s\u{20AC}")
        #expect(feed.warnings.first?.hasSuffix("but is not UTF-8: read as Windows-1252") == true, "\(feed.warnings)")
    }

    /// A body arriving in pieces gets the verdict a whole one gets, the moment the DOCTYPE's last
    /// letter arrives: a download can stop there.
    @Test func theScanDecidesAsTheBytesArriveWhereverTheyAreCut() {
        let upToDoctype = Self.utf16("\u{FEFF}<?xml version=\"1.0\"?><!--x--><!DOCTYPE", bigEndian: false)
        let bytes = upToDoctype + Self.utf16(" rss [", bigEndian: false) + Array(repeating: 0x41, count: 1000)
        let decisive = upToDoctype.count
        for cut in 1..<decisive {
            var prolog = FeedProlog()
            let first = bytes[..<cut].withUnsafeBytes { prolog.inspect($0) }
            #expect(first == .undecided, "cut at \(cut)")
            let rest = bytes[cut...].withUnsafeBytes { prolog.inspect($0) }
            #expect(rest == .refused(Self.doctype), "cut at \(cut)")
        }
        var byteByByte = FeedProlog()
        let verdicts = bytes.map { byte in [byte].withUnsafeBytes { byteByByte.inspect($0) } }
        #expect(verdicts.firstIndex { $0 != .undecided } == decisive - 1)
    }

    /// Over HTTP, as `mirror feed` meets it: the body is made as it is sent, so the gigabyte is
    /// never held anywhere, and the run is a process of its own, measured by GNU time, so its peak
    /// memory is its own. Without a refusal as the bytes arrive, the run would read 64 MiB (the
    /// feed size cap) into memory before failing on the size; parsed whole, the subset would cost
    /// libxml2 seconds and more memory still: the message, the bytes sent and the peak tell.
    @Test func aFeedWithAGigabyteInternalSubsetFailsFastInBoundedMemory() async throws {
        try await TestSupport.withServer { server in
            let path = "/feeds/gigabyte-subset.atom"
            server.addGeneratedBody(
                path: path,
                head: "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<!DOCTYPE feed [\n",
                filler: "<!ENTITY e \"" + String(repeating: "x", count: 48) + "\">\n",
                tail: "]>\n<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>&e;</title></feed>\n",
                size: 1 << 30)
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                // A run that gets no feed at all (a 404): the memory any run holds.
                let baseline = try await MeasuredProcess.run(["feed", "\(server.baseURL)/feeds/none.atom", "--out", out])
                #expect(baseline.status == 69, "\(baseline.stderr)")
                let run = try await MeasuredProcess.run(["feed", "\(server.baseURL)\(path)", "--out", out])
                #expect(run.status == 65, "\(run.stderr)")
                #expect(run.stderr == "mirror: feed \(server.baseURL)\(path): \(Self.doctype)\n")
                #expect(run.elapsed < .seconds(10))
                #expect(server.bodyBytesSent(path: path) < 16 << 20)
                #expect(baseline.peakResidentBytes > 0 && run.peakResidentBytes > 0)
                #expect(run.peakResidentBytes < baseline.peakResidentBytes + 16 << 20,
                        "peak \(run.peakResidentBytes >> 20) MiB, a run without a feed \(baseline.peakResidentBytes >> 20) MiB")
            }
        }
    }

    static func utf16(_ text: String, bigEndian: Bool) -> [UInt8] {
        text.utf16.flatMap { unit in bigEndian ? [UInt8(unit >> 8), UInt8(unit & 0xFF)] : [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
    }
}
