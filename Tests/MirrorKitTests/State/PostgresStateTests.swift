import Foundation
import Logging
import Synchronization
import Testing
@testable import MirrorKit
@testable import MirrorPostgreSQL

/// The state in a real PostgreSQL server: migrations, the records a run keeps, and the claims,
/// leases and slots workers divide their work by.
@Suite("PostgreSQL state: migrations, records, claims and leases", .timeLimit(.minutes(2)))
struct PostgresStateTests {
    private func withState(
        lease: Duration = .seconds(30), _ body: (PostgresServer, PostgresState) async throws -> Void
    ) async throws {
        try await PostgresServer.with { server in
            let state = try await PostgresState(try PostgresLocation(server.url), logger: TestSupport.logger)
            do {
                try await body(server, state)
                await state.close()
            } catch {
                await state.close()
                throw error
            }
        }
    }

    /// What the database's clock passing `coordinator`'s leases does: they end in the past, as
    /// they would had it stopped renewing them (the leases are the database's time, not ours).
    private func expireLeases(of coordinator: PostgresCoordinator, in state: PostgresState) async throws {
        let worker = coordinator.workerID
        try await state.execute("UPDATE images SET lease_until = now() - interval '1 second' WHERE claimed_by = \(worker)")
        try await state.execute("UPDATE leases SET lease_until = now() - interval '1 second' WHERE holder = \(worker)")
        try await state.execute("UPDATE workers SET lease_until = now() - interval '1 second' WHERE id = \(worker)")
    }

    private func found(_ id: String) -> FoundImage {
        FoundImage(id: id, payload: #"{"id":"\#(id)"}"#, albumID: nil)
    }

    @Test(.enabled(if: PostgresServer.isAvailable, "PostgreSQL is not installed (scripts/setup installs it)"))
    func migrationsRunOnceAndANewerSchemaIsRefused() async throws {
        try await withState { server, state in
            #expect(try await state.schemaVersion() == PostgresSchema.latest)
            // A second worker opening the same database migrates nothing and sees the same version.
            let second = try await PostgresState(try PostgresLocation(server.url), logger: TestSupport.logger)
            #expect(try await second.schemaVersion() == PostgresSchema.latest)
            try await second.execute("INSERT INTO schema_migrations (version) VALUES (\(PostgresSchema.latest + 1))")
            await second.close()
            let error = await #expect(throws: MirrorError.self) {
                _ = try await PostgresState(try PostgresLocation(server.url), logger: TestSupport.logger)
            }
            #expect(error?.description.contains("schema version \(PostgresSchema.latest + 1)") == true, "\(String(describing: error))")
        }
    }

    @Test(.enabled(if: PostgresServer.isAvailable, "PostgreSQL is not installed (scripts/setup installs it)"))
    func workersClaimDisjointImagesAndTakeOverClaimsThatRanOut() async throws {
        try await withState { _, state in
            let cursor = CrawlCursor(source: "s")
            _ = try await state.recordPage(
                ListedPage(newEntryIDs: [], images: (0..<10).map { found("i\($0)") }, pendingAlbumIDs: [], cursor: cursor, lister: Lister(listing: "s", owner: "s", wants: [])),
                source: "s")
            let first = PostgresCoordinator(state: state, leaseDuration: .seconds(30))
            let second = PostgresCoordinator(state: state, leaseDuration: .seconds(30))
            _ = try await first.register(source: "tag s")
            _ = try await second.register(source: "tag s")
            // At once, from two workers: SKIP LOCKED gives each its own rows.
            async let a = first.claimImages(limit: 4)
            async let b = second.claimImages(limit: 4)
            let (claimedA, claimedB) = try await (a, b)
            #expect(claimedA.count == 4 && claimedB.count == 4)
            #expect(Set(claimedA.map(\.image.id)).isDisjoint(with: claimedB.map(\.image.id)))
            #expect(try await second.othersHoldClaims())
            // The first stops renewing (killed): its claims run out (the database's clock passes their
            // lease) and go to the second.
            try await expireLeases(of: first, in: state)
            let taken = try await second.claimImages(limit: 10)
            #expect(Set(taken.map(\.image.id)) == Set(claimedA.map(\.image.id)).union(["i8", "i9"]))
            #expect(try await !second.othersHoldClaims())
            // The first, back, hears that its claims are gone.
            let lost = try await first.heartbeat(
                WorkerFigures(filesDone: 0, bytes: 0, bytesPerSecond: 0), holding: Set(claimedA.map(\.image.id)))
            #expect(lost == Set(claimedA.map(\.image.id)))
            // A failure is parked: no one claims it again this round; a cancel is anyone's at once.
            try await second.release(["i8"], park: true)
            try await second.release(["i9"], park: false)
            #expect(try await first.claimImages(limit: 10).map(\.image.id) == ["i9"])
            // Done images are nobody's.
            try await state.markImagesDone(claimedB.map(\.image.id))
            let workers = try await second.workers()
            #expect(workers.count == 2)
            #expect(workers.first { $0.id == second.workerID }?.claims == 4)
        }
    }

