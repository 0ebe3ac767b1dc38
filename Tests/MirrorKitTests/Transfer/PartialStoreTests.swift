import Foundation
import Synchronization
import Testing
@testable import MirrorKit

@Suite("Partial downloads on disk: one file each, validators in its attributes", .timeLimit(.minutes(2)))
struct PartialStoreTests {
    private func names(in directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }

    @Test func aDownloadsValidatorsLiveInItsPartFileNoOtherFileIsMade() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let folder = dir.appendingPathComponent("partials")
                let partials = try PartialStore(directory: folder)
                let url = server.baseURL + "/aB3dE5f.jpg"
                // A download cut short leaves its bytes and, in the same file, their validators.
                server.inject(.dropAfter(bytes: 50_000), path: "/aB3dE5f.jpg")
                let downloader = Downloader(
                    engine: TransferEngine(), partials: partials, retry: RetryPolicy(maxAttempts: 1), logger: TestSupport.logger)
                _ = try? await downloader.fetch(url)
                // Where the file system keeps no user attributes the record goes beside the file.
                try TestSupport.write([0], to: folder.appendingPathComponent("probe").path)
                let probe = try partials.folder.openFile("probe", .read)
                let attributes = Directory.setAttribute("user.probe", [1], onFile: probe)
                close(probe)
                partials.folder.remove("probe")
                #expect(names(in: folder).count == (attributes ? 1 : 2))
                #expect(names(in: folder).first?.hasSuffix(".part") == true)
                let record = try #require(partials.record(for: url))
                #expect(record.etag == server.etag(of: "/aB3dE5f.jpg"))
                #expect(partials.heldPartials().map(\.record.url) == [url])
                #expect(partials.heldPartials().first?.length == 50_000)
            }
        }
    }

    @Test func aPartialTakenOverGetsANewInodeAndItsOldWriterWritesWhereNoNameLeads() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let folder = dir.appendingPathComponent("partials")
            let partials = try PartialStore(directory: folder)
            let url = "https://i.test/big.jpg"
            let part = partials.partPath(for: url)
            try TestSupport.write(Array(repeating: 1, count: 1000), to: part)
            let record = PartialRecord(url: url, etag: "\"e\"", totalLength: 4000)
            try partials.save(record)
            // A worker stopped past its lease holds the partial open; another takes it over.
            let stale = open(part, O_WRONLY)
            try #require(stale >= 0)
            defer { close(stale) }
            try partials.detach(url)
            // Let go, the stopped worker writes on (other bytes: the server's file changed since).
            let later = [UInt8](repeating: 9, count: 3000)
            #expect(later.withUnsafeBytes { pwrite(stale, $0.baseAddress, $0.count, 500) } == 3000)
            // What the taker resumes from is what was there when it took over, record and all.
            #expect(partials.resumePoint(for: url)?.offset == 1000)
            #expect(partials.record(for: url) == record)
            #expect(try Data(contentsOf: URL(fileURLWithPath: part)) == Data(repeating: 1, count: 1000))
            #expect(names(in: folder).allSatisfy { !$0.hasPrefix(".mirror-tmp") }, "\(names(in: folder))")
            // Nothing held, nothing to do.
            try partials.detach("https://i.test/other.jpg")
        }
    }

    @Test func aRecordAnOlderBuildLeftBesideThePartIsStillRead() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let folder = dir.appendingPathComponent("partials")
            let url = "https://i.test/old.jpg"
            let part = try PartialStore(directory: folder).partPath(for: url)
            try TestSupport.write(Array(repeating: 7, count: 100), to: part)
            let json = String(part.dropLast(5)) + ".json"
            let record = PartialRecord(url: url, etag: "\"abc\"", lastModified: nil, totalLength: 1000)
            try JSONEncoder().encode(record).write(to: URL(fileURLWithPath: json))
            // The next run opens the store and finds what the older build left.
            let partials = try PartialStore(directory: folder)
            #expect(partials.record(for: url) == record)
            #expect(partials.resumePoint(for: url)?.offset == 100)
            // Saving again moves the record into the file and drops the old one.
            try partials.save(record)
            #expect(!FileManager.default.fileExists(atPath: json))
            #expect(partials.record(for: url) == record)
        }
    }

    @Test func aRecordIsStoredAsLinesAndTheJSONOfOlderBuildsIsStillRead() throws {
        let full = PartialRecord(url: "https://i.test/a.jpg", etag: "\"e1\"", lastModified: "Sun, 01 Nov 2026 10:00:00 GMT", totalLength: 1234)
        let bare = PartialRecord(url: "https://i.test/b.jpg")
        let empty = PartialRecord(url: "https://i.test/c.jpg", etag: "", lastModified: nil, totalLength: 0)
        for record in [full, bare, empty] {
            #expect(record.encoded.first != UInt8(ascii: "{"), "no JSON on the per-file path")
            #expect(PartialRecord(stored: record.encoded) == record)
        }
        #expect(String(decoding: full.encoded, as: UTF8.self)
            == "mirror-partial 2\nhttps://i.test/a.jpg\n=\"e1\"\n=Sun, 01 Nov 2026 10:00:00 GMT\n=1234\n")
        // What builds before this one wrote into the attribute.
        let json = try JSONEncoder().encode(full)
        #expect(PartialRecord(stored: Array(json)) == full)
        // Anything else is no record (the partial is then dropped, not resumed on a guess).
        for damaged in ["", "mirror-partial 2\n", "mirror-partial 2\nu\n=e\n-\n=12x\n", "mirror-partial 2\nu\n?e\n-\n-\n",
                        "mirror-partial 3\nu\n-\n-\n-\n", "mirror-partial 2\n\n-\n-\n-\n", "mirror-partial 2\nu\n-\n-\n=-5\n"] {
            #expect(PartialRecord(stored: Array(damaged.utf8)) == nil, "\(damaged.debugDescription)")
        }
    }

    @Test func aBodyWrittenWholeAtOnceRecordsNothingWhileItRunsALongerOneRecordsBeforeItsFirstByte() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/small.bin", size: 300_000)
            server.addMedia(path: "/long.bin", size: 3 << 20)
            try await TestSupport.withTemporaryDirectory { dir in
                let engine = TransferEngine()
                for (name, size) in [("small", 300_000), ("long", 3 << 20)] {
                    let path = dir.appendingPathComponent("\(name).part").path
                    // Recorded on the engine thread, checked here.
                    let lengthsAtRecord = Mutex<[Int64]>([])
                    var request = TransferRequest(url: server.baseURL + "/\(name).bin", destination: .file(path: path, offset: 0))
                    request.beforeFirstPartialWrite = { head in
                        var info = stat()
                        let length = head.status != 200 ? -2 : stat(path, &info) == 0 ? Int64(info.st_size) : -1
                        lengthsAtRecord.withLock { $0.append(length) }
                    }
                    let response = try await engine.perform(request)
                    #expect(response.fileLength == Int64(size))
                    // The small body reached the disk whole, in its one write: a kill before left
                    // nothing to resume. The long one is recorded once, before any of its bytes.
                    #expect(lengthsAtRecord.withLock { $0 } == (name == "small" ? [] : [0]), "\(name)")
                }
                // Cut short, a small body's bytes are kept, and recorded first.
                server.inject(.dropAfter(bytes: 100_000), path: "/small.bin")
                let path = dir.appendingPathComponent("cut.part").path
                let recorded = Mutex(0)
                var request = TransferRequest(url: server.baseURL + "/small.bin", destination: .file(path: path, offset: 0))
                request.beforeFirstPartialWrite = { _ in recorded.withLock { $0 += 1 } }
                let error = try await #require(throws: TransferError.self) { try await engine.perform(request) }
                #expect(error.response?.fileLength == 100_000)
                #expect(recorded.withLock { $0 } == 1)
            }
        }
    }

    @Test func aMirroredFileCarriesNoneOfTheBookkeeping() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let client = ImgurClient(apiBase: server.baseURL, clientID: "fixture", engine: TransferEngine(), logger: TestSupport.logger)
                let settings = TagRun.Settings(
                    crawl: TagCrawler.Options(tag: "cats"), urls: MediaURLBuilder(mediaBase: server.baseURL))
                let summary = try await TagRun(
                    directory: try MirrorDirectory(root: dir), client: client, engine: TransferEngine(),
                    settings: settings, logger: TestSupport.logger
                ).run()
                #expect(summary.isComplete)
                let full = try Directory.open(existing: dir.appendingPathComponent("full").path)
                #expect(full.contains("aB3dE5f.jpg"))
                #expect(full.attribute(PartialStore.attribute, of: "aB3dE5f.jpg", limit: 4096) == nil)
                // And the partials folder is empty: nothing was left behind by the commits.
                #expect(names(in: dir.appendingPathComponent(".mirror/partials")).isEmpty)
            }
        }
    }

    @Test func aRecordTooLongForAnAttributeGoesBesideTheFileAndAStaleAttributeNeverWins() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
            let url = "https://cdn.test/file.tgz"
            try TestSupport.write(Array(repeating: 1, count: 10), to: partials.partPath(for: url))
            // First a short record (an attribute), then the server's new version with a long one.
            try partials.save(PartialRecord(url: url, etag: "\"old\"", lastModified: nil, totalLength: 10))
            let new = PartialRecord(url: url, etag: "\"" + String(repeating: "n", count: 3000) + "\"", lastModified: nil, totalLength: 99)
            try partials.save(new)
            #expect(partials.record(for: url) == new)
            #expect(partials.resumePoint(for: url)?.record == new)
            // A long URL (a signed query string) is kept whole, beside the file.
            let signed = "https://cdn.test/file.tgz?signature=" + String(repeating: "x", count: 5000)
            try TestSupport.write(Array(repeating: 1, count: 10), to: partials.partPath(for: signed))
            let long = PartialRecord(url: signed, etag: "\"s\"", lastModified: nil, totalLength: 10)
            try partials.save(long)
            #expect(partials.record(for: signed) == long)
        }
    }

    @Test func aPartialThatSharesItsInodeWithAnotherNameIsNeverResumedOrWrittenThrough() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
            let url = "https://cdn.test/linked.jpg"
            let published = dir.appendingPathComponent("published.jpg").path
            try TestSupport.write(Array("the mirrored file".utf8), to: published)
            #expect(link(published, partials.partPath(for: url)) == 0)
            // Not even a record is written into it.
            #expect(throws: FileSystemError.self) {
                try partials.save(PartialRecord(url: url, etag: "\"e\"", lastModified: nil, totalLength: 100))
            }
            #expect(partials.resumePoint(for: url) == nil)
            #expect(!FileManager.default.fileExists(atPath: partials.partPath(for: url)))
            #expect(TestSupport.bytes(at: published) == Array("the mirrored file".utf8))
            // And a sink opened on such a file starts a file of its own.
            #expect(link(published, partials.partPath(for: url)) == 0)
            let sink = try FileSink(location: FileLocation(path: partials.partPath(for: url)), offset: 0)
            let bytes: [UInt8] = [9, 9, 9, 9]
            try bytes.withUnsafeBytes { try sink.append($0) }
            try sink.flush(isLast: true)
            #expect(TestSupport.bytes(at: published) == Array("the mirrored file".utf8))
        }
    }

    @Test func aMediaFolderThatIsAFileStopsTheRunNamingIt() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                // full/ is a file: no full-size file can be committed.
                try TestSupport.write(Array("not a folder".utf8), to: dir.appendingPathComponent("full").path)
                let client = ImgurClient(apiBase: server.baseURL, clientID: "fixture", engine: TransferEngine(), logger: TestSupport.logger)
                let settings = TagRun.Settings(
                    crawl: TagCrawler.Options(tag: "cats"), urls: MediaURLBuilder(mediaBase: server.baseURL),
                    concurrency: 6, retry: RetryPolicy(maxAttempts: 1))
                let summary = try await TagRun(
                    directory: try MirrorDirectory(root: dir), client: client, engine: TransferEngine(),
                    settings: settings, logger: TestSupport.logger
                ).run()
                // The folder that is not one stops the run, naming it.
                let stop = try #require(summary.stoppedBy?.mirrorError)
                #expect(stop == .fileSystem(FileSystemError(path: dir.appendingPathComponent("full").path, problem: .notADirectory)))
                let held = try PartialStore(directory: dir.appendingPathComponent(".mirror/partials")).heldPartials()
                #expect(held.allSatisfy { $0.record.etag != nil && $0.length > 0 })
                #expect(TestSupport.bytes(at: dir.appendingPathComponent("full").path) == Array("not a folder".utf8))
            }
        }
    }

    @Test func aFolderDeletedDuringARunIsMadeAgain() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try MirrorDirectory(root: dir)
            try TestSupport.write([1, 2, 3], to: dir.appendingPathComponent(".mirror/a.part").path)
            #expect(try directory.commit("a.part", from: directory.stateFolder, as: "preview/a.jpg", mode: .skipIfExists) == "preview/a.jpg")
            try FileManager.default.removeItem(at: dir.appendingPathComponent("preview"))
            try TestSupport.write([4, 5, 6], to: dir.appendingPathComponent(".mirror/b.part").path)
            #expect(try directory.commit("b.part", from: directory.stateFolder, as: "preview/b.jpg", mode: .skipIfExists) == "preview/b.jpg")
            #expect(TestSupport.bytes(at: dir.appendingPathComponent("preview/b.jpg").path) == [4, 5, 6])
        }
    }
}
