import FixtureServer
import Foundation
import Synchronization
import Testing
@testable import MirrorKit

/// `--warc DIR`: every exchange of a run in WARC/1.1, read back by an independent reader
/// (warcio) that checks each record's digests.
@Suite("Archiving a run as WARC", .timeLimit(.minutes(3)), .enabled(if: WARCReader.isAvailable, "warcio is installed by scripts/setup"))
struct WARCArchiveTests {
    private func mediaFiles(in out: String) -> [String: String] {
        var files: [String: String] = [:]
        for case let path as String in FileManager.default.enumerator(atPath: out) ?? FileManager.default.enumerator(atPath: "/")!
        where !path.hasPrefix(".mirror") && !path.hasPrefix("meta") {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: out + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            files[(path as NSString).lastPathComponent] = TestSupport.digest(ofFile: out + "/" + path)
        }
        return files
    }

    @Test func aTagRunIsArchivedWithEveryFileAtItsURLAndNoClientID() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let warc = dir.appendingPathComponent("warc").path
                let run = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + ["--warc", warc])
                #expect(run.status == 0, "\(run.stderr)")
                let names = try FileManager.default.contentsOfDirectory(atPath: warc).filter { $0.hasSuffix(".warc.gz") }
                #expect(names.count == 1 && names.allSatisfy { $0.hasPrefix("mirror-") }, "\(names)")
                let records = try await WARCReader.records(in: warc)
                #expect(records.first?.type == "warcinfo")
                #expect(records.first?.head.contains("software: mirror/") == true)
                #expect(records.first?.head.contains("mirror-sources: tag cats") == true, "\(records.first?.head ?? "")")

                // Every file mirrored is one whole 200's payload at its URL, byte for byte. A preview
                // paused for a forced file before it kept a byte is asked for again from the start:
                // its first exchange is in the archive too, cut, and says so (WARC-Truncated).
                let responses = records.filter { $0.type == "response" }
                let media = mediaFiles(in: out)
                #expect(!media.isEmpty)
                for (name, digest) in media {
                    let found = responses.filter { $0.uri?.hasSuffix("/" + name) == true && $0.status == 200 }
                    let whole = found.filter { $0.truncated == nil }
                    #expect(whole.count == 1 && whole.first?.md5 == digest, "\(name): \(found.map { ($0.truncated, $0.length) })")
                }
                // API calls too, each request beside its response.
                #expect(responses.contains { $0.uri == "\(server.baseURL)/3/gallery/t/cats/time/all/0" && $0.status == 200 })
                // The placeholder both removed images redirect to is the same bytes twice: a revisit.
                let answers = records.filter { $0.type == "response" || $0.type == "revisit" }
                #expect(records.filter { $0.type == "revisit" }.map(\.uri) == ["\(server.baseURL)/removed.png"])
                let ids = Set(answers.map(\.id))
                let requests = records.filter { $0.type == "request" }
                #expect(requests.count == answers.count)
                #expect(requests.allSatisfy { $0.concurrentTo.map(ids.contains) == true && $0.ip == "127.0.0.1" })
                #expect(responses.allSatisfy { $0.ip == "127.0.0.1" && $0.payloadDigest?.hasPrefix("sha1:") == true })
                // The client id is in no byte; the field that carried it says it was taken out.
                let apiRequest = requests.first { $0.uri?.contains("/3/gallery/") == true }
                #expect(apiRequest?.head.contains("Authorization: [redacted by mirror]") == true, "\(apiRequest?.head ?? "")")
                // The index beside the file is what the Webrecorder project's indexer makes of it.
                #expect(try FileManager.default.contentsOfDirectory(atPath: warc).filter { $0.hasSuffix(".cdxj") }.count == 1)
                for name in names {
                    #expect(try await WARCReader.index(warc + "/" + name) == TestSupport.bytes(at: warc + "/" + name.replacingOccurrences(of: ".warc.gz", with: ".cdxj")))
                }
                for name in names {
                    let bytes = try await WARCReader.decompressed(warc + "/" + name)
                    #expect(bytes.range(of: Data("fixtureid".utf8)) == nil)
                    #expect(bytes.range(of: Data("Client-ID".utf8)) == nil)
                }
            }
        }
    }

    /// A redirect is two exchanges: the 302 at the first URL, the file at the second.
    @Test func eachRedirectHopIsAnExchangeOfItsOwn() async throws {
        let feed = """
            <rss version="2.0"><channel><title>t</title>
            <item><guid>1</guid><enclosure url="BASE/go/one.mp3" length="300000" type="audio/mpeg"/></item>
            </channel></rss>
            """
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            try await MirrorProcess.mirrorFeed(feed, files: [("/files/one.mp3", 300_000)], arguments: ["--warc", warc], prepare: { server in
                server.inject(.respond(status: 302, headers: ["Location": "\(server.baseURL)/files/one.mp3"]), path: "/go/one.mp3")
            }) { run, _, server in
                #expect(run.status == 0, "\(run.stderr)")
                let records = try await WARCReader.records(in: warc)
                let hop = records.first { $0.type == "response" && $0.uri == "\(server.baseURL)/go/one.mp3" }
                #expect(hop?.status == 302)
                let file = records.first { $0.type == "response" && $0.uri == "\(server.baseURL)/files/one.mp3" }
                #expect(file?.status == 200 && file?.md5 == TestSupport.digest(server.content(of: "/files/one.mp3")))
                #expect(file?.length == 300_000)
                #expect(records.filter { $0.type == "request" }.count == records.filter { $0.type == "response" }.count)
            }
        }
    }

    /// Past `--warc-max-size` a file is closed and another begun, each with its warcinfo first.
    @Test func filesRotatePastTheirSizeEachStartingWithItsWarcinfo() async throws {
        let items = (1...4).map { "<item><guid>\($0)</guid><enclosure url=\"BASE/files/\($0).bin\" length=\"700000\"/></item>" }.joined()
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            try await MirrorProcess.mirrorFeed(
                "<rss version=\"2.0\"><channel><title>t</title>\(items)</channel></rss>",
                files: (1...4).map { ("/files/\($0).bin", 700_000) }, arguments: ["--warc", warc, "--warc-max-size", "1M"]
            ) { run, _, server in
                #expect(run.status == 0, "\(run.stderr)")
                let names = try FileManager.default.contentsOfDirectory(atPath: warc).filter { $0.hasSuffix(".warc.gz") }.sorted()
                #expect(names.count >= 2, "\(names)")
                for name in names {
                    let records = try await WARCReader.records(files: [warc + "/" + name])
                    #expect(records.first?.type == "warcinfo", "\(name)")
                }
                let all = try await WARCReader.records(in: warc)
                for index in 1...4 {
                    #expect(all.contains { $0.uri == "\(server.baseURL)/files/\(index).bin" && $0.md5 == TestSupport.digest(server.content(of: "/files/\(index).bin")) })
                }
            }
        }
    }

    /// A file that reaches its size is closed after the exchange, not between its request and
    /// its response: each pair is in one file.
    @Test func aRequestAndItsResponseAreNeverInTwoFiles() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            let archive = try WARCArchive(path: warc, maxFileSize: 1)
            for index in 0..<3 {
                let response = WARCRecord(
                    type: "response", fields: [("WARC-Target-URI", "https://h/\(index)")],
                    head: Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n".utf8), body: .bytes([UInt8(index)]))
                let request = WARCRecord(
                    type: "request", fields: [("WARC-Target-URI", "https://h/\(index)"), ("WARC-Concurrent-To", response.id)],
                    head: Array("GET /\(index) HTTP/1.1\r\nHost: h\r\n\r\n".utf8), body: .bytes([]))
                archive.append([request, response], date: WARCRecord.now())
            }
            try archive.close()
            let names = try FileManager.default.contentsOfDirectory(atPath: warc).filter { $0.hasSuffix(".warc.gz") }.sorted()
            #expect(names.count == 3, "\(names)")
            for name in names {
                let records = try await WARCReader.records(files: [warc + "/" + name])
                #expect(records.map(\.type) == ["warcinfo", "request", "response"], "\(name)")
                #expect(records.first { $0.type == "request" }?.concurrentTo == records.first { $0.type == "response" }?.id)
            }
        }
    }

    /// SIGKILL a third to four fifths into a 64 MiB file, then run again: every file of the
    /// archive reads to its end, the 206 that finished the file is there, and so is the whole
    /// file as one `resource` record at its URL.
    @Test func aKilledRunLeavesNothingTornAndTheResumedFileIsArchivedWhole() async throws {
        try await MirrorProcess.withArchivedBigFile { server, dir, out, warc, arguments in
            let path = MirrorProcess.bigFile
            let first = try MirrorProcess.start(arguments, log: dir.appendingPathComponent("first.log"))
            try await MirrorProcess.waitForPartial(in: out, atLeast: Int64.random(in: (20 << 20)...(50 << 20)))
            first.signal(SIGKILL)
            #expect(await first.wait() == .signalled(SIGKILL))
            #expect(try FileManager.default.contentsOfDirectory(atPath: warc).contains { $0.hasSuffix(".open") })

            let second = try await MirrorProcess.run(arguments)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stderr.contains("was left open by a run that ended without closing it"), "\(second.stderr)")
            let names = try FileManager.default.contentsOfDirectory(atPath: warc)
            #expect(names.allSatisfy { $0.hasSuffix(".warc.gz") || $0.hasSuffix(".cdxj") }, "\(names)")
            for name in names where name.hasSuffix(".warc.gz") {
                #expect(try await WARCReader.index(warc + "/" + name) == TestSupport.bytes(at: warc + "/" + name.replacingOccurrences(of: ".warc.gz", with: ".cdxj")), "\(name)")
            }
            let records = try await WARCReader.records(in: warc)
            let url = server.baseURL + path
            let whole = TestSupport.digest(server.content(of: path))
            #expect(records.contains { $0.type == "response" && $0.uri == url && $0.status == 206 })
            let resources = records.filter { $0.type == "resource" && $0.uri == url }
            #expect(resources.count == 1 && resources.first?.md5 == whole && resources.first?.length == 64 << 20)
            #expect(TestSupport.digest(ofFile: out + "/full" + path) == whole)
        }
    }

    /// A `.open` file whose last record a kill cut in the middle: the next run cuts it back to the
    /// records before, byte for byte, and closes it under its name.
    @Test func aTornLastRecordIsCutOffAndTheFileClosed() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            let feed = "<rss version=\"2.0\"><channel><title>t</title><item><guid>1</guid><enclosure url=\"BASE/files/a.bin\" length=\"400000\"/></item></channel></rss>"
            try await MirrorProcess.mirrorFeed(feed, files: [("/files/a.bin", 400_000)], arguments: ["--warc", warc]) { run, _, _ in
                #expect(run.status == 0, "\(run.stderr)")
            }
            let name = try #require(try FileManager.default.contentsOfDirectory(atPath: warc).first { $0.hasSuffix(".warc.gz") })
            let original = try #require(TestSupport.bytes(at: warc + "/" + name))
            // The file again, and its last record (the 400 kB body's member) once more, cut in
            // the middle as a kill would cut it.
            let fd = open(warc + "/" + name, O_RDONLY)
            var offsets: [Int64] = []
            GzipMembers.wholeMembers(of: fd) { offsets.append($0.offset) }
            let lastMember = Int(try #require(offsets.last))
            close(fd)
            let torn = "mirror-20260101000000000-00000.warc.gz"
            let cut = original[lastMember...].prefix((original.count - lastMember) / 2)
            try TestSupport.write(original + cut, to: warc + "/" + torn + ".open")
            try await MirrorProcess.mirrorFeed(feed, files: [("/files/a.bin", 400_000)], arguments: ["--warc", warc]) { run, _, _ in
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stderr.contains("\(torn) was left open"), "\(run.stderr)")
            }
            #expect(TestSupport.digest(ofFile: warc + "/" + torn) == TestSupport.digest(original))
            #expect(!FileManager.default.fileExists(atPath: warc + "/" + torn + ".open"))
            #expect(try await WARCReader.index(warc + "/" + torn) == TestSupport.bytes(at: warc + "/mirror-20260101000000000-00000.cdxj"))
            _ = try await WARCReader.records(in: warc)
        }
    }

    /// The same bytes at a second URL are a revisit of the first (identical payload); a 304 to a
    /// run that asks again is a revisit too (server not modified).
    @Test func repeatedBytesAndRevalidationsAreRevisits() async throws {
        let feed = """
            <rss version="2.0"><channel><title>t</title>
            <item><guid>1</guid><enclosure url="BASE/files/a.bin" type="application/octet-stream"/></item>
            <item><guid>2</guid><enclosure url="BASE/mirror-2/a.bin" type="application/octet-stream"/></item>
            </channel></rss>
            """
        try await TestSupport.withServer { server in
            server.addMedia(path: "/files/a.bin", size: 200_000)
            server.addMirror(path: "/mirror-2/a.bin", of: "/files/a.bin")
            server.setFeed(path: "/feeds/feed.xml", text: feed.replacingOccurrences(of: "BASE", with: server.baseURL))
            try await TestSupport.withTemporaryDirectory { dir in
                let warc = dir.appendingPathComponent("warc").path
                let arguments = ["feed", "\(server.baseURL)/feeds/feed.xml", "--out", dir.appendingPathComponent("out").path, "--warc", warc, "--mode", "new-file"]
                for _ in 1...2 {
                    let run = try await MirrorProcess.run(arguments)
                    #expect(run.status == 0, "\(run.stderr)")
                }
                let records = try await WARCReader.records(in: warc)
                let first = server.baseURL + "/files/a.bin"
                let second = server.baseURL + "/mirror-2/a.bin"
                let whole = records.filter { $0.type == "response" && $0.status == 200 && ($0.uri == first || $0.uri == second) }
                #expect(whole.count == 1, "\(records.map { "\($0.type) \($0.uri ?? "") \($0.status ?? 0)" })")
                let copy = records.first { $0.type == "revisit" && $0.profile == RecentPayloads.identicalPayloadProfile }
                #expect(copy != nil && copy?.refersToURI == whole.first?.uri && copy?.payloadDigest == whole.first?.payloadDigest && copy?.length == 0)
                #expect(copy?.truncated == "length", "a head without its body is a truncated block (WARC 1.1 §6.7.2)")
                let revalidated = records.filter { $0.type == "revisit" && $0.profile == WARCArchive.notModifiedProfile }
                #expect(revalidated.count == 2 && revalidated.allSatisfy { $0.status == 304 }, "\(revalidated.map(\.uri))")
                // No payload of their own: no payload digest (the empty body's would name no capture).
                #expect(revalidated.allSatisfy { $0.payloadDigest == nil }, "\(revalidated.map(\.payloadDigest))")
                for name in try FileManager.default.contentsOfDirectory(atPath: warc) where name.hasSuffix(".warc.gz") {
                    #expect(try await WARCReader.index(warc + "/" + name) == TestSupport.bytes(at: warc + "/" + name.replacingOccurrences(of: ".warc.gz", with: ".cdxj")), "\(name)")
                }
            }
        }
    }

    /// The archive's disk fills part way into a record: the run says the archive is not whole
    /// (73), and what it holds still reads to its end, the torn record cut off.
    @Test(.enabled(if: Mount.isPossible, "needs root allowed to mount a file system (CAP_SYS_ADMIN, no confinement against it)"))
    func aFullDiskLeavesAnArchiveThatReadsToItsEnd() async throws {
        // Bodies held in memory (under 256 KiB), so that the archive file is what meets the full disk.
        let items = (1...8).map { "<item><guid>\($0)</guid><enclosure url=\"BASE/files/\($0).bin\" length=\"200000\"/></item>" }.joined()
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            try FileManager.default.createDirectory(atPath: warc, withIntermediateDirectories: true)
            try #require(Mount.tmpfs(at: warc, size: "1m"), "cannot mount a tmpfs here")
            defer { Mount.unmount(warc) }
            try await MirrorProcess.mirrorFeed(
                "<rss version=\"2.0\"><channel><title>t</title>\(items)</channel></rss>",
                files: (1...8).map { ("/files/\($0).bin", 200_000) }, arguments: ["--warc", warc]
            ) { run, out, _ in
                #expect(run.status == 73, "\(run.stderr)")
                #expect(run.stderr.contains("WARC archive:") && run.stderr.contains("the archive of this run is not whole"), "\(run.stderr)")
                // The mirror itself is whole: the archive's disk is not the mirror's.
                #expect(((try? FileManager.default.contentsOfDirectory(atPath: out + "/enclosures")) ?? []).count == 8)
            }
            let names = try FileManager.default.contentsOfDirectory(atPath: warc)
            #expect(names.contains { $0.hasSuffix(".warc.gz") }, "\(names)")
            let records = try await WARCReader.records(in: warc)
            #expect(records.first?.type == "warcinfo")
        }
    }

    /// A disk full before the archive's first bytes: the archive fails, and no file is named,
    /// neither an empty `.warc.gz` (which no reader takes for a WARC file) nor a `.open` left over.
    @Test(.enabled(if: Mount.isPossible, "needs root allowed to mount a file system (CAP_SYS_ADMIN, no confinement against it)"))
    func aDiskFullFromTheStartNamesNoEmptyFile() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            try FileManager.default.createDirectory(atPath: warc, withIntermediateDirectories: true)
            try #require(Mount.tmpfs(at: warc, size: "256k"), "cannot mount a tmpfs here")
            defer { Mount.unmount(warc) }
            let filler = open(warc + "/filler", O_WRONLY | O_CREAT, 0o600)
            let block = [UInt8](repeating: 1, count: 4096)
            while write(filler, block, block.count) > 0 {}
            close(filler)
            let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30)
            let record = WARCRecord(
                type: "response", fields: [("WARC-Target-URI", "https://h/a")],
                head: Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n".utf8), body: .bytes([1]))
            archive.append([record], date: WARCRecord.now())
            #expect(throws: FileSystemError.self) { try archive.close() }
            #expect(try FileManager.default.contentsOfDirectory(atPath: warc) == ["filler"])
        }
    }

    /// A large body is read back from the file it was downloaded into; bytes written over it
    /// before that (another attempt at the file) fail the archive (the run is told it is not
    /// whole) and that record is not in it, but the archive's file is whole to its end.
    @Test func aBodyWrittenOverBeforeItIsArchivedFailsTheArchiveAndLeavesItsFileWhole() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30)
            let path = dir.appendingPathComponent("body").path
            try TestSupport.write([UInt8](repeating: 7, count: 300_000), to: path)
            let fd = open(path, O_RDONLY)
            // What arrived was other bytes: their CRC-32 is not the file's.
            let record = WARCRecord(
                type: "response", fields: [("WARC-Target-URI", "https://h/a.bin")], head: Array("HTTP/1.1 200 OK\r\n\r\n".utf8),
                body: .file(BodyFile(fd: fd, length: 300_000, crc: 0xDEAD_BEEF)))
            archive.append([record], date: WARCRecord.now())
            let error = #expect(throws: FileSystemError.self) { try archive.close() }
            #expect(error?.problem == .changedMeanwhile)
            let records = try await WARCReader.records(in: warc)
            #expect(records.map(\.type) == ["warcinfo"])
        }
    }

    /// A body that its own file could not take (the mirror's disk full, the archive's not) is
    /// archived without it, marked truncated; the archive goes on with the exchanges after it.
    @Test(.enabled(if: Mount.isPossible, "needs root allowed to mount a file system (CAP_SYS_ADMIN, no confinement against it)"))
    func aBodyItsFileCouldNotTakeIsArchivedTruncatedAndTheArchiveGoesOn() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                server.addMedia(path: "/big.bin", size: 3 << 20)
                server.addMedia(path: "/next.bin", size: 300_000)
                let small = dir.appendingPathComponent("small").path
                try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
                try #require(Mount.tmpfs(at: small, size: "1m"), "cannot mount a tmpfs here")
                defer { Mount.unmount(small) }
                let warc = dir.appendingPathComponent("warc").path
                let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30)
                var configuration = TransferEngine.Configuration()
                configuration.archive = archive
                let engine = TransferEngine(configuration: configuration)
                await #expect(throws: TransferError.self) {
                    try await engine.perform(TransferRequest(url: server.baseURL + "/big.bin", destination: .file(path: small + "/big", offset: 0)))
                }
                let next = try await engine.perform(TransferRequest(url: server.baseURL + "/next.bin", destination: .file(path: dir.path + "/next", offset: 0)))
                #expect(next.status == 200)
                await engine.shutDown()
                try archive.close()
                let records = try await WARCReader.records(in: warc)
                let responses = records.filter { $0.type == "response" }
                #expect(responses.contains { $0.uri == server.baseURL + "/next.bin" }, "\(records.map { ($0.type, $0.uri) })")
                #expect(responses.first { $0.uri == server.baseURL + "/big.bin" }?.truncated == "unspecified", "\(responses)")
            }
        }
    }

    /// A head is recorded as it came: a field named like a status line is a field (taken for a
    /// new head, it dropped the status and the fields before it), and a chunked body's trailer
    /// after an empty body is no part of the head (nor of the payload after it).
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nHTTP/x: y\r\nContent-Length: 11\r\n\r\nwhole bytes", 11),
        ("HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nTransfer-Encoding: chunked\r\nTrailer: X-Check\r\n\r\n0\r\nX-Check: 1\r\n\r\n", 0),
    ])
    func aHeadIsArchivedAsItCameWhateverItsLinesLookLike(answer: String, length: Int) async throws {
        let server = try RawHTTPServer(answer: Array(answer.utf8))
        defer { server.close() }
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30)
            var configuration = TransferEngine.Configuration()
            configuration.archive = archive
            let engine = TransferEngine(configuration: configuration)
            let response = try await engine.perform(TransferRequest(url: server.baseURL + "/a.jpg", destination: .memory(limit: 1 << 20)))
            #expect(response.status == 200)
            await engine.shutDown()
            try archive.close()
            let record = try #require(try await WARCReader.records(in: warc).first { $0.type == "response" })
            #expect(record.status == 200, "\(record.head)")
            #expect(record.head.contains("Content-Type: image/jpeg"), "\(record.head)")
            #expect(!record.head.contains("X-Check: 1"), "\(record.head)")
            #expect(record.length == length)
        }
    }

    /// Exchanges wait in memory (or as descriptors of their files) only up to the archive's
    /// limit: past it a new exchange waits to begin, while handing records over never blocks
    /// (the transfers' thread does it, and must go on serving the transfers already running).
    @Test func aSlowArchiveHoldsBackNewExchangesNotTheThreadHandingItRecords() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30, inFlightLimit: 3)
            let disk = DispatchSemaphore(value: 0)
            archive.queue.async { disk.wait() }
            for index in 0..<5 {
                let record = WARCRecord(
                    type: "response", fields: [("WARC-Target-URI", "https://h/\(index)")],
                    head: Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n".utf8), body: .bytes([UInt8(index)]))
                archive.append([record], date: WARCRecord.now())
            }
            let begun = Flag()
            let next = Task {
                await archive.waitForRoom()
                begun.value.store(true, ordering: .relaxed)
            }
            // A wait for something that must not happen: five wait to be written, the limit is three.
            try await Task.sleep(for: .milliseconds(300))
            let begunEarly = begun.value.load(ordering: .relaxed)
            #expect(!begunEarly)
            disk.signal()
            await next.value
            let begunAfter = begun.value.load(ordering: .relaxed)
            #expect(begunAfter)
            try archive.close()
            let records = try await WARCReader.records(in: warc)
            #expect(records.filter { $0.type == "response" }.count == 5)
        }
    }

    /// The engine asks the archive for room before it begins an exchange: while the archive is
    /// behind, no request leaves (and the transfers already running are not held).
    @Test func theEngineBeginsNoExchangeWhileTheArchiveIsBehind() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                server.addMedia(path: "/a.bin", size: 1000)
                let archive = try WARCArchive(path: dir.appendingPathComponent("warc").path, maxFileSize: 1 << 30, inFlightLimit: 1)
                let disk = DispatchSemaphore(value: 0)
                archive.queue.async { disk.wait() }
                let waiting = WARCRecord(
                    type: "response", fields: [("WARC-Target-URI", "https://h/waiting")],
                    head: Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n".utf8), body: .bytes([1]))
                archive.append([waiting], date: WARCRecord.now())
                var configuration = TransferEngine.Configuration()
                configuration.archive = archive
                let engine = TransferEngine(configuration: configuration)
                let fetch = Task {
                    try await engine.perform(TransferRequest(url: server.baseURL + "/a.bin", destination: .memory(limit: 1 << 20)))
                }
                // A wait for something that must not happen: the archive has no room.
                try await Task.sleep(for: .milliseconds(300))
                #expect(server.requestCount(path: "/a.bin") == 0)
                disk.signal()
                let response = try await fetch.value
                #expect(response.status == 200)
                #expect(server.requestCount(path: "/a.bin") == 1)
                await engine.shutDown()
                try archive.close()
                let records = try await WARCReader.records(in: dir.appendingPathComponent("warc").path)
                #expect(records.contains { $0.type == "response" && $0.uri == server.baseURL + "/a.bin" })
            }
        }
    }

    /// Over HTTP/2 (nginx over TLS), both heads are written in HTTP/1.1 form, as Browsertrix and
    /// warcprox write them, and the request's Authorization is redacted; warcio reads them.
    @Test(.enabled(if: NginxServer.isAvailable, "needs nginx and openssl"))
    func anHTTP2ExchangeIsWrittenInHTTP11Form() async throws {
        let server = try await NginxServer.start()
        let digest = TestSupport.digest(try server.addFile("a.bin", size: 300_000))
        try await TestSupport.withTemporaryDirectory { dir in
            let warc = dir.appendingPathComponent("warc").path
            let archive = try WARCArchive(path: warc, maxFileSize: 1 << 30)
            var configuration = TransferEngine.Configuration(certificateAuthorities: server.certificate)
            configuration.archive = archive
            let engine = TransferEngine(configuration: configuration)
            var request = TransferRequest(url: server.baseURL + "/a.bin", destination: .file(path: dir.appendingPathComponent("a").path, offset: 0))
            request.headers = [("Authorization", "Client-ID fixtureid")]
            let response = try await engine.perform(request)
            #expect(response.status == 200)
            await engine.shutDown()
            try archive.close()
            #expect(server.requests().map(\.protocol) == ["HTTP/2.0"])
            let records = try await WARCReader.records(in: warc)
            let sent = records.first { $0.type == "request" }
            #expect(sent?.head.hasPrefix("GET /a.bin HTTP/1.1\r\n") == true, "\(sent?.head ?? "")")
            #expect(sent?.head.lowercased().contains("authorization: [redacted by mirror]\r\n") == true, "\(sent?.head ?? "")")
            let answer = records.first { $0.type == "response" }
            #expect(answer?.head.hasPrefix("HTTP/1.1 200 OK\r\n") == true, "\(answer?.head ?? "")")
            #expect(answer?.md5 == digest && answer?.status == 200)
            let bytes = try await WARCReader.decompressed(warc + "/" + (try FileManager.default.contentsOfDirectory(atPath: warc).first { $0.hasSuffix(".warc.gz") } ?? ""))
            #expect(bytes.range(of: Data("fixtureid".utf8)) == nil)
        }
    }

    private final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }
}