    @Test(.enabled(if: PostgresServer.isAvailable, "PostgreSQL is not installed (scripts/setup installs it)"))
    func aCommitNamesItsFileOnlyUnderTheTokenItsClaimWasTakenWith() async throws {
        try await withState { _, state in
            _ = try await state.recordPage(
                ListedPage(newEntryIDs: [], images: [found("i0")], pendingAlbumIDs: [], cursor: CrawlCursor(source: "s"), lister: Lister(listing: "s", owner: "s", wants: [])),
                source: "s")
            let first = PostgresCoordinator(state: state, leaseDuration: .seconds(30))
            let second = PostgresCoordinator(state: state, leaseDuration: .seconds(30))
            let file = MirroredFile(path: "full/i0.jpg", item: "u", source: "tag s", url: "u", etag: nil, lastModified: nil, bytes: 1, md5: nil)
            let named = Mutex(0)
            let naming = { @Sendable () async throws(MirrorError) -> MirroredFile? in
                named.withLock { $0 += 1 }
                return file
            }
            let old = try #require(try await first.claimImages(limit: 1).first?.fence)
            #expect(!old.takenOver)
            // The first is stopped past its lease; the second takes the claim over, with a new token.
            try await expireLeases(of: first, in: state)
            let current = try #require(try await second.claimImages(limit: 1).first?.fence)
            #expect(current.takenOver && current.token > old.token)
            // The first, let go, names nothing.
            let refused = await #expect(throws: MirrorError.self) { try await state.recordNamed(fencedBy: old, naming) }
            #expect(refused == .claimTaken("image i0"))
            #expect(named.withLock { $0 } == 0)
            #expect(try await state.latestFile(of: "u") == nil)
            // The claim comes back to the first (the second stopped in its turn): the first's old
            // token is no better than the second's.
            try await expireLeases(of: second, in: state)
            let again = try #require(try await first.claimImages(limit: 1).first?.fence)
            for stale in [old, current] {
                let error = await #expect(throws: MirrorError.self) { try await state.recordNamed(fencedBy: stale, naming) }
                #expect(error == .claimTaken("image i0"))
            }
            // The holder's commit names and records its file; while it does, the claim is not
            // taken over even though its lease has run out.
            try await expireLeases(of: first, in: state)
            let committed = try await state.recordNamed(fencedBy: again) { () async throws(MirrorError) -> MirroredFile? in
                named.withLock { $0 += 1 }
                let taken: [ClaimedImage]
                do {
                    taken = try await second.claimImages(limit: 1)
                } catch {
                    Issue.record("\(error)")
                    return nil
                }
                #expect(taken.isEmpty, "\(taken.map(\.image.id))")
                return file
            }
            #expect(committed?.path == "full/i0.jpg")
            #expect(named.withLock { $0 } == 1)
            #expect(try await state.latestFile(of: "u")?.path == "full/i0.jpg")
        }
    }

