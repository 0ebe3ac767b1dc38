import Foundation
import MirrorKit
import PostgresNIO
import Synchronization

/// ``WorkCoordinator`` in the PostgreSQL state: claims are rows taken with
/// `SELECT … FOR UPDATE SKIP LOCKED` (two workers never wait on, nor take, the same row), each
/// with a lease in `lease_until` that its worker renews; the crawl lease and the host slots are
/// rows of their own. Every time is the server's `now()`.
package final class PostgresCoordinator: WorkCoordinator {
    package let workerID: String
    package let leaseDuration: Duration
    let state: PostgresState
    /// How long an image that failed is left alone before any worker claims it again.
    let parkDuration: Duration
    /// What this worker holds besides its images, as it knows it: the heartbeat renews these
    /// alone, so a lease whose release failed runs out rather than being renewed for ever.
    private let held = Mutex(Held())

    private struct Held {
        var crawls: Set<String> = []
        /// `host slot`.
        var slots: Set<String> = []
    }

    package init(state: PostgresState, leaseDuration: Duration = .seconds(30), parkDuration: Duration = .seconds(600)) {
        self.state = state
        self.leaseDuration = leaseDuration
        self.parkDuration = parkDuration
        let nonce = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        workerID = "\(state.hostName):\(getpid()):\(nonce)"
    }

    private var leaseSeconds: Double { leaseDuration.inSeconds }
    private var parkSeconds: Double { parkDuration.inSeconds }

    package func register(source: String) async throws(MirrorError) -> Date {
        let rows = try await state.rows(
            """
            INSERT INTO workers (id, host, pid, source, started_at, heartbeat_at, lease_until)
            VALUES (\(workerID), \(state.hostName), \(Int64(getpid())), \(source), now(), now(),
                now() + make_interval(secs => \(leaseSeconds)))
            RETURNING started_at
            """)
        guard let row = rows.first else { return Date() }
        return try state.decode(row, Date.self, column: "started_at")
    }

    package func heartbeat(_ figures: WorkerFigures, holding images: Set<String>) async throws(MirrorError) -> Set<String> {
        let (workerID, lease) = (workerID, leaseSeconds)
        let (crawls, slots) = held.withLock { (Array($0.crawls), Array($0.slots)) }
        let ids = Array(images)
        let renewed = try await state.transaction { connection, logger -> [String] in
            try await connection.query(
                """
                UPDATE workers SET heartbeat_at = now(), lease_until = now() + make_interval(secs => \(lease)),
                    files_done = \(figures.filesDone), bytes = \(figures.bytes), bytes_per_second = \(figures.bytesPerSecond)
                WHERE id = \(workerID)
                """, logger: logger)
            try await connection.query(
                """
                UPDATE leases SET lease_until = now() + make_interval(secs => \(lease))
                WHERE holder = \(workerID) AND name = ANY(\(crawls))
                """, logger: logger)
            try await connection.query(
                """
                UPDATE host_slots SET lease_until = now() + make_interval(secs => \(lease))
                WHERE holder = \(workerID) AND host || ' ' || slot = ANY(\(slots))
                """, logger: logger)
            let rows = try await connection.query(
                """
                UPDATE images SET lease_until = now() + make_interval(secs => \(lease))
                WHERE claimed_by = \(workerID) AND NOT done AND id = ANY(\(ids)) RETURNING id
                """, logger: logger)
            var ids: [String] = []
            for try await id in rows.decode(String.self) { ids.append(id) }
            return ids
        }
        return images.subtracting(renewed)
    }

    package func finish(exitStatus: Int32) async {
        let workerID = workerID
        _ = try? await state.transaction { connection, logger in
            try await connection.query(
                "UPDATE images SET claimed_by = NULL, lease_until = NULL WHERE claimed_by = \(workerID) AND NOT done",
                logger: logger)
            try await connection.query("UPDATE leases SET holder = NULL, lease_until = NULL WHERE holder = \(workerID)", logger: logger)
            try await connection.query(
                "UPDATE host_slots SET holder = NULL, lease_until = NULL WHERE holder = \(workerID)", logger: logger)
            try await connection.query(
                """
                UPDATE workers SET ended_at = now(), heartbeat_at = now(), lease_until = NULL, exit_status = \(Int64(exitStatus))
                WHERE id = \(workerID)
                """, logger: logger)
        }
    }

    package func leadCrawl(of source: String, since: Date) async throws(MirrorError) -> CrawlTurn {
        let name = "crawl \(source)"
        let taken = try await state.rows(
            """
            INSERT INTO leases (name, holder, lease_until) VALUES (\(name), \(workerID), now() + make_interval(secs => \(leaseSeconds)))
            ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
            WHERE leases.holder IS NULL OR leases.lease_until < now() OR leases.holder = excluded.holder
            RETURNING finished_at
            """)
        guard let row = taken.first else { return .busy }
        if let finished = try state.decode(row, Date?.self, column: "finished_at") as Date?, finished >= since {
            try await state.execute("UPDATE leases SET holder = NULL, lease_until = NULL WHERE name = \(name) AND holder = \(workerID)")
            return .done
        }
        held.withLock { _ = $0.crawls.insert(name) }
        return .lead
    }

    package func endCrawl(of source: String, completed: Bool) async throws(MirrorError) {
        held.withLock { _ = $0.crawls.remove("crawl \(source)") }
        try await state.execute(
            """
            UPDATE leases SET holder = NULL, lease_until = NULL,
                finished_at = CASE WHEN \(completed) THEN now() ELSE finished_at END
            WHERE name = \("crawl \(source)") AND holder = \(workerID)
            """)
    }

    package func claimImages(limit: Int) async throws(MirrorError) -> [ClaimedImage] {
        // `taken` reads each row as it was before the update: who held it, if anyone, and let
        // its lease run out.
        let rows = try await state.rows(
            """
            UPDATE images SET claimed_by = \(workerID), lease_until = now() + make_interval(secs => \(leaseSeconds)),
                fence = nextval('claim_fences'), taken_over = images.taken_over OR taken.claimed_by IS NOT NULL
            FROM (
                SELECT id, claimed_by FROM images WHERE NOT done AND (lease_until IS NULL OR lease_until < now())
                ORDER BY seq LIMIT \(limit) FOR UPDATE SKIP LOCKED) AS taken
            WHERE images.id = taken.id
            RETURNING images.seq, images.id, images.image, images.album_id, images.fence, images.taken_over
            """)
        var claimed: [(Int64, ClaimedImage)] = []
        for row in rows {
            let seq = try state.decode(row, Int64.self, column: "seq")
            let (id, payload) = (try state.decode(row, String.self, column: "id"), try state.decode(row, String.self, column: "image"))
            let albumID = try state.decode(row, String?.self, column: "album_id")
            // A claim of the image ran out on its holder once (this worker too): that worker may
            // still be writing the image's partials. Released since, it is still so: the one who
            // took it over may have let it go before its download began.
            let fence = CommitFence(
                claim: id, token: try state.decode(row, Int64.self, column: "fence"), holder: workerID,
                takenOver: try state.decode(row, Bool.self, column: "taken_over"))
            claimed.append((seq, ClaimedImage(image: FoundImage(id: id, payload: payload, albumID: albumID), fence: fence)))
        }
        // RETURNING keeps no order: the oldest found go first, as in one worker's run.
        return claimed.sorted { $0.0 < $1.0 }.map(\.1)
    }

    package func release(_ imageIDs: [String], park: Bool) async throws(MirrorError) {
        guard !imageIDs.isEmpty else { return }
        let parkSeconds = park ? parkSeconds : 0
        try await state.execute(
            """
            UPDATE images SET claimed_by = NULL,
                lease_until = CASE WHEN \(park) THEN now() + make_interval(secs => \(parkSeconds)) ELSE NULL END
            WHERE id = ANY(\(imageIDs)) AND claimed_by = \(workerID) AND NOT done
            """)
    }

    package func othersHoldClaims() async throws(MirrorError) -> Bool {
        !(try await state.rows(
            """
            SELECT 1 FROM images WHERE NOT done AND claimed_by IS NOT NULL AND claimed_by <> \(workerID)
                AND lease_until > now() LIMIT 1
            """)).isEmpty
    }

    package func takeHostSlot(_ host: String, limit: Int) async throws(MirrorError) -> Int? {
        let (workerID, lease) = (workerID, leaseSeconds)
        let slot = try await state.transaction { connection, logger -> Int? in
            try await connection.query(
                """
                INSERT INTO host_slots (host, slot) SELECT \(host), slot FROM generate_series(0, \(limit - 1)) AS slot
                ON CONFLICT DO NOTHING
                """, logger: logger)
            let rows = try await connection.query(
                """
                UPDATE host_slots SET holder = \(workerID), lease_until = now() + make_interval(secs => \(lease))
                WHERE (host, slot) = (
                    SELECT host, slot FROM host_slots
                    WHERE host = \(host) AND slot < \(limit) AND (holder IS NULL OR lease_until < now())
                    ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING slot
                """, logger: logger)
            for try await slot in rows.decode(Int.self) { return slot }
            return nil
        }
        if let slot { held.withLock { _ = $0.slots.insert("\(host) \(slot)") } }
        return slot
    }

    package func releaseHostSlot(_ host: String, slot: Int) async {
        held.withLock { _ = $0.slots.remove("\(host) \(slot)") }
        try? await state.execute(
            "UPDATE host_slots SET holder = NULL, lease_until = NULL WHERE host = \(host) AND slot = \(slot) AND holder = \(workerID)")
    }

    package func workers() async throws(MirrorError) -> [WorkerStatus] {
        let rows = try await state.rows(
            """
            SELECT w.id, w.host, w.pid, w.source, w.started_at, w.heartbeat_at,
                w.ended_at IS NULL AND w.lease_until > now() AS live, w.ended_at, w.exit_status,
                (SELECT count(*) FROM images WHERE claimed_by = w.id AND NOT done AND lease_until > now()) AS claims,
                w.files_done, w.bytes, w.bytes_per_second
            FROM workers AS w
            ORDER BY (w.ended_at IS NULL AND w.lease_until > now()) DESC, w.heartbeat_at DESC LIMIT 50
            """)
        var workers: [WorkerStatus] = []
        for row in rows {
            func column<T: PostgresDecodable>(_ name: String, _ type: T.Type = T.self) throws(MirrorError) -> T {
                try state.decode(row, T.self, column: name)
            }
            workers.append(WorkerStatus(
                id: try column("id"), host: try column("host"), pid: try column("pid"), source: try column("source"),
                startedAt: try column("started_at"), heartbeatAt: try column("heartbeat_at"), live: try column("live"),
                endedAt: try column("ended_at"), exitStatus: try column("exit_status"), claims: try column("claims"),
                filesDone: try column("files_done"), bytes: try column("bytes"), bytesPerSecond: try column("bytes_per_second")))
        }
        return workers
    }
}
