import CMirrorSystem
import Foundation
import Testing
@testable import MirrorKit

@Suite("Partial downloads on disk: one file each, validators in its attributes")
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
                #expect(names(in: folder).count == 1)
                #expect(names(in: folder).first?.hasSuffix(".part") == true)
                let record = try #require(partials.record(for: url))
                #expect(record.etag == server.etag(of: "/aB3dE5f.jpg"))
                #expect(partials.heldPartials().map(\.record.url) == [url])
                #expect(partials.heldPartials().first?.length == 50_000)
            }
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

    @Test func aMirroredFileCarriesNoneOfTheBookkeeping() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let client = ImgurClient(apiBase: server.baseURL, clientID: "fixture", engine: TransferEngine(), logger: TestSupport.logger)
                let settings = TagMirror.Settings(
                    crawl: TagCrawler.Options(tag: "cats"), urls: MediaURLBuilder(mediaBase: server.baseURL))
                let summary = try await TagMirror(
                    directory: try MirrorDirectory(root: dir), client: client, engine: TransferEngine(),
                    settings: settings, logger: TestSupport.logger
                ).run()
                #expect(summary.isComplete)
                let file = dir.appendingPathComponent("full/aB3dE5f.jpg").path
                var buffer = [UInt8](repeating: 0, count: 512)
                let size = buffer.withUnsafeMutableBytes { mirror_getxattr(file, PartialStore.attribute, $0.baseAddress, $0.count) }
                #expect(size < 0)
                // And the partials folder is empty: nothing was left behind by the commits.
                #expect(names(in: dir.appendingPathComponent(".mirror/partials")).isEmpty)
            }
        }
    }
}