    @Test(.enabled(if: PostgresServer.isAvailable, "PostgreSQL is not installed (scripts/setup installs it)"))
    func oneWorkerCrawlsAndTheHostSlotsAreCountedAcrossWorkers() async throws {
        try await withState { _, state in
            let started = Date(timeIntervalSinceNow: -1)
            let first = PostgresCoordinator(state: state, leaseDuration: .seconds(30))
            let second = PostgresCoordinator(state: state, leaseDuration: .seconds(30))
            #expect(try await first.leadCrawl(of: "tag s", since: started) == .lead)
            #expect(try await second.leadCrawl(of: "tag s", since: started) == .busy)
            try await first.endCrawl(of: "tag s", completed: true)
            #expect(try await second.leadCrawl(of: "tag s", since: started) == .done)
            // A crawl whose holder died is taken over once its lease runs out.
            #expect(try await first.leadCrawl(of: "tag t", since: started) == .lead)
            try await expireLeases(of: first, in: state)
            #expect(try await second.leadCrawl(of: "tag t", since: started) == .lead)

            let one = try await first.takeHostSlot("i.imgur.com", limit: 2)
            let two = try await second.takeHostSlot("i.imgur.com", limit: 2)
            #expect(one != nil && two != nil && one != two)
            #expect(try await second.takeHostSlot("i.imgur.com", limit: 2) == nil)
            #expect(try await second.takeHostSlot("other.example", limit: 2) != nil)
            await first.releaseHostSlot("i.imgur.com", slot: one!)
            #expect(try await second.takeHostSlot("i.imgur.com", limit: 2) == one)
        }
    }

    @Test(.enabled(if: PostgresServer.isAvailable, "PostgreSQL is not installed (scripts/setup installs it)"))
    func aReadOnlyOpenChangesNothing() async throws {
        try await PostgresServer.with { server in
            let location = try PostgresLocation(server.url)
            let empty = await #expect(throws: MirrorError.self) {
                _ = try await PostgresState(location, readOnly: true, logger: TestSupport.logger)
            }
            #expect(empty == .noMirrorState(
                path: location.description,
                problem: "no mirror state here (the database has no mirror tables; a run with this --state creates them)"))
            let writer = try await PostgresState(location, logger: TestSupport.logger)
            await writer.close()
            let reader = try await PostgresState(location, readOnly: true, logger: TestSupport.logger)
            #expect(try await reader.schemaVersion() == PostgresSchema.latest)
            let write = await #expect(throws: MirrorError.self) {
                try await reader.record(MirroredFile(path: "full/a.jpg", item: "a", source: "tag t", url: "u", etag: nil, lastModified: nil, bytes: 1, md5: nil))
            }
            #expect(write?.description.contains("read-only") == true, "\(String(describing: write))")
            await reader.close()

            // A database its workers have not yet migrated (the schema before fencing) is read as
            // it is, and left as it is.
            let downgrade = try await PostgresState(location, logger: TestSupport.logger)
            try await downgrade.execute("DELETE FROM schema_migrations WHERE version = 5")
            try await downgrade.execute("ALTER TABLE images DROP COLUMN fence")
            try await downgrade.execute("DROP SEQUENCE claim_fences")
            await downgrade.close()
            let older = try await PostgresState(location, readOnly: true, logger: TestSupport.logger)
            #expect(try await older.schemaVersion() == 4)
            _ = try await older.lastRuns()
            _ = try await older.versionFigures()
            _ = try await PostgresCoordinator(state: older).workers()
            await older.close()
        }
    }

    @Test func aBadStateURLIsNamedWithoutItsPassword() throws {
        for (text, expected) in [
            ("postgresql://u:s3cret@/db", "names no host"),
            ("postgresql://u:s3cret@h", "names no database"),
            ("postgresql://u:s3cret@h/db?connect_timeout=3", "'connect_timeout' is not supported"),
            ("mysql://u:s3cret@h/db", "is not a postgresql://"),
        ] {
            let error = #expect(throws: MirrorError.self) { _ = try PostgresLocation(text, environment: [:]) }
            #expect(error?.description.contains(expected) == true, "\(String(describing: error))")
            #expect(error?.description.contains("s3cret") == false)
        }
        let location = try PostgresLocation("postgresql://u:s3cret@db.example:6543/mirror")
        #expect(location.description == "postgresql://u@db.example:6543/mirror")
        #expect(location.password == "s3cret")
    }

    @Test func aServerThatIsNotThereIsAClearErrorNotAHang() async throws {
        let port = try NginxServer.freePort()
        let start = ContinuousClock.now
        let error = await #expect(throws: MirrorError.self) {
            _ = try await PostgresState(try PostgresLocation("postgresql://u@127.0.0.1:\(port)/db"), logger: TestSupport.logger)
        }
        #expect(error?.description.contains("postgresql://u@127.0.0.1:\(port)/db") == true, "\(String(describing: error))")
        #expect(ContinuousClock.now - start < .seconds(30))
    }
}

