import Foundation
import Testing
@testable import MirrorKit

/// Transfers over HTTP/2, against nginx: many streams on one connection, and a forced item
/// holding others back without `curl_easy_pause` on a shared connection.
@Suite("HTTP/2 against nginx", .enabled(if: NginxServer.isAvailable, "needs nginx and openssl"), .timeLimit(.minutes(2)))
struct HTTP2Tests {
    private func withScheduler<T>(
        _ server: NginxServer, maxConcurrent: Int, maxPerHost: Int? = nil,
        retry: RetryPolicy = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5)), health: HostHealth? = nil,
        _ body: (DownloadScheduler) async throws -> T
    ) async throws -> T {
        let engine = TransferEngine(configuration: .init(certificateAuthorities: server.certificate))
        return try await TestSupport.withTemporaryDirectory { dir in
            let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
            let transport = EngineTransport(
                engine: engine, partials: partials, retry: retry, health: health, logger: TestSupport.logger)
            return try await body(DownloadScheduler(
                transport: transport,
                configuration: .init(maxConcurrent: maxConcurrent, maxPerHost: maxPerHost ?? maxConcurrent)))
        }
    }

    /// The most transfers the scheduler had started and not ended at once, from its events.
    private func peakUnderWay(_ events: AsyncStream<SchedulerEvent>) async -> Int {
        var (active, peak) = (Set<String>(), 0)
        for await event in events {
            switch event {
            case .started(let url, _): active.insert(url)
            case .completed(let url, _), .failed(let url, _), .suspended(let url, _), .purged(let url), .queued(let url, _):
                active.remove(url)
            default: break
            }
            peak = max(peak, active.count)
        }
        return peak
    }

    @Test func manyTransfersShareOneConnection() async throws {
        let server = try await NginxServer.start()
        var expected: [String: String] = [:]
        for index in 0..<24 {
            expected["/file-\(index).bin"] = TestSupport.digest(try server.addFile("file-\(index).bin", size: 64 << 10))
        }
        let base = server.baseURL
        try await withScheduler(server, maxConcurrent: 8) { scheduler in
            try await withThrowingTaskGroup(of: (String, String).self) { group in
                for path in expected.keys {
                    group.addTask { (path, TestSupport.digest(ofFile: try await scheduler.schedule(base + path).path)) }
                }
                for try await (path, digest) in group { #expect(digest == expected[path], "\(path)") }
            }
        }
        let requests = server.requests()
        #expect(requests.count == 24)
        #expect(requests.allSatisfy { $0.protocol == "HTTP/2.0" && $0.status == 200 })
        #expect(Set(requests.map(\.connection)).count == 1)
    }

    @Test func aForcedItemOvertakesStreamsOnTheSameConnectionAndEverythingCompletes() async throws {
        let server = try await NginxServer.start()
        var expected: [String: String] = [:]
        for index in 0..<6 {
            // Held to 512 KiB/s a response by the server: still under way when the forced one comes.
            expected["/slow/preview-\(index).bin"] = TestSupport.digest(try server.addFile("slow/preview-\(index).bin", size: 2 << 20))
        }
        expected["/forced.bin"] = TestSupport.digest(try server.addFile("forced.bin", size: 4 << 20))
        let base = server.baseURL
        try await withScheduler(server, maxConcurrent: 4) { scheduler in
            let events = scheduler.events()
            let previews = expected.keys.filter { $0 != "/forced.bin" }.map { path in
                Task { (path, TestSupport.digest(ofFile: try await scheduler.schedule(base + path).path)) }
            }
            // The four streams receive: their first bytes say they are HTTP/2 streams.
            try await eventually("four streams receive", within: .seconds(30)) {
                let status = await scheduler.status()
                return status.counts[.downloading] == 4 && status.items.allSatisfy { $0.completedBytes > 0 }
            }
            let forced = try await scheduler.schedule(base + "/forced.bin", forced: true)
            #expect(TestSupport.digest(ofFile: forced.path) == expected["/forced.bin"])
            for task in previews {
                let (path, digest) = try await task.cancellableValue
                #expect(digest == expected[path], "\(path)")
            }
            scheduler.finishEvents()
            // No pause holds a stream of a shared connection: the streams keep their slots, and
            // the host never carries more than its limit (were they counted as paused, the
            // forced item would start as a fifth beside four streams still receiving). A stream
            // paused before its first bytes said what it is goes on, or is stopped and waits.
            #expect(await peakUnderWay(events) <= 4)
        }
        #expect(server.requests().allSatisfy { $0.protocol == "HTTP/2.0" && $0.status == 200 })
    }

    @Test func aThrottlingHostNeverCarriesMoreThanItsLimit() async throws {
        let server = try await NginxServer.start()
        var expected: [String: String] = [:]
        for index in 0..<4 {
            // 2 s each at the server's 256 KiB/s; past the first two the server allows a request
            // every 12 s and answers 429 meanwhile, however slow the machine.
            expected["/throttled/preview-\(index).bin"] = TestSupport.digest(
                try server.addFile("throttled/preview-\(index).bin", size: 512 << 10))
        }
        // On the same host, a path the server does not throttle: the host's limit is what holds it back.
        expected["/slow/forced.bin"] = TestSupport.digest(try server.addFile("slow/forced.bin", size: 1 << 20))
        let base = server.baseURL
        let health = HostHealth(settings: .init(maxPerHost: 2, throttledOutAfter: 30))
        let retry = RetryPolicy(maxAttempts: 20, baseDelay: .milliseconds(300), maxDelay: .seconds(2))
        try await withScheduler(server, maxConcurrent: 8, maxPerHost: 2, retry: retry, health: health) { scheduler in
            let previews = expected.keys.filter { !$0.hasSuffix("forced.bin") }.map { path in
                Task { (path, TestSupport.digest(ofFile: try await scheduler.schedule(base + path).path)) }
            }
            try await eventually("two streams receive", within: .seconds(30)) {
                let status = await scheduler.status()
                return status.counts[.downloading] == 2 && status.items.allSatisfy { $0.completedBytes > 0 }
            }
            // The forced item cannot pause a stream of the shared connection to make room: it
            // waits for one to end, rather than run as a third beside two that still receive.
            let forced = try await scheduler.schedule(base + "/slow/forced.bin", forced: true)
            #expect(TestSupport.digest(ofFile: forced.path) == expected["/slow/forced.bin"])
            for task in previews {
                let (path, digest) = try await task.cancellableValue
                #expect(digest == expected[path], "\(path)")
            }
        }
        let requests = server.requests()
        #expect(requests.contains { $0.status == 429 }, "the host throttled")
        #expect(server.peakConcurrency(status: 200) <= 2)
        // Each file asked for whole once: no stream was stopped and resumed by Range.
        #expect(requests.filter { $0.status == 200 }.count == expected.count)
        #expect(!requests.contains { $0.status == 206 })
        #expect(requests.allSatisfy { $0.protocol == "HTTP/2.0" })
    }

    @Test func aHoldAskedForBeforeTheResponseIsNotAppliedToAnHTTP2Stream() async throws {
        let server = try await NginxServer.start()
        let expected = TestSupport.digest(try server.addFile("held.bin", size: 1 << 20))
        let engine = TransferEngine(configuration: .init(certificateAuthorities: server.certificate))
        let id = TransferID.next()
        let base = server.baseURL
        engine.pause(id)
        // Held on HTTP/1.1 until resumed (TransferEngineTests); on HTTP/2 it goes on, never resumed.
        let response = try await withTimeout(.seconds(10)) {
            try await engine.perform(TransferRequest(url: base + "/held.bin", destination: .memory(limit: 2 << 20)), id: id)
        }
        #expect(TestSupport.digest(response.body) == expected)
    }

    @Test func aThrottledStreamThatWasHeldGoesOnWhenResumed() async throws {
        let server = try await NginxServer.start()
        let expected = TestSupport.digest(try server.addFile("slow.bin", size: 1 << 20))
        // 256 KiB/s: the budget runs dry, and libcurl pauses the stream, whatever its protocol.
        let engine = TransferEngine(configuration: .init(
            maxBytesPerSecond: 256 << 10, certificateAuthorities: server.certificate))
        let id = TransferID.next()
        let base = server.baseURL
        let task = Task {
            try await engine.perform(TransferRequest(url: base + "/slow.bin", destination: .memory(limit: 2 << 20)), id: id)
        }
        try await Task.sleep(for: .milliseconds(500))
        engine.pause(id)
        try await Task.sleep(for: .milliseconds(500))
        engine.resume(id)
        let response = try await withTimeout(.seconds(15)) { try await task.value }
        #expect(TestSupport.digest(response.body) == expected)
    }

    private func withTimeout<T: Sendable>(
        _ limit: Duration, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            guard let first = try await group.next(), let value = first else {
                group.cancelAll()
                throw EventuallyTimeout(description: "no answer within \(limit)")
            }
            group.cancelAll()
            return value
        }
    }
}
