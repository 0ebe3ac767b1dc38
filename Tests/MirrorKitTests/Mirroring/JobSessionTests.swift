import FixtureServer
import Foundation
import Synchronization
import Testing
@testable import MirrorKit

/// A run's jobs: taken as a source finds them, never more than a window of them at once.
@Suite("Jobs of one run", .timeLimit(.minutes(2)))
struct JobSessionTests {
    let engine = TransferEngine()

    private func runner(in dir: URL) throws -> JobRunner {
        try JobRunner(
            directory: try MirrorDirectory(root: dir), engine: engine, mode: .skipIfExists, concurrency: 8,
            retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5)), logger: TestSupport.logger)
    }

    @Test func aSourceWaitsForRoomAndEveryJobIsTallied() async throws {
        try await TestSupport.withServer { server in
            for index in 0..<20 {
                server.addMedia(path: "/file-\(index).bin", size: 1 << 20)
                server.inject(.throttle(bytesPerSecond: 2 << 20), path: "/file-\(index).bin")
            }
            try await TestSupport.withTemporaryDirectory { dir in
                let runner = try runner(in: dir)
                let session = runner.start(window: 4)
                let submitted = Atomic<Int>(0)
                let source = Task {
                    for index in 0..<20 {
                        await session.submit(
                            MirrorJob(url: server.baseURL + "/file-\(index).bin", relativePath: "file-\(index).bin"),
                            forced: index.isMultiple(of: 2))
                        submitted.add(1, ordering: .relaxed)
                    }
                }
                // A submitter waits for room: never more than the window's four are under way, however
                // slowly a loaded machine looks (a file may end, and the next start, between two looks).
                try await eventually("a submitter waits for room") { session.waitingForRoom == 1 }
                #expect(submitted.load(ordering: .relaxed) - session.settled <= 4)
                let counts = await runner.scheduler.status().counts
                #expect([DownloadState.waiting, .downloading, .paused].reduce(0) { $0 + counts[$1, default: 0] } <= 4)
                try await source.cancellableValue
                var summary = MirrorSummary()
                await session.finish(into: &summary)
                #expect(summary.wanted == 20)
                #expect(summary.downloaded == 20)
                #expect(summary.isComplete)
                // Every file was asked for (a file paused past the grace on a loaded machine is asked
                // for again, by Range when it had bytes).
                #expect(Set(server.requests.map(\.path)).count == 20)
            }
        }
    }

    /// Several sources in one run submit at once: the window holds for all of them together.
    @Test func threeSourcesSubmittingAtOnceNeverHaveMoreThanTheWindowUnderWay() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            // Files the mirror holds: each job ends at once, so places in the window come free
            // while the other sources ask for one.
            let count = 3000
            for index in 0..<count {
                try TestSupport.write([1], to: dir.appendingPathComponent("present-\(index).bin").path)
            }
            let runner = try runner(in: dir)
            let session = runner.start(window: 4)
            await withTaskGroup(of: Void.self) { group in
                for source in 0..<3 {
                    group.addTask {
                        for index in stride(from: source, to: count, by: 3) {
                            await session.submit(
                                MirrorJob(url: "http://127.0.0.1:9/present-\(index).bin", relativePath: "present-\(index).bin"),
                                forced: false)
                        }
                    }
                }
            }
            var summary = MirrorSummary()
            await session.finish(into: &summary)
            #expect(summary.alreadyPresent == count)
            #expect(session.peakUnderWay <= 4)
        }
    }

    @Test func cancellingASourceThatWaitsForRoomStopsTheJobsPromptly() async throws {
        try await TestSupport.withServer { server in
            for index in 0..<8 {
                server.addMedia(path: "/slow-\(index).bin", size: 1 << 20)
                server.inject(.throttle(bytesPerSecond: 16 << 10), path: "/slow-\(index).bin")
            }
            try await TestSupport.withTemporaryDirectory { dir in
                let runner = try runner(in: dir)
                let session = runner.start(window: 2)
                let source = Task {
                    for index in 0..<8 {
                        await session.submit(
                            MirrorJob(url: server.baseURL + "/slow-\(index).bin", relativePath: "slow-\(index).bin"),
                            forced: false)
                    }
                }
                // A machine busy with the rest of the suite may take long to start them.
                try await eventually("two under way", within: .seconds(30)) { server.requests.count >= 2 }
                try await eventually("the third waits for room", within: .seconds(30)) { session.waitingForRoom == 1 }
                #expect(server.requests.count == 2)
                let start = ContinuousClock.now
                source.cancel()
                try await source.cancellableValue
                var summary = MirrorSummary()
                await session.finish(into: &summary)
                // A minute of throttled downloads, stopped in well under one.
                #expect(ContinuousClock.now - start < .seconds(5))
                #expect(summary.interrupted)
                #expect(summary.downloaded == 0)
            }
        }
    }

    @Test func jobsThatJoinedOneDownloadCommitItOnce() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/shared.bin", size: 256 << 10)
            server.inject(.throttle(bytesPerSecond: 1 << 20), path: "/shared.bin")
            try await TestSupport.withTemporaryDirectory { dir in
                let runner = try runner(in: dir)
                let session = runner.start()
                // The same file under two names (a feed's enclosure and another's mirror, say),
                // both forced: one download, and only one of them can move its partial into place.
                for name in ["a.bin", "b.bin"] {
                    await session.submit(MirrorJob(url: server.baseURL + "/shared.bin", relativePath: name), forced: true)
                }
                var summary = MirrorSummary()
                await session.finish(into: &summary)
                #expect(summary.failures.isEmpty, "\(summary.failures)")
                #expect(summary.downloaded == 1)
                #expect(summary.alreadyPresent == 1)
                #expect(server.requestCount(path: "/shared.bin") == 1)
            }
        }
    }

    /// A job mirroring `/shared.bin` (`size` bytes, held up for `seconds` after `stallAfter`) into
    /// a.bin, held up, and a second job for the same URL into b.bin, following it.
    private func withLeadAndFollower(
        size: Int, stallAfter: Int, seconds: Double,
        _ body: (FixtureServer, URL, JobRunner, _ lead: Task<JobRunner.Outcome, Never>, _ follower: Task<JobRunner.Outcome, Never>) async throws -> Void
    ) async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/shared.bin", size: size)
            server.inject(.stall(afterBytes: stallAfter, seconds: seconds), path: "/shared.bin")
            try await TestSupport.withTemporaryDirectory { dir in
                let runner = try runner(in: dir)
                let url = server.baseURL + "/shared.bin"
                let lead = Task { await runner.mirrorFromAnySource(MirrorJob(url: url, relativePath: "a.bin"), forced: true) }
                try await eventually("the lead is held up", within: .seconds(60)) { server.bodyBytesSent(path: "/shared.bin") >= stallAfter }
                let follower = Task { await runner.mirrorFromAnySource(MirrorJob(url: url, relativePath: "b.bin"), forced: true) }
                try await eventually("the second job follows", within: .seconds(30)) { runner.flights.followers(of: url) == 1 }
                try await body(server, dir, runner, lead, follower)
            }
        }
    }

    @Test func aFollowerThatIsCancelledIsAnsweredAtOnceAndTheLeadGoesOn() async throws {
        try await withLeadAndFollower(size: 256 << 10, stallAfter: 128 << 10, seconds: 6) { server, dir, _, lead, follower in
            follower.cancel()
            let followed = await follower.value
            // The lead's body is held up for six seconds: the follower did not wait for it.
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("a.bin").path))
            guard case .interrupted = followed else {
                Issue.record("the follower got \(followed)")
                return
            }
            guard case .downloaded = await lead.value else {
                Issue.record("the lead did not finish")
                return
            }
            // The lead's first request, closed after the stall, and its own resume by Range.
            #expect(server.requests.filter { $0.path == "/shared.bin" }.map { $0.header("Range") != nil } == [false, true])
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("a.bin").path))
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("b.bin").path))
        }
    }

    @Test func aLeadThatIsCancelledTellsItsFollowersAndKeepsItsPartial() async throws {
        // Held up past the sink's buffer (1 MiB), so that some of it is in the partial.
        try await withLeadAndFollower(size: 2 << 20, stallAfter: 3 << 19, seconds: 30) { server, _, runner, lead, follower in
            let url = server.baseURL + "/shared.bin"
            // What the server sent may still sit in the sockets' buffers of a busy machine: the
            // lead is cancelled once some of it is in the partial.
            try await eventually("the lead has written some of the file", within: .seconds(60)) { runner.partials.length(for: url) > 0 }
            lead.cancel()
            for outcome in [await lead.value, await follower.value] {
                guard case .interrupted = outcome else {
                    Issue.record("a job got \(outcome)")
                    continue
                }
            }
            #expect(runner.flights.followers(of: url) == 0)
            #expect(runner.partials.length(for: url) > 0)
        }
    }

    @Test(arguments: [DownloadMode.skipIfExists, .newFile])
    func aSweepReadsTheSourcePageByPageAndMissesNothing(mode: DownloadMode) async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                var runner = try runner(in: dir).named("tag pages")
                    .choosing(mode: mode, keepDeleted: false, metadata: false, hook: nil)
                runner.sweepPageSize = 2
                // Recorded by an earlier run: gone from the disk since (each comes back), or there
                // (new-file mode asks after each).
                for index in 0..<5 {
                    server.addMedia(path: "/page-\(index).bin", size: 1000 + index)
                    if mode == .newFile {
                        try Data(count: 10).write(to: dir.appendingPathComponent("page-\(index).bin"))
                    }
                    try await runner.state.record(MirroredFile(
                        path: "page-\(index).bin", item: server.baseURL + "/page-\(index).bin", source: "tag pages",
                        url: server.baseURL + "/page-\(index).bin", etag: nil, lastModified: nil, bytes: 1000 + Int64(index), md5: nil))
                }
                let session = runner.start()
                await runner.revalidateTheRest(in: session, claiming: [])
                var summary = MirrorSummary()
                await session.finish(into: &summary)
                #expect(summary.failures.isEmpty, "\(summary.failures)")
                if mode == .skipIfExists { #expect(summary.missingFetchedAgain == 5, "\(summary)") }
                for index in 0..<5 {
                    #expect(server.requestCount(path: "/page-\(index).bin") == 1)
                }
            }
        }
    }
}