/// A transport whose fetches wait until cancelled.
private struct HangingTransport: DownloadTransport {
    func fetch(
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void, receiving: @escaping @Sendable (Bool) -> Void
    ) async throws(DownloadError) -> FetchedFile {
        // Suspended, not polling: the cancel handler ends the wait.
        let (stream, continuation) = AsyncStream<Never>.makeStream()
        await withTaskCancellationHandler {
            for await _ in stream {}
        } onCancel: {
            continuation.finish()
        }
        throw DownloadError(url: url, reason: .transfer(.cancelled))
    }

    func pause(_ id: TransferID) {}
    func resume(_ id: TransferID) {}
    func partialLength(of url: String) -> Int64 { 0 }
    func discardPartial(of url: String) {}
}

@Suite("Cluster-wide host slots", .timeLimit(.minutes(1)))
struct ClusterHostGateTests {
    @Test(.enabled(if: PostgresServer.isAvailable, "PostgreSQL is not installed (scripts/setup installs it)"))
    func aCancelledFetchGivesItsSlotBackAndAWaitingOneGetsIt() async throws {
        try await PostgresServer.with { server in
            let state = try await PostgresState(try PostgresLocation(server.url), logger: TestSupport.logger)
            let coordinator = PostgresCoordinator(state: state)
            let gate = ClusterHostGate(inner: HangingTransport(), coordinator: coordinator, limit: 1, pollInterval: .milliseconds(20))
            let first = Task { try await gate.fetch("http://cdn.example/a", id: .next(), expectedSize: nil, held: nil, progress: { _ in }, receiving: { _ in }) }
            let other = PostgresCoordinator(state: state)
            try await eventually("the first fetch holds the slot") {
                guard let slot = try? await other.takeHostSlot("cdn.example", limit: 1) else { return true }
                await other.releaseHostSlot("cdn.example", slot: slot)
                return false
            }
            let second = Task { try await gate.fetch("http://cdn.example/b", id: .next(), expectedSize: nil, held: nil, progress: { _ in }, receiving: { _ in }) }
            try await Task.sleep(for: .milliseconds(200))
            // Cancelled while it fetches, and the one waiting for a slot: both give theirs back.
            first.cancel()
            _ = await first.result
            try await eventually("the waiting fetch gets the slot given back") {
                guard let slot = try? await other.takeHostSlot("cdn.example", limit: 1) else { return true }
                await other.releaseHostSlot("cdn.example", slot: slot)
                return false
            }
            second.cancel()
            _ = await second.result
            #expect(try await other.takeHostSlot("cdn.example", limit: 1) == 0)
            await state.close()
        }
    }
}
