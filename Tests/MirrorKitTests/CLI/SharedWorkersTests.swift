import FixtureServer
import Foundation
import Synchronization
import Testing
@testable import MirrorKit
@testable import MirrorPostgreSQL

/// Several `mirror` processes on one directory and one PostgreSQL server, as cron jobs on several
/// hosts would be: they divide the tag, a killed one's work passes to the others, and its
/// half-downloaded file is resumed, not fetched again.
@Suite("Workers sharing a mirror through PostgreSQL", .timeLimit(.minutes(3)))
struct SharedWorkersTests {
    static let requirement = PostgresServer.isAvailable


    private func workerArguments(
        _ tag: String, out: String, idFile: String, server: FixtureServer, postgres: PostgresServer, leaseSeconds: Int = 3
    ) -> [String] {
        [
            tag, "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL,
            "--media-base", server.baseURL, "--state", postgres.url, "--lease-seconds", "\(leaseSeconds)", "--concurrency", "2", "--verbose",
        ]
    }

    /// The partial download `pid` has open, and its length.
    private func openPartial(of pid: Int32) -> (path: String, length: Int64)? {
        let fds = "/proc/\(pid)/fd"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fds)/\(name)"),
                  target.contains("/.mirror/partials/"), target.hasSuffix(".part")
            else { continue }
            var info = stat()
            guard stat(target, &info) == 0 else { continue }
            return (target, Int64(info.st_size))
        }
        return nil
    }

    /// Adds to `tag` a large file (48 MiB) as its newest post, its first request held to 4 MiB/s:
    /// slow enough for a worker to be caught part-way into it. Returns its id and size.
    private func prependLargeFile(to tag: String, on server: FixtureServer) throws -> (id: String, size: Int) {
        let size = 48 << 20
        let big = try #require(server.prependToGeneratedTag(tag, count: 1, albumEvery: 0, imageSize: size).first)
        server.inject(.throttle(bytesPerSecond: 4 << 20), path: "/\(big).jpg")
        return (big, size)
    }

    /// The first of `pids` whose open partial holds at least `bytes`.
    private func worker(among pids: [Int32], holdingAtLeast bytes: Int64) -> Int32? {
        pids.first { (openPartial(of: $0)?.length ?? 0) >= bytes }
    }

    private func files(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    private func mediaRequests(_ server: FixtureServer) -> Int {
        server.requests.filter { !$0.path.hasPrefix("/3/") }.count
    }

    @Test(.enabled(if: requirement, "PostgreSQL is not installed (scripts/setup installs it)"))
    func threeWorkersOneKilledMidFileEveryFileOnceAndTheHalfFileResumed() async throws {
        try await PostgresServer.with { postgres in
            try await TestSupport.withServer { server in
                server.addGeneratedTag("shared", pages: 3, perPage: 20, albumEvery: 5, imagesPerAlbum: 2, imageSize: 8 << 10)
                // The newest post is a large file, slow enough to be caught half-way.
                let (big, size) = try prependLargeFile(to: "shared", on: server)
                let ids = server.generatedImageIDs("shared")
                try await MirrorProcess.withClientID { dir, idFile in
                    let out = dir.appendingPathComponent("out").path
                    let warc = dir.appendingPathComponent("warc").path
                    let arguments = workerArguments("shared", out: out, idFile: idFile, server: server, postgres: postgres) + ["--warc", warc]
                    let workers = try (0..<3).map { try MirrorProcess.start(arguments, log: dir.appendingPathComponent("worker-\($0).log")) }
                    // Every small full-size file lands, and one worker is a third into the large one.
                    let pids = workers.map(\.pid)
                    let holder = Mutex<Int32?>(nil)
                    try await eventually("the small files land and the large one is a third in", within: .seconds(60)) {
                        guard files(in: out + "/full").count == ids.count - 1 else { return false }
                        let pid = worker(among: pids, holdingAtLeast: Int64(size / 3))
                        holder.withLock { $0 = pid }
                        return pid != nil
                    }
                    let killedPID = try #require(holder.withLock { $0 })
                    let killed = try #require(workers.first { $0.pid == killedPID })
                    killed.signal(SIGKILL)
                    #expect(await killed.wait() == .signalled(SIGKILL))
                    // The killed worker's lease runs out in 3 s; the rest of the large file then comes
                    // at full speed (the throttle was for the first request).
                    let survivors = workers.filter { $0.pid != killed.pid }
                    try? await eventually("the survivors finish", within: .seconds(60)) { survivors.allSatisfy { !$0.isRunning } }
                    for (index, worker) in workers.enumerated() where worker.isRunning {
                        let log = (try? String(contentsOf: dir.appendingPathComponent("worker-\(index).log"), encoding: .utf8)) ?? ""
                        Issue.record("worker \(index) still running: \(log.suffix(3000))")
                        worker.signal(SIGKILL)
                    }
                    for worker in survivors {
                        let status = await worker.wait()
                        let log = (try? String(contentsOf: dir.appendingPathComponent("worker-\(workers.firstIndex { $0.pid == worker.pid }!).log"), encoding: .utf8)) ?? ""
                        #expect(status == .exited(0), "\(log)")
                    }

                    // Every file once, under its own name, byte for byte.
                    #expect(files(in: out + "/full") == ids.map { "\($0).jpg" }.sorted())
                    #expect(files(in: out + "/preview") == ids.map { "\($0)m.jpg" }.sorted())
                    for id in ids {
                        #expect(TestSupport.digest(ofFile: out + "/full/\(id).jpg") == TestSupport.digest(server.content(of: "/\(id).jpg")))
                    }
                    // No small file asked for twice; the large one resumed by Range, not sent again.
                    for id in ids where id != big {
                        #expect(server.requestCount(path: "/\(id).jpg") == 1, "\(id)")
                        #expect(server.requestCount(path: "/\(id)m.jpg") == 1, "\(id) \(id == big) \(server.requests.filter { $0.path == "/\(id)m.jpg" }.map(\.headers))")
                    }
                    #expect(server.requestCount(path: "/\(big).jpg") == 2)
                    #expect(server.requests.last { $0.path == "/\(big).jpg" }?.header("Range") != nil)
                    let sent = server.bodyBytesSent(path: "/\(big).jpg")
                    #expect(Double(sent) <= Double(size) * 1.05, "\(sent) bytes sent for a file of \(size)")

                    // Each worker archived into files of its own, named for its host and process; the
                    // killed one's is left open, for the next run to close.
                    let host = ProcessInfo.processInfo.hostName
                    let archived = files(in: warc)
                    for worker in workers {
                        let own = archived.filter { $0.contains("-\(host)-\(worker.pid)-") }
                        #expect(own.contains { $0.hasSuffix(worker.pid == killed.pid ? ".warc.gz.open" : ".warc.gz") }, "\(worker.pid): \(archived)")
                    }
                    #expect(archived.allSatisfy { name in workers.contains { name.contains("-\(host)-\($0.pid)-") } }, "\(archived)")

                    // A rerun finds nothing to fetch, and closes the killed worker's file.
                    let before = mediaRequests(server)
                    let rerun = try await MirrorProcess.run(arguments)
                    #expect(rerun.status == 0, "\(rerun.stderr)")
                    #expect(mediaRequests(server) == before)
                    #expect(!files(in: warc).contains { $0.hasSuffix(".open") }, "\(files(in: warc))")
                    if WARCReader.isAvailable {
                        let records = try await WARCReader.records(in: warc)
                        // Every small file is archived once, whichever worker fetched it.
                        for id in ids where id != big {
                            #expect(records.filter { $0.type == "response" && $0.uri == server.baseURL + "/\(id).jpg" }.count == 1, "\(id)")
                        }
                    }
                }
            }
        }
    }

    /// A worker stopped (SIGSTOP: a paused VM, a frozen NFS client) for twice its lease in the
    /// middle of a large file, whose image another worker takes over and finishes, and which is
    /// then let go: it names nothing, writes nothing into the other's file, and exits 0.
    @Test(.enabled(if: requirement, "PostgreSQL is not installed (scripts/setup installs it)"))
    func aWorkerStoppedPastItsLeaseAndLetGoCommitsNothingAndTheFileTakenOverStaysIntact() async throws {
        try await PostgresServer.with { postgres in
            try await TestSupport.withServer { server in
                server.addGeneratedTag("frozen", pages: 1, perPage: 6, albumEvery: 0, imageSize: 8 << 10)
                let (big, size) = try prependLargeFile(to: "frozen", on: server)
                let ids = server.generatedImageIDs("frozen")
                try await MirrorProcess.withClientID { dir, idFile in
                    let out = dir.appendingPathComponent("out").path
                    // A lease long enough that the worker taking over keeps its own on a loaded machine
                    // (with 3 s, a test run's load once made it hand the file back).
                    let lease = 5
                    let arguments = workerArguments("frozen", out: out, idFile: idFile, server: server, postgres: postgres, leaseSeconds: lease)
                    let logs = (0..<2).map { dir.appendingPathComponent("worker-\($0).log") }
                    let workers = try (0..<2).map { try MirrorProcess.start(arguments, log: logs[$0]) }
                    func log(of worker: ChildProcess.Started) -> String {
                        let index = workers.firstIndex { $0.pid == worker.pid }!
                        return (try? String(contentsOf: logs[index], encoding: .utf8)) ?? ""
                    }
                    let holder = Mutex<Int32?>(nil)
                    try await eventually("a worker is a third into the large file", within: .seconds(60)) {
                        let pid = worker(among: workers.map(\.pid), holdingAtLeast: Int64(size / 3))
                        holder.withLock { $0 = pid }
                        return pid != nil
                    }
                    let stopped = try #require(workers.first { $0.pid == holder.withLock { $0 } })
                    let other = try #require(workers.first { $0.pid != stopped.pid })
                    stopped.signal(SIGSTOP)
                    let stoppedAt = ContinuousClock.now
                    // The file changes on the server meanwhile: the worker that takes over cannot
                    // resume the stopped one's bytes and fetches the new file whole.
                    server.changeContent(path: "/\(big).jpg")
                    try? await eventually("the other worker takes the large file over and finishes", within: .seconds(60)) {
                        !other.isRunning
                    }
                    if other.isRunning { other.signal(SIGKILL) }
                    #expect(await other.wait() == .exited(0), "\(log(of: other))")
                    let path = out + "/full/\(big).jpg"
                    #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(server.content(of: "/\(big).jpg")))

                    // Stopped for twice its lease, then let go.
                    try await Task.sleep(until: stoppedAt + .seconds(2 * lease))
                    stopped.signal(SIGCONT)
                    try? await eventually("the stopped worker ends", within: .seconds(60)) { !stopped.isRunning }
                    if stopped.isRunning { stopped.signal(SIGKILL) }
                    let status = await stopped.wait()
                    let stoppedLog = log(of: stopped)
                    #expect(status == .exited(0), "\(stoppedLog)")
                    // It heard that the image went to another worker, and counts its file as taken over.
                    #expect(stoppedLog.contains("another worker took it"), "\(stoppedLog)")
                    #expect(stoppedLog.contains("taken over by another worker"), "\(stoppedLog)")

                    // One commit: one record, one name, the taker's bytes.
                    #expect(files(in: out + "/full") == ids.map { "\($0).jpg" }.sorted())
                    #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(server.content(of: "/\(big).jpg")))
                    let state = try await PostgresState(try PostgresLocation(postgres.url), logger: TestSupport.logger)
                    let versions = try await state.versions(of: server.baseURL + "/\(big).jpg")
                    await state.close()
                    #expect(versions.map(\.path) == ["full/\(big).jpg"])
                }
            }
        }
    }

    @Test(.enabled(if: requirement, "PostgreSQL is not installed (scripts/setup installs it)"))
    func aDeadlineStopsAWorkerWithZeroRecordsWhatItDidAndTheNextRunFinishes() async throws {
        try await PostgresServer.with { postgres in
            try await TestSupport.withServer { server in
                server.addGeneratedTag("timed", pages: 1, perPage: 12, albumEvery: 0, imageSize: 256 << 10)
                for id in server.generatedImageIDs("timed").suffix(6) {
                    server.inject(.throttle(bytesPerSecond: 64 << 10), path: "/\(id).jpg")
                }
                try await MirrorProcess.withClientID { dir, idFile in
                    let out = dir.appendingPathComponent("out").path
                    let arguments = workerArguments("timed", out: out, idFile: idFile, server: server, postgres: postgres)
                    // Stopped by its deadline, a run still records, lets go and exits 0: the
                    // database is written after the cancel as before it.
                    let cut = try await MirrorProcess.run(arguments + ["--max-duration", "2s"])
                    #expect(cut.status == 0, "\(cut.stderr)")
                    #expect(!cut.stderr.contains("state database"), "\(cut.stderr)")
                    let status = try await MirrorProcess.run(["status", "--out", out, "--state", postgres.url])
                    #expect(status.stdout.contains("exit status 0"), "\(status.stdout)")
                    #expect(status.stdout.contains("0 images claimed"), "\(status.stdout)")
                    server.clearFaults()
                    let next = try await MirrorProcess.run(arguments)
                    #expect(next.status == 0, "\(next.stderr)")
                    let ids = server.generatedImageIDs("timed")
                    #expect(files(in: out + "/full") == ids.map { "\($0).jpg" }.sorted())
                    #expect(files(in: out + "/preview") == ids.map { "\($0)m.jpg" }.sorted())
                }
            }
        }
    }

    @Test(.enabled(if: requirement, "PostgreSQL is not installed (scripts/setup installs it)"))
    func aWorkerThatCannotReachTheCDNLeavesItsImagesToAWorkerThatCan() async throws {
        try await PostgresServer.with { postgres in
            try await TestSupport.withServer { server in
                server.addGeneratedTag("split", pages: 1, perPage: 16, albumEvery: 0, imageSize: 4096)
                try await MirrorProcess.withClientID { dir, idFile in
                    let out = dir.appendingPathComponent("out").path
                    var cutOff = workerArguments("split", out: out, idFile: idFile, server: server, postgres: postgres)
                    // Its media host is a port nothing listens on: down, for this worker alone.
                    let down = try NginxServer.freePort()
                    cutOff[cutOff.firstIndex(of: "--media-base")! + 1] = "http://127.0.0.1:\(down)"
                    let first = try await MirrorProcess.run(cutOff + ["--retries", "1"])
                    #expect(first.status == 75, "\(first.stderr)")
                    // What it could not fetch is not parked: another worker takes all of it at once.
                    let healthy = try await MirrorProcess.run(
                        workerArguments("split", out: out, idFile: idFile, server: server, postgres: postgres))
                    #expect(healthy.status == 0, "\(healthy.stderr)")
                    let ids = server.generatedImageIDs("split")
                    #expect(files(in: out + "/full") == ids.map { "\($0).jpg" }.sorted())
                }
            }
        }
    }

    /// Imgur counts calls by address: workers behind one NAT that name one budget group stop
    /// where the group's budget stops, without a call to find out; another group asks.
    @Test(.enabled(if: requirement, "PostgreSQL is not installed (scripts/setup installs it)"))
    func workersOfOneBudgetGroupShareOneAPIBudget() async throws {
        try await PostgresServer.with { postgres in
            try await TestSupport.withServer { server in
                server.addGeneratedTag("many", pages: 12, perPage: 12, albumEvery: 2, imagesPerAlbum: 3, imageSize: 1024)
                server.setRateLimit(userRemaining: 30, userReset: 1800, userLimit: 500)
                try await MirrorProcess.withClientID { dir, idFile in
                    let out = dir.appendingPathComponent("out").path
                    let worker = workerArguments("many", out: out, idFile: idFile, server: server, postgres: postgres)
                    let first = try await MirrorProcess.run(worker + ["--budget-group", "office"])
                    #expect(first.status == 75, "\(first.stderr)")
                    let spent = server.apiRequestCount
                    #expect(spent > 0 && spent <= 30)
                    let second = try await MirrorProcess.run(worker + ["--budget-group", "office"])
                    #expect(second.status == 75, "\(second.stderr)")
                    #expect(server.apiRequestCount == spent, "a worker of the same group called the API")
                    let elsewhere = try await MirrorProcess.run(worker + ["--budget-group", "elsewhere"])
                    #expect(elsewhere.status == 75, "\(elsewhere.stderr)")
                    #expect(server.apiRequestCount > spent, "another group's worker has a budget of its own to find out")

                    let alone = try await MirrorProcess.run(["many", "--out", out + "-alone", "--budget-group", "office", "--client-id-file", idFile])
                    #expect(alone.status == 78 && alone.stderr.contains("--budget-group"), "\(alone.stderr)")
                }
            }
        }
    }

    /// Looking changes nothing: a database no run has used gets no tables from `mirror status`.
    @Test(.enabled(if: requirement, "PostgreSQL is not installed (scripts/setup installs it)"))
    func statusOnADatabaseWithoutTheSchemaSaysSoAndCreatesNothing() async throws {
        try await PostgresServer.with { postgres in
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out")
                try FileManager.default.createDirectory(at: out.appendingPathComponent(".mirror"), withIntermediateDirectories: true)
                for _ in 0..<2 {
                    let status = try await MirrorProcess.run(["status", out.path, "--state", postgres.url])
                    #expect(status.status == 66, "\(status.stderr)")
                    #expect(status.stderr.contains("no mirror state here"), "\(status.stderr)")
                }
                let state = try await PostgresState(try PostgresLocation(postgres.url), logger: TestSupport.logger)
                // The first open that may write is the run's: the schema's first migration is its own.
                #expect(try await state.rows("SELECT version FROM schema_migrations ORDER BY version").count == PostgresSchema.latest)
                await state.close()
                let after = try await MirrorProcess.run(["status", out.path, "--state", postgres.url])
                #expect(after.status == 0, "\(after.stderr)")
            }
        }
    }

    @Test(.enabled(if: requirement, "PostgreSQL is not installed (scripts/setup installs it)"))
    func statusShowsTheWorkersTheirClaimsAndRates() async throws {
        try await PostgresServer.with { postgres in
            try await TestSupport.withServer { server in
                server.addGeneratedTag("watched", pages: 1, perPage: 6, albumEvery: 0, imageSize: 4 << 20)
                for id in server.generatedImageIDs("watched") {
                    // Slow enough that both workers are still at it when a status on a loaded machine
                    // gets round to them (at 1 MiB/s, a full run on CI once saw them finish first).
                    server.inject(.throttle(bytesPerSecond: 512 << 10), path: "/\(id).jpg")
                }
                try await MirrorProcess.withClientID { dir, idFile in
                    let out = dir.appendingPathComponent("out").path
                    let arguments = workerArguments("watched", out: out, idFile: idFile, server: server, postgres: postgres)
                    let workers = try (0..<2).map { try MirrorProcess.start(arguments, log: dir.appendingPathComponent("w\($0).log")) }
                    let live = Mutex("")
                    let url = postgres.url
                    try await eventually("both workers are live, with claims and a rate", within: .seconds(60)) {
                        guard let status = try? await MirrorProcess.run(["status", "--out", out, "--state", url, "--json"]),
                              status.status == 0,
                              let report = try? JSONDecoder.snakeCase.decode(StatusReport.self, from: Data(status.stdout.utf8)),
                              let workers = report.workers
                        else { return false }
                        live.withLock { $0 = status.stdout }
                        return workers.filter(\.live).count == 2 && workers.allSatisfy { $0.claims > 0 && $0.bytesPerSecond > 0 }
                    }
                    #expect(!live.withLock { $0 }.contains("fixtureid"))
                    let text = try await MirrorProcess.run(["status", "--out", out, "--state", postgres.url])
                    #expect(text.stdout.contains("workers running: 2"), "\(text.stdout)")
                    #expect(text.stdout.contains("images claimed"), "\(text.stdout)")
                    for worker in workers { #expect(await worker.wait() == .exited(0)) }
                    let after = try await MirrorProcess.run(["status", "--out", out, "--state", postgres.url])
                    #expect(after.stdout.contains("no worker running"), "\(after.stdout)")
                    #expect(after.stdout.components(separatedBy: "exit status 0").count - 1 >= 2, "\(after.stdout)")
                    let first = try #require(server.generatedImageIDs("watched").first)
                    let versions = try await MirrorProcess.run(["status", "--out", out, "--state", postgres.url, "--versions", "\(first).jpg"])
                    #expect(versions.status == 0, "\(versions.stderr)")
                    #expect(versions.stdout.contains("1 version"), "\(versions.stdout)")
                    #expect(versions.stdout.contains("full/\(first).jpg"), "\(versions.stdout)")
                }
            }
        }
    }

    @Test(.enabled(if: requirement, "PostgreSQL is not installed (scripts/setup installs it)"))
    func aFeedIsRefusedWithThePostgresStateAndADatabaseThatIsDownIsNamed() async throws {
        try await MirrorProcess.withClientID { dir, idFile in
            let out = dir.appendingPathComponent("out").path
            // The feed command has no --state (its help does not offer one); a config's 'state' is refused.
            let flag = try await MirrorProcess.run(["feed", "http://127.0.0.1:9/feed.xml", "--out", out, "--state", "postgresql://u:pw@127.0.0.1/db"])
            #expect(flag.status == 64, "\(flag.stderr)")
            let help = try await MirrorProcess.run(["feed", "--help"])
            #expect(!help.stdout.contains("--state") && !help.stdout.contains("--lease-seconds"), "\(help.stdout)")
            let config = dir.appendingPathComponent("shared.json").path
            try #"{"state": "postgresql://u:pw@127.0.0.1/db"}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let feed = try await MirrorProcess.run(["feed", "http://127.0.0.1:9/feed.xml", "--out", out, "--config", config])
            #expect(feed.status == 78, "\(feed.stderr)")
            #expect(feed.stderr.contains("the PostgreSQL state (--state or the config's 'state') is for tags"))
            let port = try NginxServer.freePort()
            let down = try await MirrorProcess.run([
                "cats", "--out", out, "--client-id-file", idFile, "--state", "postgresql://u:s3cret@127.0.0.1:\(port)/db",
            ])
            #expect(down.status != 0)
            #expect(down.stderr.contains("postgresql://***@127.0.0.1:\(port)/db"), "\(down.stderr)")
            #expect(!down.stderr.contains("s3cret"))
        }
    }
}

extension JSONDecoder {
    static var snakeCase: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
