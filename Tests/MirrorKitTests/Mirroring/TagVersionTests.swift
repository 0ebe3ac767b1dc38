import FixtureServer
import Foundation
import Synchronization
import Testing
@testable import MirrorKit

@Suite("Versions of a tag's files: skip-if-exists asks nothing, new-file keeps history", .timeLimit(.minutes(2)))
struct TagVersionTests {
    let engine = TransferEngine()

    /// Hears the files a run says it saved.
    private final class SavedFiles: SavedFileHook {
        let paths = Mutex<[String]>([])
        func saved(_ file: SavedFile) async -> String? {
            paths.withLock { $0.append(file.relativePath) }
            return nil
        }
    }

    /// `hookOfTheSource`: the hook is the tag's own (as a config file's source sets it), not the run's.
    private func run(
        _ server: FixtureServer, into dir: URL, mode: DownloadMode, keepDeleted: Bool = false, hook: (any SavedFileHook)? = nil,
        hookOfTheSource: Bool = false
    ) async throws -> MirrorSummary {
        let client = ImgurClient(apiBase: server.baseURL, clientID: "fixture", engine: engine, logger: TestSupport.logger)
        var settings = TagRun.Settings(
            crawl: TagCrawler.Options(tag: "cats"),
            urls: MediaURLBuilder(mediaBase: server.baseURL, thumbnail: .medium),
            mode: mode, retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5)))
        settings.driver.keepDeleted = keepDeleted
        if hookOfTheSource {
            let source = TagSource(client: client, options: settings.crawl, urls: settings.urls, logger: TestSupport.logger)
            var own = settings.driver
            own.hook = hook
            let driver = try MirrorDriver(
                directory: try MirrorDirectory(root: dir), engine: engine, settings: settings.driver, perSource: [source.name: own],
                logger: TestSupport.logger)
            return await driver.run([source])[0].summary
        }
        settings.driver.hook = hook
        return try await TagRun(
            directory: try MirrorDirectory(root: dir), client: client, engine: engine, settings: settings,
            logger: TestSupport.logger
        ).run()
    }

    /// Each file of a complete mirror of the fixture tag: its path in the mirror and on the server.
    private func mirroredFiles(_ server: FixtureServer) -> [(local: String, remote: String)] {
        server.mediaPaths.compactMap { path in
            let name = String(path.dropFirst())
            guard let id = name.split(separator: ".").first.map(String.init) else { return nil }
            if TestSupport.catsImageIDs.contains(id) {
                // An animated GIF is served as uploaded too; the mirror fetches its MP4.
                guard !(name.hasSuffix(".gif") && server.mediaPaths.contains("/\(id).mp4")) else { return nil }
                return ("full/\(name)", path)
            }
            if name.hasSuffix("m.jpg"), TestSupport.catsImageIDs.contains(String(id.dropLast())) { return ("preview/\(name)", path) }
            return nil
        }
    }

    /// The image a mirrored file (`full/ID.ext`, `preview/IDm.ext`) is of.
    private func imageID(of relativePath: String) -> String {
        let name = relativePath.split(separator: "/")[1].split(separator: ".")[0]
        return relativePath.hasPrefix("preview/") ? String(name.dropLast()) : String(name)
    }

    private func mediaRequests(_ server: FixtureServer, after count: Int) -> [RecordedRequest] {
        server.requests.dropFirst(count).filter { !$0.path.hasPrefix("/3/") && !$0.path.hasPrefix("/_fixture") }
    }

    private func contents(of dir: URL) throws -> Set<String> {
        var names: Set<String> = []
        for folder in ["full", "preview"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent(folder).path) {
                names.insert("\(folder)/\(name)")
            }
        }
        return names
    }

    @Test func skipIfExistsRerunsAskForNoMediaBeforeOrAfterTheServersContentChanges() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .skipIfExists).isComplete)
                let files = mirroredFiles(server)
                let before = Dictionary(uniqueKeysWithValues: files.map { ($0.local, TestSupport.digest(ofFile: dir.appendingPathComponent($0.local).path)) })
                var seen = server.requests.count
                let unchanged = try await run(server, into: dir, mode: .skipIfExists)
                #expect(unchanged.downloaded == 0)
                #expect(mediaRequests(server, after: seen).isEmpty)
                for file in files { server.changeContent(path: file.remote) }
                seen = server.requests.count
                let changed = try await run(server, into: dir, mode: .skipIfExists)
                #expect(changed.downloaded == 0)
                #expect(mediaRequests(server, after: seen).isEmpty)
                for file in files {
                    #expect(TestSupport.digest(ofFile: dir.appendingPathComponent(file.local).path) == before[file.local])
                }
                #expect(try contents(of: dir) == Set(files.map(\.local)))
            }
        }
    }

    @Test func newFileRerunsOverUnchangedContentSaveNothingAndAskOnlyConditionally() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .newFile).isComplete)
                let files = mirroredFiles(server)
                let seen = server.requests.count
                let bytesBefore = files.map { server.bodyBytesSent(path: $0.remote) }
                let second = try await run(server, into: dir, mode: .newFile)
                #expect(second.isComplete)
                #expect(second.downloaded == 0)
                #expect(second.unchanged == files.count)
                // Every file asked after once, conditionally, and answered without a body (304).
                let asked = mediaRequests(server, after: seen)
                #expect(Set(asked.map(\.path)) == Set(files.map(\.remote)))
                #expect(asked.count == files.count)
                #expect(asked.allSatisfy { $0.header("If-None-Match") == server.etag(of: $0.path) })
                #expect(files.map { server.bodyBytesSent(path: $0.remote) } == bytesBefore)
                #expect(try contents(of: dir) == Set(files.map(\.local)))
            }
        }
    }

    @Test func afterAChangeNewFileHoldsTheOldAndTheNewVersionOfEveryFile() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .newFile).isComplete)
                let files = mirroredFiles(server)
                let old = files.map { server.content(of: $0.remote) }
                for file in files { server.changeContent(path: file.remote) }
                let second = try await run(server, into: dir, mode: .newFile)
                #expect(second.isComplete)
                #expect(second.downloaded == files.count)
                #expect(second.newVersions == files.count)
                for (file, oldBytes) in zip(files, old) {
                    #expect(TestSupport.digest(ofFile: dir.appendingPathComponent(file.local).path) == TestSupport.digest(oldBytes))
                    let next = MirrorDirectory.numbered(file.local, 1)
                    #expect(TestSupport.digest(ofFile: dir.appendingPathComponent(next).path)
                        == TestSupport.digest(server.content(of: file.remote)), "\(next)")
                }
                // The new version is what the next run asks about: unchanged now, nothing saved.
                let third = try await run(server, into: dir, mode: .newFile)
                #expect(third.downloaded == 0 && third.unchanged == files.count)
                #expect(try contents(of: dir).count == 2 * files.count)
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                let item = server.baseURL + files[0].remote
                #expect(try await state.versions(of: item).map(\.path) == [files[0].local, MirrorDirectory.numbered(files[0].local, 1)])
            }
        }
    }

    /// The newest version deleted by hand, the server back at an older one's bytes: that version
    /// is the current one again, not saved a second time; the deleted one's bytes, were they
    /// served, would come back under its own name.
    @Test func withTheNewestVersionDeletedAnOlderVersionsBytesAreNotSavedTwice() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .newFile).isComplete)
                let file = try #require(mirroredFiles(server).first { $0.local.hasPrefix("full/") })
                let first = try #require(server.content(of: file.remote))
                server.changeContent(path: file.remote)
                let second = try #require(server.content(of: file.remote))
                #expect(try await run(server, into: dir, mode: .newFile).newVersions == 1)
                let newest = MirrorDirectory.numbered(file.local, 1)
                #expect(TestSupport.digest(ofFile: dir.appendingPathComponent(newest).path) == TestSupport.digest(second))
                let before = try contents(of: dir)

                // Deleted by hand; the server serves the first version's bytes again.
                try FileManager.default.removeItem(at: dir.appendingPathComponent(newest))
                server.revertContent(path: file.remote)
                let reverted = try await run(server, into: dir, mode: .newFile)
                #expect(reverted.isComplete)
                #expect(reverted.downloaded == 0, "\(reverted.line)")
                #expect(try contents(of: dir) == before.subtracting([newest]))
                #expect(TestSupport.digest(ofFile: dir.appendingPathComponent(file.local).path) == TestSupport.digest(first))
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                #expect(try await state.latestFile(of: server.baseURL + file.remote)?.path == file.local)

                // And then the deleted version's bytes: restored under its own name.
                server.changeContent(path: file.remote)
                let restored = try await run(server, into: dir, mode: .newFile)
                #expect(restored.downloaded == 1, "\(restored.line)")
                #expect(try contents(of: dir) == before)
                #expect(TestSupport.digest(ofFile: dir.appendingPathComponent(newest).path) == TestSupport.digest(second))
            }
        }
    }

    /// Kept deleted, an older version whose bytes are served again stays deleted and does not
    /// become the current one: the item is still asked after, and a later version is saved.
    @Test func keptDeletedAnOlderVersionServedAgainLeavesTheNewestCurrent() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .newFile).isComplete)
                let file = try #require(mirroredFiles(server).first { $0.local.hasPrefix("full/") })
                server.changeContent(path: file.remote)
                #expect(try await run(server, into: dir, mode: .newFile).newVersions == 1)
                let newest = MirrorDirectory.numbered(file.local, 1)
                try FileManager.default.removeItem(at: dir.appendingPathComponent(file.local))
                server.revertContent(path: file.remote)
                let reverted = try await run(server, into: dir, mode: .newFile, keepDeleted: true)
                #expect(reverted.downloaded == 0, "\(reverted.line)")
                #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent(file.local).path))
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                #expect(try await state.latestFile(of: server.baseURL + file.remote)?.path == newest)
                // A third version: asked after, and saved.
                server.changeContent(path: file.remote)
                server.changeContent(path: file.remote)
                let third = try await run(server, into: dir, mode: .newFile, keepDeleted: true)
                #expect(third.newVersions == 1, "\(third.line)")
            }
        }
    }

    @Test func aServerThatIgnoresConditionsOrRetagsTheSameBytesGetsNoSecondCopy() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .newFile).isComplete)
                let files = mirroredFiles(server)
                // A 200 with the ETag stored, and a 200 with a new ETag on the same bytes.
                server.inject(.unconditional(etag: nil), path: files[0].remote)
                server.inject(.unconditional(etag: "\"retagged-by-a-cache\""), path: files[1].remote)
                let second = try await run(server, into: dir, mode: .newFile)
                #expect(second.isComplete)
                #expect(second.downloaded == 0)
                #expect(second.unchanged == files.count)
                #expect(server.bodyBytesSent(path: files[1].remote) > 0)
                #expect(try contents(of: dir) == Set(files.map(\.local)))
            }
        }
    }

    @Test func aFileGoneUpstreamIsKeptAndNotAskedForAgain() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .newFile).isComplete)
                let gone = mirroredFiles(server)[0]
                let before = TestSupport.digest(ofFile: dir.appendingPathComponent(gone.local).path)
                server.inject(.respond(status: 404, body: "gone"), path: gone.remote)
                let second = try await run(server, into: dir, mode: .newFile)
                #expect(second.failures.isEmpty)
                #expect(second.removed == [server.baseURL + gone.remote])
                #expect(TestSupport.digest(ofFile: dir.appendingPathComponent(gone.local).path) == before)
                let asked = server.requestCount(path: gone.remote)
                _ = try await run(server, into: dir, mode: .newFile)
                #expect(server.requestCount(path: gone.remote) == asked)
            }
        }
    }

    @Test func aMirrorFromBeforeVersionsIsTakenOverWithoutASecondCopy() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .skipIfExists).isComplete)
                // Back to a version-2 database: the URL → path map, nothing more.
                let path = dir.appendingPathComponent(".mirror/state.sqlite3").path
                let db = try SQLiteConnection.open(path)
                try db.script("""
                    CREATE TABLE mirrored (url TEXT PRIMARY KEY, path TEXT NOT NULL, bytes INTEGER NOT NULL, mirrored_at TEXT NOT NULL);
                    INSERT INTO mirrored SELECT url, path, bytes, mirrored_at FROM files;
                    DROP TABLE files; DROP TABLE runs; ALTER TABLE albums DROP COLUMN context; PRAGMA user_version = 2;
                    """)
                let files = mirroredFiles(server)
                let seen = server.requests.count
                let second = try await run(server, into: dir, mode: .newFile)
                #expect(second.isComplete)
                #expect(second.downloaded == 0 && second.unchanged == files.count)
                // Asked by date (the old records kept no ETag), answered 304.
                #expect(mediaRequests(server, after: seen).allSatisfy { $0.header("If-Modified-Since") != nil || $0.header("If-None-Match") != nil })
                #expect(try contents(of: dir) == Set(files.map(\.local)))
            }
        }
    }

    /// The record the file carries is the compact one this build's commit gives a small file, or
    /// the full one older builds gave every file.
    @Test(arguments: [true, false])
    func aFileNamedButNotRecordedBeforeAKillIsRecordedNotSavedTwice(compactRecord: Bool) async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .newFile).isComplete)
                let file = mirroredFiles(server)[0]
                let url = server.baseURL + file.remote
                // As a kill between the rename and the record leaves it: the file under its name,
                // still carrying its download's record, and no row for it.
                // The image is still queued, as it is until both its files are recorded.
                let id = imageID(of: file.local)
                let db = try SQLiteConnection.open(dir.appendingPathComponent(".mirror/state.sqlite3").path)
                try db.execute("DELETE FROM files WHERE path = ?1", [.text(file.local)])
                try db.execute("UPDATE images SET done = 0 WHERE id = ?1", [.text(id)])
                let partials = try MirrorDirectory(root: dir).partialStore()
                let bytes = try #require(server.content(of: file.remote))
                try TestSupport.write(bytes, to: partials.partPath(for: url))
                let record = PartialRecord(
                    url: url, etag: server.etag(of: file.remote), lastModified: server.lastModified(of: file.remote),
                    totalLength: Int64(bytes.count))
                if compactRecord {
                    let fd = open(partials.partPath(for: url), O_WRONLY)
                    try #require(fd >= 0)
                    #expect(PartialStore.attachForCommit(record, toFile: fd))
                    close(fd)
                    let stored = try #require(partials.folder.attribute(PartialStore.attribute, of: try partials.partName(for: url), limit: 4096))
                    #expect(PartialRecord(stored: stored) == nil, "the compact form")
                } else {
                    try partials.save(record)
                }
                #expect(rename(partials.partPath(for: url), dir.appendingPathComponent(file.local).path) == 0)
                let saved = SavedFiles()
                let second = try await run(server, into: dir, mode: .newFile, hook: saved)
                #expect(second.isComplete)
                #expect(second.downloaded == 0)
                try expectFinishedAsACommitWould(file.local, in: dir, servedAs: file.remote, by: server, hookHeard: saved)
                #expect(try contents(of: dir) == Set(mirroredFiles(server).map(\.local)))
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                let recorded = try await state.latestFile(of: url)
                #expect(recorded?.path == file.local)
                // The validators it carried, as the server sent them: the next new-file run asks by them.
                #expect(recorded?.etag == server.etag(of: file.remote) && recorded?.etag != nil)
                #expect(recorded?.lastModified == server.lastModified(of: file.remote) && recorded?.lastModified != nil)
            }
        }
    }

    /// What the commit does after the row, done for a file a killed run left unrecorded: the
    /// server's date on it, and the hook told of it, once.
    private func expectFinishedAsACommitWould(
        _ relativePath: String, in dir: URL, servedAs remote: String, by server: FixtureServer, hookHeard saved: SavedFiles
    ) throws {
        #expect(saved.paths.withLock { $0 } == [relativePath])
        try expectDated(relativePath, in: dir, as: server.lastModified(of: remote))
    }

    /// The file carries `served`, the date the server gave it.
    private func expectDated(_ relativePath: String, in dir: URL, as served: String?) throws {
        let modified = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(relativePath).path)[.modificationDate] as? Date
        let date = try #require(served.flatMap { HTTPDate.parse($0) })
        #expect(modified == date, "\(relativePath)")
    }

    /// The server went back to an older version's bytes (that version is the newest again), then
    /// changed: the next version is named after the file, `name(2).ext`, not after the version
    /// that happened to be recorded first since (`name(1)(1).ext`).
    @Test func aVersionAfterTheServerWentBackIsNamedAfterTheFile() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .newFile).isComplete)
                let file = mirroredFiles(server)[0]
                let url = server.baseURL + file.remote
                server.changeContent(path: file.remote)
                #expect(try await run(server, into: dir, mode: .newFile).newVersions == 1)
                server.revertContent(path: file.remote)
                #expect(try await run(server, into: dir, mode: .newFile).downloaded == 0)
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                #expect(try await state.latestFile(of: url)?.path == file.local, "the older version is the newest again")
                server.changeContent(path: file.remote)
                server.changeContent(path: file.remote)
                #expect(try await run(server, into: dir, mode: .newFile).newVersions == 1)
                let third = MirrorDirectory.numbered(file.local, 2)
                let newest = try await state.latestFile(of: url)?.path
                #expect(newest == third, "\(newest ?? "none")")
                #expect(try contents(of: dir).filter { $0.hasPrefix(String(file.local.dropLast(4))) }.count == 3)
            }
        }
    }

    /// Puts `bytes` at `relativePath` carrying the record a commit gives them before their row is
    /// written: what a kill in between leaves.
    private func plantUnrecorded(_ bytes: [UInt8], at relativePath: String, in dir: URL, url: String, etag: String?, lastModified: String?) throws {
        let path = dir.appendingPathComponent(relativePath).path
        try TestSupport.write(bytes, to: path)
        let record = PartialRecord(url: url, etag: etag, lastModified: lastModified, totalLength: Int64(bytes.count))
        let fd = open(path, O_WRONLY)
        try #require(fd >= 0)
        #expect(PartialStore.attachForCommit(record, toFile: fd))
        close(fd)
    }

    /// A new version saved beside the one held and killed before its row: the next new-file run
    /// records it and asks by its validators, rather than fetching it again and saving it a
    /// second time under the next free name.
    /// - beside: it took `name(1).ext`.
    /// - below: the user had deleted `name.ext` (an older version), and it took that name back.
    /// - freedBelow: it took `name(2).ext`, and the user deleted `name.ext` after the kill.
    /// - newestDeleted: it took `name(2).ext`, and the user deleted the newest, `name(1).ext`.
    /// - twoLeft: two runs were killed in turn (builds before this one did not adopt):
    ///   `name(1).ext` and `name(2).ext`, both recorded now, the second as the newest.
    /// - newestNameReused: the user deleted the newest, `name(1).ext`, and it took that name.
    /// - foreignGap: it took `name(2).ext` past a file of the user's at `name(1).ext`, deleted
    ///   after the kill.
    /// - olderNewest: the newest is `name.ext` again (the server went back to its bytes) with two
    ///   versions above it; it took `name(3).ext`, and the user deleted the other three after.
    /// - farNewest: the newest is `name(99999999).ext` (a name the file once had of its own); it
    ///   took `name.ext`, free. The search does not go up to the newest one name at a time.
    @Test(arguments: ["beside", "below", "freedBelow", "newestDeleted", "twoLeft", "newestNameReused", "foreignGap", "olderNewest", "farNewest"])
    func aNewVersionNamedButNotRecordedBeforeAKillIsRecordedNotSavedTwice(layout: String) async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                #expect(try await run(server, into: dir, mode: .newFile).isComplete)
                let file = mirroredFiles(server)[0]
                let url = server.baseURL + file.remote
                let first = file.local
                let (second, third) = (MirrorDirectory.numbered(first, 1), MirrorDirectory.numbered(first, 2))
                var files = Set(mirroredFiles(server).map(\.local))
                var servedDates: [String: String?] = [:]
                func plantNextVersion(at path: String) throws {
                    server.changeContent(path: file.remote)
                    servedDates[path] = server.lastModified(of: file.remote)
                    try plantUnrecorded(
                        try #require(server.content(of: file.remote)), at: path, in: dir, url: url,
                        etag: server.etag(of: file.remote), lastModified: server.lastModified(of: file.remote))
                    files.insert(path)
                }
                func deleteByHand(_ path: String) throws {
                    try FileManager.default.removeItem(at: dir.appendingPathComponent(path))
                    files.remove(path)
                }
                func saveNextVersion(at path: String? = nil) async throws {
                    server.changeContent(path: file.remote)
                    #expect(try await run(server, into: dir, mode: .newFile).newVersions == 1)
                    files.insert(path ?? second)
                }
                let adopted: [String]
                switch layout {
                case "beside":
                    try plantNextVersion(at: second)
                    adopted = [second]
                case "below":
                    try await saveNextVersion()
                    try deleteByHand(first)
                    try plantNextVersion(at: first)
                    adopted = [first]
                case "freedBelow":
                    try await saveNextVersion()
                    try plantNextVersion(at: third)
                    try deleteByHand(first)
                    adopted = [third]
                case "newestDeleted":
                    try await saveNextVersion()
                    try plantNextVersion(at: third)
                    try deleteByHand(second)
                    adopted = [third]
                case "newestNameReused":
                    try await saveNextVersion()
                    try deleteByHand(second)
                    try plantNextVersion(at: second)
                    adopted = [second]
                case "foreignGap":
                    try TestSupport.write(Array("the user's own".utf8), to: dir.appendingPathComponent(second).path)
                    try plantNextVersion(at: third)
                    try FileManager.default.removeItem(at: dir.appendingPathComponent(second))
                    adopted = [third]
                case "olderNewest":
                    try await saveNextVersion()
                    try await saveNextVersion(at: third)
                    // What taking an older version's bytes back does: its row made the newest. The
                    // image listed again (not done): the listing's job, where the other layouts
                    // have the sweep's.
                    let id = imageID(of: first)
                    try SQLiteConnection.open(dir.appendingPathComponent(".mirror/state.sqlite3").path).script("""
                        CREATE TEMP TABLE again AS SELECT * FROM files WHERE path = '\(first)';
                        DELETE FROM files WHERE path = '\(first)';
                        INSERT INTO files SELECT * FROM again;
                        UPDATE images SET done = 0 WHERE id = '\(id)';
                        """)
                    let fourth = MirrorDirectory.numbered(first, 3)
                    try plantNextVersion(at: fourth)
                    for path in [first, second, third] { try deleteByHand(path) }
                    adopted = [fourth]
                case "farNewest":
                    let far = MirrorDirectory.numbered(first, 99_999_999)
                    try FileManager.default.moveItem(at: dir.appendingPathComponent(first), to: dir.appendingPathComponent(far))
                    files.remove(first)
                    files.insert(far)
                    // The image listed again: its job has the file's own name (a sweep's would have
                    // the only name the item has, the far one).
                    let id = imageID(of: first)
                    try SQLiteConnection.open(dir.appendingPathComponent(".mirror/state.sqlite3").path).script("""
                        UPDATE files SET path = '\(far)' WHERE path = '\(first)';
                        UPDATE images SET done = 0 WHERE id = '\(id)';
                        """)
                    try plantNextVersion(at: first)
                    adopted = [first]
                default:
                    try plantNextVersion(at: second)
                    try plantNextVersion(at: third)
                    adopted = [second, third]
                }
                let newest = try #require(adopted.last)
                let requestsBefore = server.requests.count

                let saved = SavedFiles()
                let next = try await run(server, into: dir, mode: .newFile, hook: saved)
                #expect(next.isComplete)
                #expect(next.downloaded == 0)
                #expect(saved.paths.withLock { $0 } == adopted, "the hook hears of each once")
                for path in adopted {
                    try expectDated(path, in: dir, as: servedDates[path] ?? nil)
                    #expect(try MirrorDirectory(root: dir).occupant(of: path)?.record == nil, "its record is taken off once its row is written")
                }
                #expect(try contents(of: dir) == files)
                // Asked by the newest version's validators: the server's file is that one.
                let asked = mediaRequests(server, after: requestsBefore).filter { $0.path == file.remote }
                #expect(asked.count == 1)
                #expect(asked.first?.header("If-None-Match") == server.etag(of: file.remote))
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                let latest = try await state.latestFile(of: url)
                #expect(latest?.path == newest)
                #expect(latest?.etag == server.etag(of: file.remote))
                #expect(Set(try await state.versions(of: url).map(\.path)).isSuperset(of: adopted))
            }
        }
    }

    /// A new-file mirror of the fixture tag whose first file changed once (its older version kept
    /// beside the newest), with that older version's record put back on: what a kill after its
    /// row, before the record came off, leaves. Returns the file, its URL and its older date.
    private func mirrorWithARecordedVersionStillCarryingItsRecord(
        _ server: FixtureServer, into dir: URL
    ) async throws -> (file: (local: String, remote: String), url: String, oldDate: String?) {
        #expect(try await run(server, into: dir, mode: .newFile).isComplete)
        let file = mirroredFiles(server)[0]
        let url = server.baseURL + file.remote
        let oldBytes = try #require(server.content(of: file.remote))
        let (oldETag, oldDate) = (server.etag(of: file.remote), server.lastModified(of: file.remote))
        server.changeContent(path: file.remote)
        #expect(try await run(server, into: dir, mode: .newFile).newVersions == 1)
        try plantUnrecorded(oldBytes, at: file.local, in: dir, url: url, etag: oldETag, lastModified: oldDate)
        return (file, url, oldDate)
    }

    /// A recorded version whose record cannot be taken off (a file this user may not change;
    /// here made immutable) has its commit finished only once the record is off: the hook is not
    /// told of it at every run.
    @Test(.enabled(if: ImmutableFiles.isPossible, "needs chattr +i: root with CAP_LINUX_IMMUTABLE, on a file system that keeps the flag"))
    func aRecordThatCannotBeTakenOffDoesNotHaveTheHookToldAtEveryRun() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let (file, _, _) = try await mirrorWithARecordedVersionStillCarryingItsRecord(server, into: dir)
                let path = dir.appendingPathComponent(file.local).path
                try ImmutableFiles.set(true, path)
                defer { try? ImmutableFiles.set(false, path) }
                let saved = SavedFiles()
                for _ in 0..<2 {
                    #expect(try await run(server, into: dir, mode: .newFile, hook: saved).isComplete)
                }
                #expect(saved.paths.withLock { $0 }.isEmpty)
                #expect(try MirrorDirectory(root: dir).occupant(of: file.local)?.record != nil, "the record stays")
            }
        }
    }

    /// A recorded version that still carries its record (a kill came after its row, before the
    /// record was taken off) is not adopted again: the newest stays the newest and the record
    /// goes. Its commit is finished: the hook, which the commit tells last, hears of it once, and
    /// it carries the server's date. Also when a later answer changed the row's validators (the
    /// same bytes re-tagged): the MD5 tells it is the recorded file.
    @Test(arguments: [false, true])
    func aRecordedVersionStillCarryingItsRecordIsNotTakenForANewOne(rowChangedSince: Bool) async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                // The older version, recorded, with its record put back on, dated as a build
                // before the date went on with the name left it.
                let (file, url, oldDate) = try await mirrorWithARecordedVersionStillCarryingItsRecord(server, into: dir)
                try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: dir.appendingPathComponent(file.local).path)
                if rowChangedSince {
                    try SQLiteConnection.open(dir.appendingPathComponent(".mirror/state.sqlite3").path).execute(
                        "UPDATE files SET etag = '\"re-tagged\"', last_modified = NULL WHERE path = ?1", [.text(file.local)])
                }
                let requestsBefore = server.requests.count

                let saved = SavedFiles()
                let next = try await run(server, into: dir, mode: .newFile, hook: saved)
                #expect(next.isComplete && next.downloaded == 0 && next.unchanged > 0)
                #expect(saved.paths.withLock { $0 } == [file.local], "told once, as its commit would have")
                try expectDated(file.local, in: dir, as: oldDate)
                let asked = mediaRequests(server, after: requestsBefore).filter { $0.path == file.remote }
                #expect(asked.first?.header("If-None-Match") == server.etag(of: file.remote), "asked by the newest")
                let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
                #expect(try await state.latestFile(of: url)?.path == MirrorDirectory.numbered(file.local, 1))
                #expect(try MirrorDirectory(root: dir).occupant(of: file.local)?.record == nil, "the stale record is gone")
            }
        }
    }
    /// A skip-if-exists run killed after a file's row, before the rest of its commit (its record
    /// off, the hook told): the next run asks the state, finds the row, and passed the file by for
    /// good. The mark a run leaves while it goes (the last row when it began) has the next run
    /// finish the commits of the files recorded past it: the hook hears of the file once, its
    /// record goes, it carries the server's date. A run that ended leaves no mark.
    /// The file is finished by its source's runner: the hook a config file gave that source.
    @Test(arguments: [false, true])
    func aSkipIfExistsRunKilledAfterARowHasTheNextOneFinishTheCommit(hookOfTheSource: Bool) async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let mark = dir.appendingPathComponent(".mirror/\(JobRunner.runMark)").path
                #expect(try await run(server, into: dir, mode: .skipIfExists).isComplete)
                #expect(!FileManager.default.fileExists(atPath: mark), "a run that ended leaves no mark")
                let file = mirroredFiles(server)[0]
                let url = server.baseURL + file.remote
                let database = try SQLiteConnection.open(dir.appendingPathComponent(".mirror/state.sqlite3").path)
                let row = try #require(try database.rows("SELECT rowid AS row FROM files WHERE path = ?1", [.text(file.local)]).first?.integer("row"))
                // As the kill left it: the mark of a run that began before the file's row, the
                // record still on the file, dated when it was downloaded.
                try TestSupport.write(Array("\(row - 1)\n".utf8), to: mark)
                let bytes = try #require(server.content(of: file.remote))
                let fd = open(dir.appendingPathComponent(file.local).path, O_WRONLY)
                try #require(fd >= 0)
                let record = PartialRecord(
                    url: url, etag: server.etag(of: file.remote), lastModified: server.lastModified(of: file.remote),
                    totalLength: Int64(bytes.count))
                #expect(PartialStore.attachForCommit(record, toFile: fd))
                close(fd)
                try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: dir.appendingPathComponent(file.local).path)
                let saved = SavedFiles()
                let next = try await run(server, into: dir, mode: .skipIfExists, hook: saved, hookOfTheSource: hookOfTheSource)
                #expect(next.isComplete && next.downloaded == 0)
                #expect(saved.paths.withLock { $0 } == [file.local], "told once, as its commit would have")
                try expectDated(file.local, in: dir, as: server.lastModified(of: file.remote))
                #expect(try MirrorDirectory(root: dir).occupant(of: file.local)?.record == nil, "the record is off")
                // Finished once: the run after it has nothing to finish.
                let again = SavedFiles()
                #expect(try await run(server, into: dir, mode: .skipIfExists, hook: again, hookOfTheSource: hookOfTheSource).isComplete)
                #expect(again.paths.withLock { $0 }.isEmpty)
                #expect(!FileManager.default.fileExists(atPath: mark))
            }
        }
    }
}
