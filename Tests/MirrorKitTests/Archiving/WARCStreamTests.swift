import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// A large body (`WARCArchive.streamsFrom`, 64 MiB in a run) is archived as it arrives, into a
/// WARC file of its own, rather than read back once its transfer has ended; what arrived other
/// than its head declared, or bytes archived before, are written as any other exchange.
@Suite("Archiving a large body as it arrives", .timeLimit(.minutes(3)), .enabled(if: WARCReader.isAvailable, "warcio is installed by scripts/setup"))
struct WARCStreamTests {
    private func names(in warc: String, ending suffix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: warc).filter { $0.hasSuffix(suffix) }.sorted()
    }

    /// CRC-32 as gzip has it, bit by bit: the test's own, not the code's under test.
    private static func crc32(of bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    private func expectIndexesAreTheIndexersOwn(in warc: String) async throws {
        for name in try names(in: warc, ending: ".warc.gz") {
            #expect(try await WARCReader.index(warc + "/" + name) == TestSupport.bytes(at: warc + "/" + name.replacingOccurrences(of: ".warc.gz", with: ".cdxj")), "\(name)")
        }
    }

    /// Through the executable: a 64 MiB file served at 24 MiB/s. Its WARC file grows while the
    /// file downloads (read back, nothing of the body would be archived before its end), and
    /// holds its warcinfo and the response, whose request is in the run's other file.
    @Test func aLargeBodyIsArchivedWhileItDownloadsIntoAFileOfItsOwn() async throws {
        try await MirrorProcess.withArchivedBigFile { server, dir, out, warc, arguments in
            let path = MirrorProcess.bigFile
            let run = try MirrorProcess.start(arguments, log: dir.appendingPathComponent("run.log"))
            try await MirrorProcess.waitForPartial(in: out, atLeast: 24 << 20)
            // 16 MiB archived while the download is still under way (its partial short of
            // 64 MiB, read after the archive's size): read back, nothing of the body would be.
            let size = { (path: String) in (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0 }
            let partials = out + "/.mirror/partials"
            var archivedMeanwhile: Int64 = 0
            var stillRunning = false
            for _ in 0..<40 where !stillRunning {
                archivedMeanwhile = ((try? names(in: warc, ending: ".warc.gz.open")) ?? []).map { size(warc + "/" + $0) }.max() ?? 0
                let downloaded = ((try? FileManager.default.contentsOfDirectory(atPath: partials)) ?? []).map { size(partials + "/" + $0) }.max() ?? 0
                stillRunning = archivedMeanwhile >= 16 << 20 && downloaded > 0 && downloaded < 64 << 20
                try await Task.sleep(for: .milliseconds(25))
            }
            let log = (try? String(contentsOf: dir.appendingPathComponent("run.log"), encoding: .utf8)) ?? ""
            #expect(await run.wait() == .exited(0), "\(log)")
            #expect(stillRunning && archivedMeanwhile >= 16 << 20, "archived while downloading: \(archivedMeanwhile) bytes")

            let files = try names(in: warc, ending: ".warc.gz")
            let open = try names(in: warc, ending: ".open")
            #expect(files.count == 2 && open.isEmpty, "\(files) \(open)")
            let url = server.baseURL + path
            var own: [WARCReader.Record]?
            for file in files where own == nil {
                let records = try await WARCReader.records(files: [warc + "/" + file])
                if records.contains(where: { $0.uri == url && $0.type == "response" }) { own = records }
            }
            #expect(own?.map(\.type) == ["warcinfo", "response"])
            let response = own?.last
            #expect(response?.status == 200 && response?.length == 64 << 20 && response?.md5 == TestSupport.digest(server.content(of: path)))
            let all = try await WARCReader.records(in: warc)
            #expect(all.filter { $0.type == "request" && $0.uri == url }.map(\.concurrentTo) == [response?.id])
            #expect(all.filter { $0.uri == url && $0.type != "request" }.count == 1)
            try await expectIndexesAreTheIndexersOwn(in: warc)
        }
    }

    /// The same large payload twice: the second is a `revisit` in the run's file, and its
    /// stream's file is gone.
    @Test func aLargePayloadArchivedBeforeIsARevisitAndItsStreamsFileGoes() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                // Past the 1 MiB the transfer's file is written in, so that the stream begins.
                server.addMedia(path: "/a.bin", size: 3 << 20)
                let warc = dir.appendingPathComponent("warc").path
                let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30, streamsFrom: 100_000)
                var configuration = TransferEngine.Configuration()
                configuration.archive = archive
                let engine = TransferEngine(configuration: configuration)
                for copy in ["one", "two"] {
                    let response = try await engine.perform(TransferRequest(
                        url: server.baseURL + "/a.bin", destination: .file(path: dir.appendingPathComponent(copy).path, offset: 0)))
                    #expect(response.status == 200)
                }
                await engine.shutDown()
                try archive.close()
                #expect(try names(in: warc, ending: ".warc.gz").count == 2)
                #expect(try names(in: warc, ending: ".open").isEmpty)
                let records = try await WARCReader.records(in: warc)
                let url = server.baseURL + "/a.bin"
                let response = records.filter { $0.uri == url && $0.type == "response" }
                #expect(response.count == 1 && response.first?.md5 == TestSupport.digest(server.content(of: "/a.bin")))
                let revisit = records.filter { $0.uri == url && $0.type == "revisit" }
                #expect(revisit.count == 1 && revisit.first?.refersToURI == url && revisit.first?.file != response.first?.file)
                try await expectIndexesAreTheIndexersOwn(in: warc)
            }
        }
    }

    /// A body cut short of what its head declared is archived as any cut body (WARC-Truncated,
    /// in the run's file); its stream's file goes.
    @Test func aLargeBodyCutShortIsArchivedAsAnyOtherAndItsStreamsFileGoes() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                server.addMedia(path: "/a.bin", size: 3 << 20)
                server.inject(.dropAfter(bytes: (2 << 20) + 300_000), path: "/a.bin")
                let warc = dir.appendingPathComponent("warc").path
                let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30, streamsFrom: 100_000)
                var configuration = TransferEngine.Configuration()
                configuration.archive = archive
                let engine = TransferEngine(configuration: configuration)
                await #expect(throws: TransferError.self) {
                    try await engine.perform(TransferRequest(url: server.baseURL + "/a.bin", destination: .file(path: dir.appendingPathComponent("a").path, offset: 0)))
                }
                await engine.shutDown()
                try archive.close()
                #expect(try names(in: warc, ending: ".warc.gz").count == 1)
                #expect(try names(in: warc, ending: ".open").isEmpty)
                let records = try await WARCReader.records(in: warc)
                let response = records.filter { $0.uri == server.baseURL + "/a.bin" && $0.type == "response" }
                #expect(response.count == 1 && response.first?.truncated == "disconnect" && response.first?.length ?? 0 >= 2 << 20, "\(response)")
            }
        }
    }

    /// Text (JSON here) is compressed in the run's file rather than stored by a stream, however
    /// large.
    @Test func aLargeTextBodyIsCompressedInTheRunsFileNotStreamed() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                server.addMedia(path: "/a.json", size: 3 << 20, contentType: "application/json")
                let warc = dir.appendingPathComponent("warc").path
                let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30, streamsFrom: 100_000)
                var configuration = TransferEngine.Configuration()
                configuration.archive = archive
                let engine = TransferEngine(configuration: configuration)
                let response = try await engine.perform(TransferRequest(
                    url: server.baseURL + "/a.json", destination: .file(path: dir.appendingPathComponent("a").path, offset: 0)))
                #expect(response.status == 200)
                await engine.shutDown()
                try archive.close()
                #expect(try names(in: warc, ending: ".warc.gz").count == 1)
                let records = try await WARCReader.records(in: warc)
                #expect(records.filter { $0.type == "response" }.map(\.md5) == [TestSupport.digest(server.content(of: "/a.json"))])
            }
        }
    }

    /// A stream whose file cannot be made (here a directory made immutable once the run's file
    /// is open) does not cost the archive its record: the body is read back from the transfer's
    /// file and written in the run's file, as any other.
    @Test(.enabled(if: ImmutableFiles.isPossible, "needs chattr +i: root with CAP_LINUX_IMMUTABLE, on a file system that keeps the flag"))
    func aStreamWhoseFileCannotBeMadeIsArchivedAsAnyOther() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30, streamsFrom: 1)
            let small = WARCRecord(
                type: "response", fields: [("WARC-Target-URI", "https://h/small")],
                head: Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n".utf8), body: .bytes([1]))
            archive.append([small], date: WARCRecord.now())
            archive.queue.sync {}
            let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 7) }
            let path = dir.appendingPathComponent("body").path
            try TestSupport.write(body, to: path)
            let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n".utf8)
            var record = WARCRecord(type: "response", fields: [("WARC-Target-URI", "https://h/large.bin")], head: head, body: .bytes([]))
            record.http = HTTPHead(head)
            try ImmutableFiles.set(true, warc)
            defer { try? ImmutableFiles.set(false, warc) }
            let stream = try #require(WARCStream(archive: archive, record: record, date: WARCRecord.now(), length: 300_000, source: open(path, O_RDONLY), offset: 0))
            stream.advance(to: 300_000)
            record.body = .streamed(stream, crc: Self.crc32(of: body))
            archive.append([record], date: WARCRecord.now())
            archive.queue.sync {}
            try ImmutableFiles.set(false, warc)
            try archive.close()
            #expect(try names(in: warc, ending: ".warc.gz").count == 1)
            let records = try await WARCReader.records(in: warc)
            #expect(records.map(\.type) == ["warcinfo", "response", "response"])
            #expect(records.last?.uri == "https://h/large.bin" && records.last?.md5 == TestSupport.digest(body))
        }
    }

    /// A stream given up (its transfer cancelled as the run stops) is let go on its own queue;
    /// the archive's close waits for it, so that the run leaves no `.open` file behind.
    @Test func closingTheArchiveWaitsForAStreamGivenUpToGo() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30, streamsFrom: 1)
            let path = dir.appendingPathComponent("body").path
            try TestSupport.write([UInt8](repeating: 9, count: 300_000), to: path)
            let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n".utf8)
            var record = WARCRecord(type: "response", fields: [("WARC-Target-URI", "https://h/a.bin")], head: head, body: .bytes([]))
            record.http = HTTPHead(head)
            let stream = try #require(WARCStream(archive: archive, record: record, date: WARCRecord.now(), length: 300_000, source: open(path, O_RDONLY), offset: 0))
            let disk = DispatchSemaphore(value: 0)
            stream.queue.async { disk.wait() }
            stream.advance(to: 300_000)
            stream.discard()
            let closing = Task.detached { try archive.close() }
            // A wait for something that must not happen: the stream has not been let go.
            try await Task.sleep(for: .milliseconds(300))
            #expect(archive.streams.wait(timeout: .now()) == .timedOut)
            disk.signal()
            try await closing.value
            let left = try FileManager.default.contentsOfDirectory(atPath: warc)
            #expect(left.isEmpty, "\(left)")
        }
    }

    /// The stream's framing of its own gzip member: a head over one stored block (64 KiB), the
    /// digests written over their placeholders, read by warcio and gzip and indexed as
    /// cdxj-indexer indexes it; and a body whose bytes are not those that arrived fails the
    /// archive and leaves no file.
    @Test func aStreamedRecordReadsWholeAndOneWrittenOverFailsAndLeavesNoFile() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30, streamsFrom: 1)
            let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
            let path = dir.appendingPathComponent("body").path
            try TestSupport.write(body, to: path)
            let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\nX-Long: \(String(repeating: "x", count: 70_000))\r\n\r\n".utf8)
            for (url, crc) in [("https://h/whole.bin", Self.crc32(of: body)), ("https://h/over.bin", 0xDEAD_BEEF)] {
                var record = WARCRecord(type: "response", fields: [("WARC-Target-URI", url)], head: head, body: .bytes([]))
                record.contentType = "application/http;msgtype=response"
                record.http = HTTPHead(head)
                let stream = try #require(WARCStream(archive: archive, record: record, date: WARCRecord.now(), length: 300_000, source: open(path, O_RDONLY), offset: 0))
                stream.advance(to: 200_000)
                record.body = .streamed(stream, crc: crc)
                archive.append([record], date: WARCRecord.now())
            }
            let error = #expect(throws: FileSystemError.self) { try archive.close() }
            #expect(error?.problem == .changedMeanwhile)
            let files = try names(in: warc, ending: ".warc.gz")
            let open = try names(in: warc, ending: ".open")
            #expect(files.count == 1 && open.isEmpty, "\(files) \(open)")
            let records = try await WARCReader.records(in: warc)
            #expect(records.map(\.type) == ["warcinfo", "response"])
            #expect(records.last?.uri == "https://h/whole.bin" && records.last?.md5 == TestSupport.digest(body) && records.last?.head.contains("X-Long: xxx") == true)
            try await expectIndexesAreTheIndexersOwn(in: warc)
        }
    }
}
