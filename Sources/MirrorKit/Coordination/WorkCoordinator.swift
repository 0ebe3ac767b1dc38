import FoundationEssentials

/// How workers that share one mirror (processes on one host, cron jobs on several) divide the
/// work, through the state they share: one worker at a time crawls a source, each image is
/// downloaded by the worker that claimed it, and the connections to each media host are counted
/// across them all. Every claim is a lease: a worker renews its leases while it works, and a
/// worker that dies (killed, its host down) stops renewing them, so they run out and another
/// worker takes its work over, resuming its partial files from the shared directory.
///
/// Each call finishes even when its caller is cancelled: a take cut short after its commit, or a
/// release never sent, would leave a lease no one lets go, and a cancelled run must still record
/// what it did.
package protocol WorkCoordinator: Sendable {
    /// This worker, as other workers and `mirror status` see it: `host:pid:nonce`.
    var workerID: String { get }
    /// How long a claim holds unless renewed; leases are renewed three times within it.
    var leaseDuration: Duration { get }

    /// Says this worker is at work on `source`; returns when it started, by the shared clock.
    func register(source: String) async throws(MirrorError) -> Date
    /// Renews this worker's leases and says what it has done; returns the images whose claims it
    /// has lost (not renewed in time, and taken over since): it must stop working on them.
    func heartbeat(_ figures: WorkerFigures, holding images: Set<String>) async throws(MirrorError) -> Set<String>
    /// Says this worker has ended, releasing whatever it still holds.
    func finish(exitStatus: Int32) async

    /// Takes the lease on crawling `source`: `.lead` when this worker is to crawl it, `.done` when
    /// another worker crawled it to its end since `since`, `.busy` while another is crawling.
    func leadCrawl(of source: String, since: Date) async throws(MirrorError) -> CrawlTurn
    /// Lets go of the crawl of `source`; `completed` when it ended on its own (not cut by a
    /// cancel or a failure), so other workers of this round need not crawl it again.
    func endCrawl(of source: String, completed: Bool) async throws(MirrorError)

    /// Claims up to `limit` images found and not yet mirrored, oldest first, that no live claim
    /// holds: unclaimed ones, and those whose claim ran out. Each take has a new fencing token.
    func claimImages(limit: Int) async throws(MirrorError) -> [ClaimedImage]
    /// Lets go of claimed images not mirrored; `park` keeps any worker from claiming them again
    /// for a while (they failed: a later run tries them).
    func release(_ imageIDs: [String], park: Bool) async throws(MirrorError)
    /// Whether another live worker still holds claims on images: this one waits, in case they
    /// run out.
    func othersHoldClaims() async throws(MirrorError) -> Bool

    /// Takes one of the `limit` connection slots the whole cluster may use on `host`; nil when
    /// all are taken.
    func takeHostSlot(_ host: String, limit: Int) async throws(MirrorError) -> Int?
    func releaseHostSlot(_ host: String, slot: Int) async

    /// The workers that have worked on this mirror, live ones first.
    func workers() async throws(MirrorError) -> [WorkerStatus]
}

/// Whether a worker is to crawl a source.
package enum CrawlTurn: Sendable, Equatable {
    case lead
    case done
    case busy
}

/// What a worker has done this run, as its heartbeat reports it.
package struct WorkerFigures: Sendable, Equatable {
    package var filesDone: Int
    package var bytes: Int64
    package var bytesPerSecond: Double
}

/// A worker as `mirror status` shows it.
package struct WorkerStatus: Sendable, Codable, Equatable {
    package var id: String
    package var host: String
    package var pid: Int
    package var source: String
    package var startedAt: Date
    package var heartbeatAt: Date
    /// Live: it renewed its lease in time and has not ended.
    package var live: Bool
    package var endedAt: Date?
    package var exitStatus: Int?
    /// Images it holds claims on now.
    package var claims: Int
    package var filesDone: Int
    package var bytes: Int64
    package var bytesPerSecond: Double

    package init(id: String, host: String, pid: Int, source: String, startedAt: Date, heartbeatAt: Date, live: Bool, endedAt: Date? = nil, exitStatus: Int? = nil, claims: Int, filesDone: Int, bytes: Int64, bytesPerSecond: Double) {
        self.id = id
        self.host = host
        self.pid = pid
        self.source = source
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.live = live
        self.endedAt = endedAt
        self.exitStatus = exitStatus
        self.claims = claims
        self.filesDone = filesDone
        self.bytes = bytes
        self.bytesPerSecond = bytesPerSecond
    }
}
