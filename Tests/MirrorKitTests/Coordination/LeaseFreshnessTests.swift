import FixtureServer
import Foundation
import Synchronization
import Testing
@testable import MirrorKit

/// A worker let go after being stopped past its lease touches no partial by its name before its
/// next renewal says which of its claims went to another worker.
@Suite("Lease freshness: a stopped worker waits to hear what it lost", .timeLimit(.minutes(1)))
struct LeaseFreshnessTests {
    @Test func freshLeasesLetAtOnceStaleOnesWaitForTheRenewalAndLostClaimsNever() async throws {
        let clock = TestClock()
        let leases = LeaseFreshness(leaseDuration: .seconds(3), clock: clock)
        #expect(await leases.mayTouch("u1"))
        // Stopped for twice the lease: nothing is known until the next renewal.
        clock.advance(by: .seconds(6))
        let answered = Mutex<[String: Bool]>([:])
        let waiting = Task {
            for url in ["u1", "u2"] {
                let answer = await leases.mayTouch(url)
                answered.withLock { $0[url] = answer }
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(answered.withLock { $0.isEmpty })
        // The renewal finds u1's claim lost.
        leases.renewed(began: clock.elapsed, lost: ["u1"])
        await waiting.value
        #expect(answered.withLock { $0 } == ["u1": false, "u2": true])
        // Claimed again later (the other worker let it go): this worker's to touch again.
        leases.reclaimed(["u1"])
        #expect(await leases.mayTouch("u1"))
        // A renewal that began before the stop says nothing of now.
        clock.advance(by: .seconds(6))
        leases.renewed(began: clock.elapsed - .seconds(5), lost: [])
        let cancelled = Task { await leases.mayTouch("u2") }
        try await Task.sleep(for: .milliseconds(100))
        cancelled.cancel()
        #expect(await cancelled.value == false)
    }

    @Test func aDownloadWhosePartialIsNoLongerOursAsksNothingAndTouchesNothing() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                server.addMedia(path: "/taken.bin", size: 300_000)
                let url = server.baseURL + "/taken.bin"
                let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
                let held = Array(try #require(server.content(of: "/taken.bin")).prefix(100_000))
                try TestSupport.write(held, to: partials.partPath(for: url))
                try partials.save(PartialRecord(url: url, etag: server.etag(of: "/taken.bin"), totalLength: 300_000))
                let downloader = Downloader(
                    engine: TransferEngine(), partials: partials, retry: RetryPolicy(maxAttempts: 1),
                    mayTouchPartial: { _ in false }, logger: TestSupport.logger)
                let error = await #expect(throws: DownloadError.self) { try await downloader.fetch(url) }
                #expect(error?.reason == .transfer(.cancelled))
                #expect(server.requestCount(path: "/taken.bin") == 0)
                #expect(TestSupport.bytes(at: partials.partPath(for: url)) == held)
            }
        }
    }
}
