import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// A DOCTYPE is read by mirror and taken out before libxml2 sees the document: its internal
/// entities expand within a budget, nothing it names is loaded, and one too long ends the download.
@Suite("Reading a feed's DOCTYPE as feed readers do, loading nothing", .timeLimit(.minutes(2)))
struct FeedDoctypeTests {
    static let rss = "<rss><channel><title>&site;</title><item><enclosure url=\"https://h/a.mp3\"/></item></channel></rss>"
    /// An internal subset with what real ones hold, and `]`, `>` and quotes where a scan that did
    /// not follow literals, comments and instructions would end it early.
    static let subset = """
        <!DOCTYPE rss [
          <!ENTITY site "Caf&#233; ]> &amp; co">
          <!-- ']> -->
          <?pi ]> ?>
          <!ELEMENT rss ANY>
          <!ATTLIST rss version CDATA "2.0">
        ]>
        """

    private func problem(parsing bytes: [UInt8]) -> String? {
        do {
            _ = try FeedReader.parse(bytes, url: "https://h/feed")
            return nil
        } catch {
            return error.problem
        }
    }

    private func title(parsing bytes: [UInt8]) throws -> String? {
        try FeedReader.parse(bytes, url: "https://h/feed").title
    }

    @Test(arguments: [
        "",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "\u{FEFF}<?xml version=\"1.0\"?>",
        "<?xml version='1.0' encoding='iso-8859-1'?><!-- a - comment <rss> --><?xml-stylesheet href=\"s.xsl\"?>\n\t ",
    ])
    func aDoctypeAfterAnyPrologIsTakenOutAndItsEntitiesExpanded(_ prolog: String) throws {
        #expect(try title(parsing: Array((prolog + Self.subset + Self.rss).utf8)) == "Café ]> & co")
    }

    @Test func aLowercaseDoctypeWithoutASubsetIsReadToo() throws {
        #expect(try title(parsing: Array("<!doctype rss><rss><channel><title>t</title></channel></rss>".utf8)) == "t")
    }

    @Test(arguments: [(true, true), (false, true), (true, false), (false, false)])
    func aUTF16DoctypeIsTakenOutAsAUTF8One(bigEndian: Bool, byteOrderMark: Bool) throws {
        let text = (byteOrderMark ? "\u{FEFF}" : "") + "<?xml version=\"1.0\" encoding=\"UTF-16\"?>" + Self.subset + Self.rss
        #expect(try title(parsing: Self.utf16(text, bigEndian: bigEndian)) == "Café ]> & co")
    }

    @Test func aUTF16FeedWithHTMLEntitiesIsMendedAsAUTF8One() throws {
        let text = "\u{FEFF}<?xml version=\"1.0\" encoding=\"UTF-16\"?><!-- <!DOCTYPE x> --><rss><channel><title>Caf&eacute;</title></channel></rss>"
        let feed = try FeedReader.parse(Self.utf16(text, bigEndian: true), url: "https://h/feed")
        #expect(feed.title == "Café")
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
        let plain = "<?xml version=\"1.0\" encoding=\"\(encoding)\"?>" + Self.rss.replacingOccurrences(of: "&site;", with: "t")
        let feed = try FeedReader.parse(Array(plain.utf8), url: "https://h/feed")
        #expect(feed.enclosures.map(\.url) == ["https://h/a.mp3"])
        #expect(feed.warnings == ["declares the encoding \(encoding), which mirror does not read: read as UTF-8"])
        let hiding = "<?xml version=\"1.0\" encoding=\"\(encoding)\"?>+ADw-!DOCTYPE rss +AFs- +ADw-!ENTITY % +AD4- +AF0APg-" + Self.rss
        if let problem = problem(parsing: Array(hiding.utf8)) {
            #expect(problem.hasPrefix("not well-formed XML at line 1"), "\(problem)")
        }
    }

    @Test(arguments: [(true, true), (false, false), (true, false), (false, true)])
    func aUTF32FeedIsReadWithItsDoctype(bigEndian: Bool, byteOrderMark: Bool) throws {
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
        #expect(try title(parsing: utf32("<?xml version=\"1.0\"?>" + Self.subset + Self.rss)) == "Café ]> & co")
    }

    /// An entity's value is text wherever it is used: its markup, quotes and damage cannot open an
    /// element or end the attribute it stands in.
    @Test func anEntitysValueIsTextEvenInAnAttribute() throws {
        let xml = #"<!DOCTYPE rss [<!ENTITY t '<b>"x&apos; &eacute; &nope; & </b>'><!ENTITY u "it's">]><rss><channel><title>&t;</title><item><enclosure url="https://h/a.mp3" type="&t;"/><enclosure url="https://h/b.mp3" type='&u;'/></item></channel></rss>"#
        let feed = try FeedReader.parse(Array(xml.utf8), url: "https://h/feed")
        #expect(feed.title == "<b>\"x' é &nope; & </b>")
        #expect(feed.enclosures.map(\.type) == ["<b>\"x' é &nope; & </b>", "it's"])
        #expect(feed.warnings.isEmpty, "\(feed.warnings)")
    }

