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
                let (entries, index) = try WARCReader.wacz(wacz)
                #expect(Set(entries) == Set(names.map { "archive/" + $0 } + [
                    "indexes/index.cdxj", "pages/pages.jsonl", "datapackage.json", "datapackage-digest.json",
                ]))
                // The index is the files' indexes merged: each line as the indexer makes it, sorted.
                var lines: [[UInt8]] = []
                for name in names { lines += try WARCReader.index(warc + "/" + name).split(separator: 0x0A).map(Array.init) }
                #expect(index == lines.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 + [0x0A] })
                // A WACZ is written once: not over a file that exists.
                let again = try await MirrorProcess.run(["warc", "pack", warc, "--out", wacz])
                #expect(again.status == 73 && again.stderr == "mirror: \(wacz) exists; pack writes a new file\n", "\(again.stderr)")
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
                let (entries, _) = try WARCReader.wacz(wacz)
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
                #expect(try !WARCReader.wacz(wacz).entries.contains { $0.contains("2999") })
            }
        }
    }
}
