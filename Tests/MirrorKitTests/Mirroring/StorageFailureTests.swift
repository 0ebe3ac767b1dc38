import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// A full disk, a database that takes no writes, an OpenSSL that refuses MD5: the run stops with
/// a clear error and status 73, and nothing already mirrored is lost or corrupted.
@Suite("Storage failures stop the run and keep what is there", .timeLimit(.minutes(3)))
struct StorageFailureTests {
    private func tagArguments(_ server: FixtureServer, out: String, idFile: String) -> [String] {
        MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + ["--retries", "2"]
    }

    /// A new-file mirror of the fixture podcast into `dir`, one attempt per file.
    private func podcastMirror(_ server: FixtureServer, into dir: URL) throws -> FeedRun {
        let settings = FeedRun.Settings(
            feedURL: "\(server.baseURL)/feeds/podcast.rss", mode: .newFile, retry: RetryPolicy(maxAttempts: 1))
        return try FeedRun(directory: try MirrorDirectory(root: dir), engine: TransferEngine(), settings: settings, logger: TestSupport.logger)
    }

    @Test(.enabled(if: Mount.isPossible, "needs root allowed to mount a file system (CAP_SYS_ADMIN, no confinement against it)"))
    func aFullDiskStopsTheRunWith73AndEveryFileUnderAFinalNameIsWhole() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out")
                try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
                // Room for the thumbnails and the small images, not for the 5.8 MB one.
                try #require(Mount.tmpfs(at: out.path, size: "3m"), "cannot mount a tmpfs here")
                defer { Mount.unmount(out.path) }
                let run = try await MirrorProcess.run(tagArguments(server, out: out.path, idFile: idFile))
                #expect(run.status == 73, "\(run.stderr)")
                // Whichever write meets the full disk first says so: a file's, or the database's.
                #expect(run.stderr.contains("No space left on device") || run.stderr.contains("database or disk is full"), "\(run.stderr)")
                var checked = 0
                for folder in ["full", "preview"] {
                    let path = out.appendingPathComponent(folder).path
                    for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                        #expect(TestSupport.digest(ofFile: path + "/" + name) == TestSupport.digest(server.content(of: "/" + name)), "\(name)")
                        checked += 1
                    }
                }
                #expect(checked > 0)
            }
        }
    }

    @Test func aDatabaseThatTakesNoWritesStopsTheRunAndTheNextNewFileRunMakesNoSecondCopy() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let first = try podcastMirror(server, into: dir)
                // Another process holds the write lock for longer than the busy timeout.
                let blocker = try SQLiteConnection.open(dir.appendingPathComponent(".mirror/state.sqlite3").path)
                try blocker.execute("BEGIN IMMEDIATE")
                let stopped = await first.run()
                let stop = try #require(stopped.stoppedBy?.mirrorError)
                guard case .stateDatabase = stop else {
                    Issue.record("stopped by \(stop), not the database")
                    return
                }
                try blocker.execute("ROLLBACK")
                let second = try podcastMirror(server, into: dir)
                let summary = await second.run()
                #expect(summary.isComplete)
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("enclosures").path).sorted()
                #expect(names == ["episode-1.mp3", "episode-2.mp3"])
            }
        }
    }

    @Test func aDatabaseThatCannotBeReadStopsTheRunBeforeAnyDownload() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let mirror = try podcastMirror(server, into: dir)
                #expect(await mirror.run().isComplete)
                let media = ["/files/episode-1.mp3", "/files/episode-2.mp3"]
                let fetched = media.map(server.requestCount(path:))
                // The record of what is mirrored cannot be read (a damaged database, another
                // tool's hand on it). Taken for "nothing mirrored yet", a failed lookup fetched
                // every file again.
                let other = try SQLiteConnection.open(dir.appendingPathComponent(".mirror/state.sqlite3").path)
                try other.execute("ALTER TABLE files RENAME TO files_elsewhere")
                let stopped = await mirror.run()
                try other.execute("ALTER TABLE files_elsewhere RENAME TO files")
                guard case .stateDatabase? = stopped.stoppedBy?.mirrorError else {
                    Issue.record("stopped by \(String(describing: stopped.stoppedBy)), not the database")
                    return
                }
                #expect(media.map(server.requestCount(path:)) == fetched)
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("enclosures").path).sorted()
                #expect(names == ["episode-1.mp3", "episode-2.mp3"])
            }
        }
    }

    @Test func aFailedWriteOfWhichImagesAreDoneStopsTheRunWith73() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out")
                let database = out.appendingPathComponent(".mirror/state.sqlite3").path
                _ = try StateDatabase(directory: try MirrorDirectory(root: out))
                // The one write a run makes after its files are in place, refused as a full disk would.
                try SQLiteConnection.open(database).execute(
                    "CREATE TRIGGER refuse_done BEFORE UPDATE OF done ON images BEGIN SELECT RAISE(ABORT, 'no room for the done marks'); END")
                let refused = try await MirrorProcess.run(tagArguments(server, out: out.path, idFile: idFile))
                #expect(refused.status == 73, "\(refused.stderr)")
                #expect(refused.stderr.components(separatedBy: "no room for the done marks").count == 2, "said once: \(refused.stderr)")
                try SQLiteConnection.open(database).execute("DROP TRIGGER refuse_done")
                let next = try await MirrorProcess.run(tagArguments(server, out: out.path, idFile: idFile))
                #expect(next.status == 0, "\(next.stderr)")
                let pending = try SQLiteConnection.open(database).rows("SELECT count(*) FROM images WHERE done = 0")
                #expect(pending.first?.first?.integer == 0)
            }
        }
    }

    private func stateDatabase(in dir: URL) -> String {
        dir.appendingPathComponent(".mirror/state.sqlite3").path
    }

    /// Mirrors the podcast into `dir` with the state database refusing the first episode's row
    /// (trigger `refuse_files`): the run must stop on the database with the file unnamed. The
    /// partials it left, or nil (recorded as an issue) when it stopped otherwise.
    private func mirrorRefusingTheFirstEpisodesRow(_ server: FixtureServer, into dir: URL) async throws -> PartialStore? {
        _ = try StateDatabase(directory: try MirrorDirectory(root: dir))
        try SQLiteConnection.open(stateDatabase(in: dir)).execute(
            "CREATE TRIGGER refuse_files BEFORE INSERT ON files WHEN NEW.path = 'enclosures/episode-1.mp3' "
                + "BEGIN SELECT RAISE(ABORT, 'no room for the file rows'); END")
        let stopped = try await podcastMirror(server, into: dir).run()
        guard case .stateDatabase? = stopped.stoppedBy?.mirrorError else {
            Issue.record("stopped by \(String(describing: stopped.stoppedBy)), not the database")
            return nil
        }
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("enclosures/episode-1.mp3").path))
        return try MirrorDirectory(root: dir).partialStore()
    }

    /// A file whose row cannot be written goes back to being a partial, whole, carrying a
    /// partial's full record (its commit put on the compact one of a small file, and a body
    /// written at once records none while it runs): the next run finishes it with a ranged
    /// request that brings no byte again.
    @Test func aFileWhoseRowIsRefusedIsFinishedByTheNextRunWithoutItsBytesAgain() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                guard let partials = try await mirrorRefusingTheFirstEpisodesRow(server, into: dir) else { return }
                let partial = try #require(partials.heldPartials().first { $0.record.url.contains("/episode-1.mp3") })
                let path = String(partial.record.url.dropFirst(server.baseURL.count).prefix { $0 != "?" })
                let size = Int64(try #require(server.content(of: path)).count)
                #expect(size <= CommitRecord.compactUpTo, "a file its commit gives the compact record")
                #expect(partial.length == size, "went back whole")
                #expect(partial.record.totalLength == size)
                #expect(partial.record.etag == server.etag(of: path))
                // Dated as worked on, not with the server's date it got with its name: the
                // partials' budget drops the oldest first.
                let served = try #require(server.lastModified(of: path).flatMap { HTTPDate.parse($0) })
                #expect(served < Date().addingTimeInterval(-86_400), "a date no download could be mistaken for")
                let modified = try FileManager.default.attributesOfItem(atPath: partials.partPath(for: partial.record.url))[.modificationDate] as? Date
                #expect(modified.map { $0 > Date().addingTimeInterval(-3_600) } == true, "\(String(describing: modified))")
                let sent = server.bodyBytesSent(path: path)
                try SQLiteConnection.open(stateDatabase(in: dir)).execute("DROP TRIGGER refuse_files")
                #expect(try await podcastMirror(server, into: dir).run().isComplete)
                #expect(server.bodyBytesSent(path: path) == sent, "not sent again")
                #expect(server.requests.last { $0.path == path }?.header("Range") == "bytes=\(size)-")
                let names = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("enclosures").path).sorted()
                #expect(names == ["episode-1.mp3", "episode-2.mp3"])
            }
        }
    }

    /// As above, with validators too long for an extended attribute: the file goes back to
    /// being a partial with its record in the file beside it, and the next run finds it there.
    @Test func aFileWhoseRowIsRefusedKeepsALongRecordBesideIt() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let path = "/files/episode-1.mp3"
                let etag = "\"" + String(repeating: "e", count: 3_000) + "\""
                let body = String(repeating: "a", count: 1_000)
                let answer = Fault.respond(status: 200, headers: ["ETag": etag, "Content-Type": "audio/mpeg"], body: body)
                server.inject(answer, path: path)
                guard let partials = try await mirrorRefusingTheFirstEpisodesRow(server, into: dir) else { return }
                let partial = try #require(partials.heldPartials().first { $0.record.url.hasSuffix(path) })
                #expect(partial.length == 1_000, "went back whole")
                #expect(partial.record.etag == etag)
                let beside = try FileManager.default.contentsOfDirectory(atPath: partials.folder.path).filter { $0.hasSuffix(".json") }
                #expect(beside.count == 1, "the record is in the file beside the partial")

                try SQLiteConnection.open(stateDatabase(in: dir)).execute("DROP TRIGGER refuse_files")
                server.inject(answer, path: path)
                #expect(try await podcastMirror(server, into: dir).run().isComplete)
                let asked = try #require(server.requests.last { $0.path == path })
                #expect(asked.header("Range") == "bytes=1000-")
                #expect(asked.header("If-Range") == etag)
                #expect(try String(contentsOfFile: dir.appendingPathComponent("enclosures/episode-1.mp3").path, encoding: .utf8) == body)
                #expect(try FileManager.default.contentsOfDirectory(atPath: partials.folder.path).isEmpty, "nothing left beside")
            }
        }
    }

    @Test func anOpenSSLThatRefusesMD5IsAnErrorNotAnEmptyHash() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let config = dir.appendingPathComponent("no-md5.cnf").path
                try TestSupport.write(Array("""
                    openssl_conf = openssl_init
                    [openssl_init]
                    alg_section = evp_properties
                    [evp_properties]
                    default_properties = fips=yes

                    """.utf8), to: config)
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run(tagArguments(server, out: out, idFile: idFile), environment: ["OPENSSL_CONF": config])
                #expect(run.status == 69, "\(run.stderr)")
                #expect(run.stderr.contains("OpenSSL cannot compute MD5"), "\(run.stderr)")
                // No partial named by an empty digest, shared by every URL.
                let partials = (try? FileManager.default.contentsOfDirectory(atPath: out + "/.mirror/partials")) ?? []
                #expect(!partials.contains(".part"))
                #expect((try? FileManager.default.contentsOfDirectory(atPath: out + "/full")) ?? [] == [])
            }
        }
    }

    @Test func partialsEarlierRunsLeftAreHeldToTheBudgetAndStraysGo() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
            for (index, name) in ["old", "middle", "new"].enumerated() {
                let url = "https://cdn.test/\(name).bin"
                let path = partials.partPath(for: url)
                try TestSupport.write([UInt8](repeating: 1, count: 1000), to: path)
                try partials.save(PartialRecord(url: url, etag: "\"\(name)\"", totalLength: 5000))
                var times = [timespec(tv_sec: 1_000_000 + index, tv_nsec: 0), timespec(tv_sec: 1_000_000 + index, tv_nsec: 0)]
                #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            }
            #expect(symlink("/etc/passwd", dir.appendingPathComponent("partials/stray.part").path) == 0)
            try TestSupport.write([1], to: dir.appendingPathComponent("partials/unrecorded.part").path)
            let dropped = partials.purge(keepingAtMost: 2, bytes: 1 << 30)
            #expect(dropped == ["https://cdn.test/old.bin"])
            #expect(partials.heldPartials().map(\.record.url) == ["https://cdn.test/middle.bin", "https://cdn.test/new.bin"])
            #expect(partials.folder.names().sorted() == [
                try partials.partName(for: "https://cdn.test/middle.bin"), try partials.partName(for: "https://cdn.test/new.bin"),
            ].sorted())
            #expect(partials.purge(keepingAtMost: 10, bytes: 1500) == ["https://cdn.test/middle.bin"])
        }
    }

    @Test func aRunPurgesWhatEarlierRunsLeftBeforeItStarts() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try MirrorDirectory(root: dir)
            let partials = try directory.partialStore()
            #expect(symlink("/etc/passwd", partials.folder.path(of: "stray.part")) == 0)
            // Earlier runs left more partials than a run keeps (200): the oldest go.
            let budget = DownloadScheduler.Configuration(maxConcurrent: 1).suspendedCountBudget
            let urls = (0..<budget + 5).map { "https://cdn.test/\($0).bin" }
            for (index, url) in urls.enumerated() {
                let path = partials.partPath(for: url)
                try TestSupport.write([1, 2, 3], to: path)
                try partials.save(PartialRecord(url: url, etag: "\"\(index)\"", totalLength: 10))
                var times = [timespec(tv_sec: 1_000_000 + index, tv_nsec: 0), timespec(tv_sec: 1_000_000 + index, tv_nsec: 0)]
                #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            }
            _ = try FeedRun(
                directory: directory, engine: TransferEngine(), settings: .init(feedURL: "http://127.0.0.1:9/feed"),
                logger: TestSupport.logger)
            #expect(!partials.folder.contains("stray.part"))
            let held = Set(partials.heldPartials().map(\.record.url))
            #expect(held.count == budget)
            #expect(held.subtracting(urls.suffix(budget)).isEmpty, "the oldest are the ones to go")
        }
    }
}