    @Test(arguments: [
        (#"<!ENTITY a "&b;"><!ENTITY b "x&a;">"#, "declares the entity &a; in terms of itself"),
        ((0..<40).map { #"<!ENTITY e\#($0) "&e\#($0 + 1);">"# }.joined() + #"<!ENTITY e40 "x"><!ENTITY a "&e0;">"#,
         "nests entities more than 32 deep"),
        (#"<!ENTITY a SYSTEM "file:///etc/passwd">"#, "uses the external entity &a;, which mirror never loads: entities can reach local files"),
        (#"<!ENTITY a PUBLIC "-//x//y" "https://h/a.txt">"#, "uses the external entity &a;, which mirror never loads: entities can reach local files"),
        (#"<!ENTITY % > <!ELEMENT ]>"#, "has a DOCTYPE mirror cannot read: `>` where a name should be"),
        (#"<!ENTITY a "x>"#, "has a DOCTYPE mirror cannot read: it is never closed"),
    ])
    func entitiesThatCannotBeReadRefuseTheFeed(_ declarations: String, _ expected: String) {
        let xml = "<!DOCTYPE rss [\(declarations)]><rss><channel><title>&a;</title></channel></rss>"
        #expect(problem(parsing: Array(xml.utf8)) == expected)
    }

    /// Declared and unused, an external entity is harmless; an external parameter entity's
    /// declarations are never read, as a non-validating reader may; nothing is loaded either way.
    @Test func externalDeclarationsNotUsedAreReadPast() throws {
        let xml = #"<!DOCTYPE rss SYSTEM "file:///etc/passwd" [<!ENTITY x SYSTEM "file:///etc/passwd"><!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd"> %p;<!ENTITY a "ok">]><rss><channel><title>&a;</title></channel></rss>"#
        #expect(try title(parsing: Array(xml.utf8)) == "ok")
    }

    /// Prologs libxml2 reads otherwise than the scan would: an instruction without a name (which
    /// libxml2's recovery steps over, reading the DOCTYPE after it), and a declaration without its
    /// `?` (which libxml2 ends at the first `>`). Refused before libxml2 sees them.
    @Test(arguments: [
        (#"<?xml version="1.0"?><? <!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd"><!ENTITY a "leak">]><rss><channel><title>&x;&a;</title><item><enclosure url="https://h/a.mp3"/></item></channel></rss> ?>"#,
         "has `<?` without a name before its root element"),
        (#"<?xml version="1.0"><!DOCTYPE r [<!ENTITY a "leak">]><rss><channel><title>&a;</title></channel></rss><?x ?>"#,
         "has an XML declaration mirror cannot read (a `>` without its `?`)"),
    ])
    func aDoctypeHiddenFromTheScanIsRefused(_ xml: String, _ expected: String) {
        #expect(problem(parsing: Array(xml.utf8)) == expected)
    }

    @Test func damageMendedAsHTMLWouldReadIt() throws {
        // Netscape's DTD named by its system identifier alone declares Latin-1's entities too.
        let netscape = try FeedReader.parse(Array(#"<!DOCTYPE rss SYSTEM "http://my.netscape.com/publish/formats/rss-0.91.dtd"><rss version="0.91"><channel><title>Caf&eacute;</title></channel></rss>"#.utf8), url: "https://h/feed")
        #expect(netscape.title == "Café" && netscape.warnings.isEmpty, "\(netscape.warnings)")
        // `&#X41;` as HTML reads it; `]]>` in an entity's value; a name beyond ASCII.
        let xml = #"<!DOCTYPE rss [<!ENTITY t "a]]>b"><!ENTITY café "c">]><rss><channel><title>&#X41;&t;&café;</title></channel></rss>"#
        let feed = try FeedReader.parse(Array(xml.utf8), url: "https://h/feed")
        #expect(feed.title == "Aa]]>bc")
        #expect(feed.warnings == ["1 references XML does not know (HTML's `&eacute;`, a bare `&`) read as HTML reads them"])
    }

    @Test func aByteOrderMarkBeforeBytesThatAreNotUTF8IsNoText() throws {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("<rss><channel><title>Caf".utf8) + [0xE9] + Array("</title></channel></rss>".utf8)
        #expect(try FeedReader.parse(bytes, url: "https://h/feed").title == "Café")
    }

    @Test func twoDoctypesAreRefused() {
        #expect(problem(parsing: Array("<!DOCTYPE rss><!DOCTYPE rss [<!ENTITY a \"b\">]><rss/>".utf8)) == "has two DOCTYPEs")
    }

    @Test func characterReferencesToNoCharacterAreMendedAndOthersKept() throws {
        let xml = "<rss><channel><title>a&#0;b&#xD800;c&#x110000;d&#12a;e&#x41;&#66;</title></channel></rss>"
        let feed = try FeedReader.parse(Array(xml.utf8), url: "https://h/feed")
        #expect(feed.title == "a\u{FFFD}b\u{FFFD}c\u{FFFD}d&#12a;eAB")
        #expect(feed.warnings == ["4 references XML does not know (HTML's `&eacute;`, a bare `&`) read as HTML reads them"])
    }

    /// The classic: ten entities of ten of the one before, 3 GB from under a kilobyte. Refused
    /// once the budget is spent, in milliseconds (a generous second allowed for a loaded machine).
    @Test func aBillionLaughsIsRefusedInWellUnderASecond() {
        var declarations = #"<!ENTITY lol "lol">"#
        for level in 1...9 {
            let previous = level == 1 ? "lol" : "lol\(level - 1)"
            declarations += "<!ENTITY lol\(level) \"" + String(repeating: "&\(previous);", count: 10) + "\">"
        }
        let xml = "<?xml version=\"1.0\"?><!DOCTYPE lolz [\(declarations)]><rss><channel><title>&lol9;</title></channel></rss>"
        let started = ContinuousClock.now
        #expect(problem(parsing: Array(xml.utf8)) == "declares entities that expand past 4 MiB (a \"billion laughs\")")
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    /// A body arriving in pieces gets the verdict a whole one gets, the moment the DOCTYPE's last
    /// `>` arrives, and the DOCTYPE's place in code units, wherever the bytes are cut.
    @Test func theScanFollowsADoctypeToItsEndWhereverTheBytesAreCut() {
        let before = "\u{FEFF}<?xml version=\"1.0\"?><!--x-->"
        let doctype = #"<!DOCTYPE rss [<!ENTITY a "]>"><!-- ]> ' --><?p ]> ?>]>"#
        let upToEnd = Self.utf16(before + doctype, bigEndian: false)
        let bytes = upToEnd + Self.utf16("<rss/>", bigEndian: false)
        let decisive = upToEnd.count
        for cut in 1..<decisive {
            var prolog = FeedProlog()
            let first = bytes[..<cut].withUnsafeBytes { prolog.inspect($0) }
            #expect(first == .undecided, "cut at \(cut)")
            let rest = bytes[cut...].withUnsafeBytes { prolog.inspect($0) }
            #expect(rest == .accepted, "cut at \(cut)")
            #expect(prolog.doctypeStart == before.utf16.count && prolog.doctypeEnd == before.utf16.count + doctype.utf16.count)
        }
        var byteByByte = FeedProlog()
        let verdicts = bytes.map { byte in [byte].withUnsafeBytes { byteByByte.inspect($0) } }
        #expect(verdicts.firstIndex { $0 != .undecided } == decisive - 1)
    }

    @Test func aDoctypeLongerThanAFeedsEverIsIsRefusedAsItsBytesArrive() {
        let head = Array("<?xml version=\"1.0\"?><!DOCTYPE feed [".utf8)
        let filler = Array("<!ENTITY e \"xxxxxxxx\">\n".utf8)
        var prolog = FeedProlog()
        var verdict = head.withUnsafeBytes { prolog.inspect($0) }
        var sent = head.count
        while verdict == .undecided && sent < 4 << 20 {
            verdict = filler.withUnsafeBytes { prolog.inspect($0) }
            sent += filler.count
        }
        #expect(verdict == .refused(FeedProlog.doctypeTooLong))
        #expect(sent > FeedProlog.maximumDoctypeUnits && sent < FeedProlog.maximumDoctypeUnits + 64)
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

    /// Over HTTP, as `mirror feed` meets it: the body is made as it is sent, so the gigabyte is
    /// never held anywhere, and the run is a process of its own, measured by GNU time, so its peak
    /// memory is its own. Without a refusal as the bytes arrive, the run would read 64 MiB (the
    /// feed size cap) into memory before failing on the size: the message, the bytes sent and the
    /// peak tell. "Fast" is counted in bytes the server sent, not in seconds: a wall-clock bound
    /// failed a full test run on two loaded cores (10.6 s) with the bytes well under their bound.
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
                #expect(run.stderr == "mirror: feed \(server.baseURL)\(path): \(FeedProlog.doctypeTooLong)\n")
                #expect(server.bodyBytesSent(path: path) < 16 << 20)
                #expect(baseline.peakResidentBytes > 0 && run.peakResidentBytes > 0)
                #expect(run.peakResidentBytes < baseline.peakResidentBytes + 16 << 20,
                        "peak \(run.peakResidentBytes >> 20) MiB, a run without a feed \(baseline.peakResidentBytes >> 20) MiB")
            }
        }
    }

    /// Netscape's RSS 0.91 as its generators wrote it: the public DTD (its Latin-1 entities used,
    /// undeclared but for the DTD, so no damage), with an enclosure and an image as later tools
    /// added them; the DTD's URL and an external parameter entity point at the fixture server,
    /// which must never be asked for either.
    @Test func netscapesRSS091IsReadWithoutItsDTDEverFetched() async throws {
        let feed = """
            <?xml version="1.0" encoding="ISO-8859-1"?>
            <!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN"
             "BASE/publish/formats/rss-0.91.dtd" [
              <!ENTITY % extra SYSTEM "BASE/extra.dtd"> %extra;
              <!ENTITY station "Caf&eacute; Radio">
            ]>
            <rss version="0.91">
            <channel><title>&station;</title><link>BASE/</link><description>News&nbsp;&amp; talk</description><language>en-us</language>
            <image><title>&station;</title><url>BASE/logo.gif</url><link>BASE/</link><width>88</width><height>31</height></image>
            <item><title>Le th&eacute;&acirc;tre</title><link>BASE/1</link><description>An episode</description>
            <enclosure url="BASE/files/one.mp3" length="3000" type="audio/mpeg"/></item>
            </channel></rss>
            """
        try await MirrorProcess.mirrorFeed(feed, files: [("/files/one.mp3", 3000), ("/logo.gif", 500)]) { run, out, server in
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.isEmpty, "\(run.stderr)")
            #expect(TestSupport.digest(ofFile: out + "/enclosures/one.mp3") == TestSupport.digest(server.content(of: "/files/one.mp3")))
            #expect(TestSupport.bytes(at: out + "/previews/logo.gif")?.count == 500)
            #expect(!server.requests.contains { $0.path.hasSuffix(".dtd") }, "\(server.requests.map(\.path))")
            let sidecar = String(decoding: TestSupport.bytes(at: out + "/meta/enclosures/one.mp3.json") ?? [], as: UTF8.self)
            #expect(sidecar.contains("Le théâtre") && sidecar.contains("Café Radio"), "\(sidecar)")
        }
    }

    /// XXE: a feed that uses an entity naming a local file is refused, and not a byte of the file
    /// reaches any output.
    @Test func aFeedUsingAnExternalEntityIsRefusedAndTheFileItNamesNeverRead() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let secret = dir.appendingPathComponent("secret").path
            try TestSupport.write(Array("s3cr3t-contents".utf8), to: secret)
            let feed = """
                <?xml version="1.0"?>
                <!DOCTYPE rss [<!ENTITY leak SYSTEM "file://\(secret)">]>
                <rss version="2.0"><channel><title>&leak;</title>
                <item><title>&leak;</title><enclosure url="BASE/files/one.mp3" length="3000" type="audio/mpeg"/></item></channel></rss>
                """
            try await MirrorProcess.mirrorFeed(feed, files: [("/files/one.mp3", 3000)]) { run, out, server in
                #expect(run.status == 65, "\(run.stderr)")
                #expect(run.stderr.hasSuffix("uses the external entity &leak;, which mirror never loads: entities can reach local files\n"), "\(run.stderr)")
                #expect(!(run.stdout + run.stderr).contains("s3cr3t"))
                #expect(server.requestCount(path: "/files/one.mp3") == 0)
                let written = (FileManager.default.enumerator(atPath: out)?.allObjects as? [String] ?? [])
                    .compactMap { TestSupport.bytes(at: out + "/" + $0) }
                #expect(!written.contains { $0.firstRange(of: Array("s3cr3t".utf8)) != nil })
            }
        }
    }

    @Test func aBillionLaughsEndsTheRunWithOneLine() async throws {
        var declarations = #"<!ENTITY lol "lol">"#
        for level in 1...9 {
            declarations += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level == 1 ? "" : String(level - 1));", count: 10) + "\">"
        }
        let feed = "<?xml version=\"1.0\"?>\n<!DOCTYPE rss [\(declarations)]>\n<rss version=\"2.0\"><channel><title>&lol9;</title></channel></rss>"
        try await MirrorProcess.mirrorFeed(feed, files: []) { run, _, server in
            #expect(run.status == 65, "\(run.stderr)")
            #expect(run.stderr == "mirror: feed \(server.baseURL)/feeds/feed.xml: declares entities that expand past 4 MiB (a \"billion laughs\")\n")
        }
    }

    static func utf16(_ text: String, bigEndian: Bool) -> [UInt8] {
        text.utf16.flatMap { unit in bigEndian ? [UInt8(unit >> 8), UInt8(unit & 0xFF)] : [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
    }
}
