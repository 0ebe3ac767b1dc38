import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// The scheduler over the real engine, against the fixture server.
@Suite("Download scheduler against the fixture server", .timeLimit(.minutes(2)))
struct SchedulerIntegrationTests {
    let engine = TransferEngine()

    private func withScheduler<T>(
        _ configuration: DownloadScheduler.Configuration = .init(), engine: TransferEngine? = nil,
        _ body: (FixtureServer, DownloadScheduler, PartialStore) async throws -> T
    ) async throws -> T {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
                let transport = EngineTransport(
                    engine: engine ?? self.engine, partials: partials, retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5)),
                    logger: TestSupport.logger)
                let scheduler = DownloadScheduler(transport: transport, configuration: configuration)
                return try await body(server, scheduler, partials)
            }
        }
    }

    @Test func imagesListedInTwoAlbumsAreFetchedOnce() async throws {
        try await withScheduler { server, scheduler, _ in
            let urls = MediaURLBuilder(mediaBase: server.baseURL)
            let client = ImgurClient(apiBase: server.baseURL, clientID: "fixture", engine: engine, logger: TestSupport.logger)
            let first = try await client.albumImages("Ef1gH")
            let second = try await client.tagPage("cats", sort: .time, window: .all, page: 0)
                .compactMap { if case .album(let album) = $0, album.id == "Qr5sT" { album.images } else { nil } }
                .flatMap { $0 }
            let listed = (first + second).compactMap(urls.item(for:)).map(\.fullURL)
            #expect(listed.count(where: { $0.hasSuffix("/Za8bC9d.jpg") }) == 2)
            let files = try await withThrowingTaskGroup(of: FetchedFile.self) { group in
                for url in listed { group.addTask { try await scheduler.schedule(url) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(files.count == listed.count)
            #expect(server.requestCount(path: "/Za8bC9d.jpg") == 1)
            for file in files where file.url.hasSuffix("/Za8bC9d.jpg") {
                #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/Za8bC9d.jpg")))
            }
        }
    }

    @Test func transfersToOnePlainHTTPHostRunSideBySide() async throws {
        try await withScheduler(.init(maxConcurrent: 4)) { server, scheduler, _ in
            let paths = (0..<4).map { "/side-\($0).bin" }
            for path in paths {
                server.addMedia(path: path, size: 512 << 10)
                server.inject(.throttle(bytesPerSecond: 8 << 10), path: path)
            }
            let tasks = paths.map { path in Task { try await scheduler.schedule(server.baseURL + path) } }
            // Each takes 64 s; all four must be asked for long before the first is done (a loaded
            // machine may take seconds to start them: the margin is wide, the test is not slower).
            // (Each asked for at least once: under load a request may be asked for again.)
            try await eventually("four requests", within: .seconds(45)) { Set(server.requests.map(\.path)).count == 4 }
            #expect(paths.allSatisfy { server.bodyBytesSent(path: $0) < 512 << 10 }, "one was done before all four were asked for")
            tasks.forEach { $0.cancel() }
        }
    }

    @Test func aRevivedItemResumesWithARangeRequest() async throws {
        // Only the test's cancel ends the first request: no stall detection gives it up first.
        let patient = TransferEngine(configuration: .init(lowSpeedSeconds: 3_600))
        try await withScheduler(engine: patient) { server, scheduler, partials in
            server.addMedia(path: "/revive.bin", size: 8 << 20)
            // The first request sends half and then waits, so the test cannot miss the moment to
            // cancel, however loaded the machine (a throttled one could end before it was seen).
            server.inject(.stall(afterBytes: 4 << 20, seconds: 100), path: "/revive.bin", sparingRangedRequests: true)
            let url = server.baseURL + "/revive.bin"
            let first = Task { try await scheduler.schedule(url) }
            do {
                try await eventually("half sent and the partial grows", within: .seconds(80)) {
                    server.bodyBytesSent(path: "/revive.bin") == 4 << 20 && partials.length(for: url) >= 1 << 20
                }
            } catch {
                let requests = server.requests.filter { $0.path == "/revive.bin" }.map { $0.header("Range") ?? "whole" }
                Issue.record("sent \(server.bodyBytesSent(path: "/revive.bin")), partial \(partials.length(for: url)), requests \(requests), state \(await scheduler.state(of: url).map { "\($0)" } ?? "none")")
                throw error
            }
            await scheduler.cancel(url)
            await #expect(throws: DownloadError.self) { _ = try await first.cancellableValue }
            try await eventually("transfer stops") { await scheduler.status().items.isEmpty }
            #expect(server.requests.count { $0.path == "/revive.bin" } == 1)
            let kept = partials.length(for: url)
            #expect(kept >= 1 << 20)
            #expect(await scheduler.state(of: url) == .suspended)

            let file = try await scheduler.schedule(url)
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/revive.bin")))
            let resumed = try #require(server.requests.last { $0.path == "/revive.bin" })
            #expect(resumed.header("Range") == "bytes=\(kept)-")
            #expect(resumed.header("If-Range") == server.etag(of: "/revive.bin"))
            // The half the first request sent, and only what the partial lacked after it. (The
            // server counts a chunk once its write returns, which may come after the client has it.)
            let expected = (4 << 20) + (8 << 20) - kept
            try await eventually("the bytes sent are counted", within: .seconds(20)) {
                server.bodyBytesSent(path: "/revive.bin") >= expected
            }
            #expect(server.bodyBytesSent(path: "/revive.bin") == expected)
        }
    }

    @Test func aResumedTransferCountsOnlyWhatItReceivesInThisRun() async throws {
        let patient = TransferEngine(configuration: .init(lowSpeedSeconds: 3_600))
        try await withScheduler(engine: patient) { server, scheduler, partials in
            server.addMedia(path: "/counted.bin", size: 8 << 20)
            // Each request sends a part and then waits: the first leaves a partial, the ranged
            // one that resumes it is looked at while it waits.
            server.inject(.stall(afterBytes: 2 << 20, seconds: 100), path: "/counted.bin", sparingRangedRequests: true)
            server.inject(.stall(afterBytes: 1 << 20, seconds: 100), path: "/counted.bin")
            let url = server.baseURL + "/counted.bin"
            let first = Task { try await scheduler.schedule(url) }
            try await eventually("the first part kept", within: .seconds(60)) {
                server.bodyBytesSent(path: "/counted.bin") == 2 << 20 && partials.length(for: url) >= 1 << 20
            }
            await scheduler.cancel(url)
            await #expect(throws: DownloadError.self) { _ = try await first.cancellableValue }
            try await eventually("transfer stops") { await scheduler.status().items.isEmpty }
            let kept = partials.length(for: url)

            let second = Task { try await scheduler.schedule(url) }
            // Progress is reported every 256 KiB or so: once past the body's start, some of the
            // second part has been reported.
            try await eventually("the second part arrives", within: .seconds(60)) {
                await scheduler.status().items.first.map { $0.completedBytes >= kept + (256 << 10) } == true
            }
            let item = try #require(await scheduler.status().items.first)
            // Counted from what the partial held when the body started, not from nothing.
            #expect(item.receivedBytes == item.completedBytes - kept)
            #expect(item.receivedBytes <= 1 << 20)
            await scheduler.cancel(url)
            await #expect(throws: DownloadError.self) { _ = try await second.cancellableValue }
        }
    }

    @Test func aForcedItemOvertakesRunningPreviewsAndEverythingCompletes() async throws {
        try await withScheduler(.init(maxConcurrent: 4, pauseGrace: .milliseconds(200))) { server, scheduler, _ in
            let previews = (0..<12).map { "/preview-\($0).bin" }
            for path in previews {
                server.addMedia(path: path, size: 2 << 20)
                server.inject(.throttle(bytesPerSecond: 2 << 20), path: path)
            }
            server.addMedia(path: "/forced.bin", size: 4 << 20)
            // Slow enough that it is seen receiving before it ends, however loaded the machine.
            server.inject(.throttle(bytesPerSecond: 32 << 20), path: "/forced.bin")
            let events = scheduler.events()
            let previewTasks = previews.map { path in Task { try await scheduler.schedule(server.baseURL + path) } }
            try await eventually { await scheduler.status().counts[.downloading] == 4 }
            let forced = try await scheduler.schedule(server.baseURL + "/forced.bin", forced: true)
            #expect(TestSupport.digest(ofFile: forced.path) == TestSupport.digest(server.content(of: "/forced.bin")))
            for (path, task) in zip(previews, previewTasks) {
                let file = try await task.cancellableValue
                #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: path)))
            }
            scheduler.finishEvents()
            var paused = 0
            for await event in events {
                if case .paused = event { paused += 1 }
            }
            // One to make room for it, then the other three while it received.
            #expect(paused == 4)
        }
    }
}
