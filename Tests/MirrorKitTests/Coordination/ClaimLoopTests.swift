import Foundation
import Synchronization
import Testing
@testable import MirrorKit
@testable import MirrorPostgreSQL

/// This worker's coordinator, through which another worker claims every image queued before this
/// one takes its share, and stops (it never renews): its claims run out at the moment this worker,
/// finding nothing to take, looks whether others hold any. The race a loaded machine once gave a
/// real pair of workers: a claim that ran out between the empty take and the look.
final class ClaimsRunningOutAsLooked: WorkCoordinator {
    let inner: PostgresCoordinator
    let other: PostgresCoordinator
    let state: PostgresState
    /// The images the other worker claimed, and whether its claims have run out yet.
    let stolen = Mutex<(ids: Set<String>, ranOut: Bool)>(([], false))

    init(inner: PostgresCoordinator, other: PostgresCoordinator, state: PostgresState) {
        self.inner = inner
        self.other = other
        self.state = state
    }

    var workerID: String { inner.workerID }
    var leaseDuration: Duration { inner.leaseDuration }

    func register(source: String) async throws(MirrorError) -> Date { try await inner.register(source: source) }

    func heartbeat(_ figures: WorkerFigures, holding images: Set<String>) async throws(MirrorError) -> Set<String> {
        try await inner.heartbeat(figures, holding: images)
    }

    func finish(exitStatus: Int32) async { await inner.finish(exitStatus: exitStatus) }

    func leadCrawl(of source: String, since: Date) async throws(MirrorError) -> CrawlTurn {
        try await inner.leadCrawl(of: source, since: since)
    }

    func endCrawl(of source: String, completed: Bool) async throws(MirrorError) {
        try await inner.endCrawl(of: source, completed: completed)
    }

    func claimImages(limit: Int) async throws(MirrorError) -> [ClaimedImage] {
        if !stolen.withLock({ $0.ranOut }) {
            let taken = try await other.claimImages(limit: 1000)
            stolen.withLock { $0.ids.formUnion(taken.map(\.image.id)) }
        }
        return try await inner.claimImages(limit: limit)
    }

    func release(_ imageIDs: [String], park: Bool) async throws(MirrorError) {
        try await inner.release(imageIDs, park: park)
    }

    func othersHoldClaims() async throws(MirrorError) -> Bool {
        // Armed only once the other worker holds claims: a look that comes before the listing
        // has queued anything (a loaded machine) must not use the race up with nothing to run out.
        let first = stolen.withLock { stolen in
            guard !stolen.ranOut, !stolen.ids.isEmpty else { return false }
            stolen.ranOut = true
            return true
        }
        if first {
            // The database's clock passes the other worker's leases, as it does once it stops renewing.
            try await state.execute("UPDATE images SET lease_until = now() - interval '1 second' WHERE claimed_by = \(other.workerID)")
        }
        return try await inner.othersHoldClaims()
    }

    func takeHostSlot(_ host: String, limit: Int) async throws(MirrorError) -> Int? {
        try await inner.takeHostSlot(host, limit: limit)
    }

    func releaseHostSlot(_ host: String, slot: Int) async { await inner.releaseHostSlot(host, slot: slot) }

    func workers() async throws(MirrorError) -> [WorkerStatus] { try await inner.workers() }
}

@Suite("A shared worker's claim loop", .timeLimit(.minutes(2)))
struct ClaimLoopTests {
    /// The worker ends only after a take that follows a look finding no live claim: a claim that
    /// ran out just before that look is taken and mirrored, not left to the next run.
    @Test(.enabled(if: PostgresServer.isAvailable, "PostgreSQL is not installed (scripts/setup installs it)"))
    func aClaimThatRunsOutAsTheWorkerLooksIsStillTaken() async throws {
        try await PostgresServer.with { postgres in
            try await TestSupport.withServer { server in
                server.addGeneratedTag("race", pages: 1, perPage: 6, albumEvery: 0, imageSize: 4 << 10)
                try await TestSupport.withTemporaryDirectory { dir in
                    let state = try await PostgresState(try PostgresLocation(postgres.url), logger: TestSupport.logger)
                    let other = PostgresCoordinator(state: state)
                    _ = try await other.register(source: "tag race")
                    let coordinator = ClaimsRunningOutAsLooked(inner: PostgresCoordinator(state: state), other: other, state: state)
                    let engine = TransferEngine()
                    let client = ImgurClient(apiBase: server.baseURL, clientID: "fixture", engine: engine, logger: TestSupport.logger)
                    let settings = TagRun.Settings(
                        crawl: TagCrawler.Options(tag: "race"), urls: MediaURLBuilder(mediaBase: server.baseURL, thumbnail: .medium),
                        retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5)))
                    let run = try TagRun(
                        directory: try MirrorDirectory(root: dir), client: client, engine: engine, settings: settings,
                        sharing: Sharing(state: state, coordinator: coordinator, maxPerHost: 4), logger: TestSupport.logger)
                    let summary = await run.run()
                    await state.close()
                    let stolen = coordinator.stolen.withLock { $0.ids }
                    #expect(!stolen.isEmpty, "the other worker held no claim: the race was not set up")
                    #expect(summary.isComplete, "\(summary)")
                    for id in server.generatedImageIDs("race") {
                        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("full/\(id).jpg").path), "\(id)")
                    }
                }
            }
        }
    }
}
