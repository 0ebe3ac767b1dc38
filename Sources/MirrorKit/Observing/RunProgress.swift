import Foundation
import Synchronization

/// What a run has done so far, updated as it goes: by the source (the crawl's page and budget),
/// by the job session (files found and settled), and from the scheduler (transfers in flight).
/// Readers (the terminal display, the metrics file, `status.json`) take snapshots.
package final class RunProgress: Sendable {
    /// The stage a run is at.
    package enum Phase: String, Sendable, Codable {
        case starting
        /// Reading the tag's listing (downloads run meanwhile).
        case crawling
        /// Reading the feed.
        case readingFeed = "reading feed"
        /// The listing is read: what is left is downloads.
        case downloading
        /// `new-file`: asking after files mirrored before.
        case revalidating
        case finished
    }

    /// Where a tag's crawl stands.
    package struct Crawl: Sendable, Codable, Equatable {
        /// The page being read.
        package var page = 0
        package var pagesRead = 0
        package var estimatedPages: Int?
        var apiCallsMade = 0
        /// Calls left this hour, as the API last said.
        package var apiCallsLeft: Int?
    }

    package struct Snapshot: Sendable, Codable, Equatable {
        package var phase: Phase = .starting
        package var startedAt = Date()
        /// Files the run has set out to have so far.
        package var filesKnown = 0
        /// Files settled: downloaded, present, unchanged, removed, failed or deferred.
        package var filesDone = 0
        package var filesDownloaded = 0
        package var filesFailed = 0
        var filesRemoved = 0
        /// Bytes received over the network this run, by finished transfers and those under way
        /// (not what partials held from earlier runs), as the scheduler last counted them.
        package var bytesReceived: Int64 = 0
        package var crawl: Crawl?
        /// The scheduler as it was last looked at.
        package var scheduler: SchedulerStatus?

        /// No more files will be found this run: the count of files known is final.
        package var allFilesKnown: Bool { phase == .downloading || phase == .finished }

        /// The forced transfers under way (full-size files, feed enclosures).
        var forcedInFlight: [SchedulerStatus.Item] {
            scheduler?.items.filter { $0.isForced && ($0.state == .downloading || $0.state == .paused) } ?? []
        }
    }

    private let state = Mutex(Snapshot())
    private let scheduler = Mutex<DownloadScheduler?>(nil)

    init() {}

    package var snapshot: Snapshot { state.withLock { $0 } }

    func update(_ change: (inout Snapshot) -> Void) {
        state.withLock { change(&$0) }
    }

    func enter(_ phase: Phase) {
        update { $0.phase = phase }
    }

    /// Has the crawl's figures kept up to date (see ``Crawl``).
    func updateCrawl(_ change: (inout Crawl) -> Void) {
        update { snapshot in
            var crawl = snapshot.crawl ?? Crawl()
            change(&crawl)
            snapshot.crawl = crawl
        }
    }

    /// Where ``refresh()`` reads the transfers in flight.
    func watch(_ scheduler: DownloadScheduler) {
        self.scheduler.withLock { $0 = scheduler }
    }

    /// Takes a fresh look at the transfers in flight, and returns the snapshot.
    @discardableResult
    package func refresh() async -> Snapshot {
        if let scheduler = scheduler.withLock({ $0 }) {
            let status = await scheduler.status()
            update { snapshot in
                // Two readers refresh (the status file, the terminal): an older look never
                // replaces a newer one, and the count of bytes never goes back.
                guard status.sequence > snapshot.scheduler?.sequence ?? 0 else { return }
                snapshot.scheduler = status
                snapshot.bytesReceived = max(snapshot.bytesReceived, status.receivedBytes)
            }
        }
        return snapshot
    }
}
