import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// `mirror warc pack`: an archive directory as one WACZ file, checked by py-wacz's validator and
/// Python's zipfile.
@Suite("Packing an archive as WACZ", .timeLimit(.minutes(3)), .enabled(if: WARCReader.isAvailable, "warcio is installed by scripts/setup"))
struct WACZPackageTests {
    /// A run's archive, rotated into several files.
    private func archive(in dir: URL, server: FixtureServer, idFile: String) async throws -> String {
        let warc = dir.appendingPathComponent("warc").path
        let out = dir.appendingPathComponent("out").path
        let run = try await MirrorProcess.run(
            MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + ["--warc", warc, "--warc-max-size", "1M"])
        #expect(run.status == 0, "\(run.stderr)")
        return warc
    }

    private func closedFiles(_ warc: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: warc).filter { $0.hasSuffix(".warc.gz") }.sorted()
    }

    @Test func anArchiveIsPackedIntoAValidWACZWithEveryFileAndOneIndex() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let warc = try await archive(in: dir, server: server, idFile: idFile)
                let names = try closedFiles(warc)
                #expect(names.count > 1)
                let wacz = dir.appendingPathComponent("cats.wacz").path
                let pack = try await MirrorProcess.run(["warc", "pack", warc, "--out", wacz])
                #expect(pack.status == 0, "\(pack.stderr)")
                #expect(pack.stdout.hasPrefix("\(wacz): \(names.count) WARC files"), "\(pack.stdout)")
                let (entries, index) = try await WARCReader.wacz(wacz)
                #expect(Set(entries) == Set(names.map { "archive/" + $0 } + [
                    "indexes/index.cdxj", "pages/pages.jsonl", "datapackage.json", "datapackage-digest.json",
                ]))
                // The index is the files' indexes merged: each line as the indexer makes it, sorted.
                var lines: [[UInt8]] = []
                for name in names { lines += try await WARCReader.index(warc + "/" + name).split(separator: 0x0A).map(Array.init) }
                #expect(index == lines.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 + [0x0A] })
                // A WACZ is written once: not over a file that exists.
                let again = try await MirrorProcess.run(["warc", "pack", warc, "--out", wacz])
                #expect(again.status == 73 && again.stderr == "mirror: \(wacz) exists; pack writes a new file\n", "\(again.stderr)")
            }
        }
    }

    /// A WARC file without its index beside it is indexed again from its records: the package's
    /// index is the one the indexes beside the files give.
    @Test func aFileWithoutItsIndexIsIndexedFromItsRecords() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let warc = try await archive(in: dir, server: server, idFile: idFile)
                let whole = dir.appendingPathComponent("whole.wacz").path
                #expect(try WACZPackage.pack(directory: warc, to: whole).files > 1)
                let first = try #require(try closedFiles(warc).first)
                try FileManager.default.removeItem(atPath: warc + "/" + WARCArchive.indexName(of: first))
                let reindexed = dir.appendingPathComponent("reindexed.wacz").path
                _ = try WACZPackage.pack(directory: warc, to: reindexed)
                let names = ["indexes/index.cdxj", "pages/pages.jsonl"]
                #expect(try await WARCReader.entries(names, of: reindexed) == (try await WARCReader.entries(names, of: whole)))
            }
        }
    }

    /// ZIP64's records, which a WACZ of more than 4 GiB needs, written for a small one and read
    /// back by both readers.
    @Test func theZip64FormIsReadByBothReaders() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let warc = try await archive(in: dir, server: server, idFile: idFile)
                let wacz = dir.appendingPathComponent("cats.wacz").path
                let summary = try WACZPackage.pack(directory: warc, to: wacz, alwaysZip64: true)
                #expect(summary.files == (try closedFiles(warc)).count)
                let (entries, _) = try await WARCReader.wacz(wacz)
                #expect(entries.contains("datapackage.json"))
            }
        }
    }

    @Test func aDirectoryWithoutClosedFilesIsNothingToPackAndAnOpenOneIsNamed() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            try FileManager.default.createDirectory(atPath: warc, withIntermediateDirectories: true)
            let empty = try await MirrorProcess.run(["warc", "pack", warc, "--out", dir.appendingPathComponent("a.wacz").path])
            #expect(empty.status == 66, "\(empty.stderr)")
            #expect(empty.stderr == "mirror: \(warc) holds no closed WARC file (mirror-….warc.gz) to pack\n")
        }
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let warc = try await archive(in: dir, server: server, idFile: idFile)
                let first = try #require(try closedFiles(warc).first)
                try FileManager.default.copyItem(atPath: warc + "/" + first, toPath: warc + "/mirror-29990101000000000-00000.warc.gz.open")
                let wacz = dir.appendingPathComponent("a.wacz").path
                let pack = try await MirrorProcess.run(["warc", "pack", warc, "--out", wacz])
                #expect(pack.status == 0)
                #expect(pack.stderr.contains("mirror-29990101000000000-00000.warc.gz.open is still being written"), "\(pack.stderr)")
                let entries = try await WARCReader.wacz(wacz).entries
                #expect(!entries.contains { $0.contains("2999") })
            }
        }
    }

    // MARK: - Indexes made up for the packer (it reads a WARC file's index beside it, not the file)

    /// One index line as the archive writes them.
    private func indexLine(_ url: String, second: Int, status: String, revisit: Bool = false, file: String) -> [UInt8] {
        let stamp = "20261128120000".dropLast(2) + String(format: "%02d", second % 60)
        let mime = revisit ? "warc/revisit" : "image/jpeg"
        return Array("\(CDXJIndex.surt(url)) \(stamp) {\"url\": \"\(url)\", \"mime\": \"\(mime)\", \"status\": \"\(status)\", \"digest\": \"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\", \"length\": \"1000\", \"offset\": \"\(second * 1000)\", \"filename\": \"\(file)\"}".utf8)
    }

    /// WARC files (of made-up bytes) with these indexes beside them, as text.
    private func madeUpArchive(in dir: URL, indexes: [[UInt8]]) throws -> String {
        let warc = dir.appendingPathComponent("warc").path
        try FileManager.default.createDirectory(atPath: warc, withIntermediateDirectories: true)
        for (serial, index) in indexes.enumerated() {
            let name = "mirror-2026112812000000\(serial)-00000.warc.gz"
            try Data("not read: its index is beside it".utf8).write(to: URL(fileURLWithPath: warc + "/" + name))
            try Data(index).write(to: URL(fileURLWithPath: warc + "/" + WARCArchive.indexName(of: name)))
        }
        return warc
    }

    /// The index is every file's index merged in byte order, whatever order a file's own is in
    /// (one sorted, one shuffled, one with blank lines and no last newline), and the pages are
    /// each URL captured whole, once, in the index's order: two URLs of one SURT key included.
    @Test func theIndexIsTheFilesIndexesMergedAndEachURLCapturedWholeIsOnePage() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            var generator = SystemRandomNumberGenerator()
            var files: [[[UInt8]]] = []
            for file in 0..<3 {
                var lines: [[UInt8]] = []
                for serial in 0..<150 {
                    let id = Int.random(in: 0..<60, using: &generator)
                    let url = switch id % 4 {
                    case 0: "https://example.org/\(id)"
                    case 1: "http://www.example.org/\(id - 1)"  // the SURT key of the one before
                    default: "https://i.imgur.com/\(id).jpg"
                    }
                    let status = id % 10 == 9 ? "404" : (serial % 7 == 0 ? "304" : "200")
                    lines.append(indexLine(url, second: serial, status: status, revisit: serial % 11 == 0, file: "f\(file)"))
                }
                if file == 0 { lines.sort { $0.lexicographicallyPrecedes($1) } }
                files.append(lines)
            }
            var texts: [[UInt8]] = files.map { lines in lines.flatMap { $0 + [0x0A] } }
            texts[2] = Array(files[2].flatMap { $0 + [0x0A, 0x0A] }.dropLast(2))
            let warc = try madeUpArchive(in: dir, indexes: texts)
            let wacz = dir.appendingPathComponent("made-up.wacz").path
            let summary = try WACZPackage.pack(directory: warc, to: wacz)

            let sorted = files.flatMap { $0 }.sorted { $0.lexicographicallyPrecedes($1) }
            // The pages, as the packer that sorted every line in memory listed them.
            var pages = "{\"format\": \"json-pages-1.0\", \"id\": \"pages\", \"title\": \"All pages\"}\n"
            var seen = Set<String>()
            for line in sorted {
                let text = String(decoding: line, as: UTF8.self)
                let url = String(text.split(separator: "\"")[3])
                guard text.contains("\"status\": \"200\""), seen.insert(url).inserted else { continue }
                let stamp = Array(text.split(separator: " ")[1])
                let ts = "\(String(stamp[0..<4]))-\(String(stamp[4..<6]))-\(String(stamp[6..<8]))T\(String(stamp[8..<10])):\(String(stamp[10..<12])):\(String(stamp[12..<14]))Z"
                pages += "{\"id\": \"\(seen.count)\", \"url\": \"\(url)\", \"ts\": \"\(ts)\"}\n"
            }
            #expect(seen.contains { $0.hasPrefix("http://www.example.org/") } && seen.contains { $0.hasPrefix("https://example.org/") })
            let read = try await WARCReader.entries(["indexes/index.cdxj", "pages/pages.jsonl"], of: wacz)
            #expect(read["indexes/index.cdxj"] == sorted.flatMap { $0 + [0x0A] })
            #expect(read["pages/pages.jsonl"].map { String(decoding: $0, as: UTF8.self) } == pages)
            #expect(summary.pages == seen.count && summary.files == 3)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["made-up.wacz", "warc"])
        }
    }

    /// The pages list reads three fields of an index line's JSON: one that is not a string is
    /// taken as absent, other fields may hold anything (even a value JSON does not allow, which
    /// the reading of the whole line as any JSON refused), and a line that is no JSON object (or
    /// has no URL) lists nothing.
    @Test func aPageIsReadFromTheIndexLinesURLStatusAndMediaTypeAlone() {
        var pages = PageList()
        let lines = [
            #"com,example)/a 20261128120000 {"url": "https://example.com/a", "status": 200, "mime": "image/jpeg"}"#,
            #"com,example)/b 20261128120001 {"status": "200", "extra": {"nested": [1, {"url": "x"}]}, "url": "https://example.com/b"}"#,
            #"com,example)/c 20261128120002 {"url": 7, "status": "200"}"#,
            #"com,example)/d 20261128120003 {"url": "https://example.com/d", "status": "404"}"#,
            #"com,example)/e 20261128120004 {"url": "https://example.com/e", "mime": "warc/revisit"}"#,
            #"com,example)/f 20261128120005 not json"#,
            #"com,example)/g 20261128120006 ["https://example.com/g"]"#,
            #"com,example)/hé 20261128120007 {"url": "https://example.com/h\u00e9\"", "status": "200"}"#,
            #"com,example)/hé 20261128120008 {"url": "https://example.com/h\u00e9\"", "status": "200"}"#,
            // A field the list does not read is not read: a value JSON does not allow there lists the page.
            #"com,example)/i 20261128120009 {"url": "https://example.com/i", "x": 01, "status": "200"}"#,
        ]
        let listed = lines.compactMap { pages.page(forIndexLine: Array($0.utf8)).map { String(decoding: $0, as: UTF8.self) } }
        #expect(listed == [
            #"{"id": "1", "url": "https://example.com/a", "ts": "2026-11-28T12:00:00Z"}"# + "\n",
            #"{"id": "2", "url": "https://example.com/b", "ts": "2026-11-28T12:00:01Z"}"# + "\n",
            #"{"id": "3", "url": "https://example.com/h\u00e9\"", "ts": "2026-11-28T12:00:07Z"}"# + "\n",
            #"{"id": "4", "url": "https://example.com/i", "ts": "2026-11-28T12:00:09Z"}"# + "\n",
        ])
        #expect(pages.count == 4)
    }

    /// An index beside a WARC file that is no text (a file of zeros) fails the pack with its
    /// name, rather than being held whole.
    @Test func anIndexThatIsNoTextFailsThePackNamingIt() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = try madeUpArchive(in: dir, indexes: [Array(repeating: 0, count: 2 << 20)])
            let index = try #require(try FileManager.default.contentsOfDirectory(atPath: warc).first { $0.hasSuffix(".cdxj") })
            let error = #expect(throws: ArchiveProblem.self) {
                try WACZPackage.pack(directory: warc, to: dir.appendingPathComponent("zeros.wacz").path)
            }
            #expect(error?.description == "\(warc)/\(index) has a line longer than 1048576 bytes; it is not the text it should be")
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["warc"])
        }
    }

    /// The files' indexes are merged on disk: an archive whose indexes run to tens of megabytes
    /// packs in about the memory of one of a few lines (the packer that sorted them in memory
    /// held them several times over).
    @Test func largeIndexesPackInTheMemoryOfSmallOnes() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            func archive(_ name: String, lines: Int) throws -> String {
                let folder = dir.appendingPathComponent(name)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                var indexes: [[UInt8]] = []
                for file in 0..<2 {
                    var text: [UInt8] = []
                    text.reserveCapacity(lines * 240)
                    // In no order: each file's lines run backwards through its URLs.
                    for serial in (0..<lines).reversed() {
                        text += indexLine("https://i.imgur.com/\(file)x\(serial % (lines / 2 + 1)).jpg", second: serial, status: "200", file: "f\(file)")
                        text.append(0x0A)
                    }
                    indexes.append(text)
                }
                return try madeUpArchive(in: folder, indexes: indexes)
            }
            let small = try archive("small", lines: 10)
            let large = try archive("large", lines: 60_000)
            let smallRun = try await MeasuredProcess.run(["warc", "pack", small, "--out", dir.appendingPathComponent("small.wacz").path])
            let largeWACZ = dir.appendingPathComponent("large.wacz").path
            let largeRun = try await MeasuredProcess.run(["warc", "pack", large, "--out", largeWACZ])
            #expect(smallRun.status == 0 && largeRun.status == 0, "\(smallRun.stderr) \(largeRun.stderr)")
            let grown = largeRun.peakResidentBytes - smallRun.peakResidentBytes
            #expect(grown < 20 << 20, "\(smallRun.peakResidentBytes >> 20) MiB, then \(largeRun.peakResidentBytes >> 20) MiB")
            let check = try await WARCReader.python(#"""
                import sys, zipfile
                z = zipfile.ZipFile(sys.argv[1])
                index = z.read('indexes/index.cdxj').split(b'\n')[:-1]
                pages = z.read('pages/pages.jsonl').split(b'\n')[1:-1]
                print(len(index), all(a <= b for a, b in zip(index, index[1:])), len(pages))
                """#, [largeWACZ])
            #expect(String(decoding: check, as: UTF8.self) == "120000 True 60002\n")
        }
    }
}
