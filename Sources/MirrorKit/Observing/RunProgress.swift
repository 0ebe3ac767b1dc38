import FoundationEssentials
import Synchronization

/// What a run has done so far: a value folded from the run's events (``apply(_:)-(RunEvent)``)
/// and from looks at the scheduler (``apply(_:)-(SchedulerStatus)``), read by the terminal
/// display, the metrics file and `status.json`.
package struct RunProgress: Sendable, Codable, Equatable {
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

    package var phase: RunPhase = .starting
    /// The source being mirrored (`tag cats`), once the driver has started on one.
    package var source: String?
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

    package init() {}

    /// No more files will be found this run: the count of files known is final.
    package var allFilesKnown: Bool { phase == .downloading || phase == .finished }

    /// The forced transfers under way (full-size files, feed enclosures).
    var forcedInFlight: [SchedulerStatus.Item] {
        scheduler?.items.filter { $0.isForced && ($0.state == .downloading || $0.state == .paused) } ?? []
    }

    package mutating func apply(_ event: RunEvent) {
        switch event {
        case .source(let name):
            source = name
        case .phase(let phase):
            self.phase = phase
        case .fileKnown:
            filesKnown += 1
        case .fileSettled(let settlement):
            filesDone += 1
            switch settlement {
            case .downloaded: filesDownloaded += 1
            case .failed: filesFailed += 1
            case .removed: filesRemoved += 1
            case .other: break
            }
        case .crawlPage(let page, let estimatedPages):
            updateCrawl {
                $0.page = page
                $0.estimatedPages = estimatedPages
            }
        case .pagesRead(let pages):
            updateCrawl { $0.pagesRead = pages }
        case .apiCalls(let made, let left):
            updateCrawl {
                $0.apiCallsMade = made
                $0.apiCallsLeft = left
            }
        }
    }

    /// Takes in a look at the scheduler. Two readers look (the status file, the terminal): an
    /// older look never replaces a newer one, and the count of bytes never goes back.
    package mutating func apply(_ status: SchedulerStatus) {
        guard status.sequence > scheduler?.sequence ?? 0 else { return }
        scheduler = status
        bytesReceived = max(bytesReceived, status.receivedBytes)
    }

    private mutating func updateCrawl(_ change: (inout Crawl) -> Void) {
        var crawl = crawl ?? Crawl()
        change(&crawl)
        self.crawl = crawl
    }
}

/// Keeps a run's ``RunProgress`` as its events come: the observer the command gives the driver.
package final class ProgressTracker: RunObserver {
    private let progress = Mutex(RunProgress())

    package init() {}

    package func observe(_ event: RunEvent) {
        progress.withLock { $0.apply(event) }
    }

    package var snapshot: RunProgress { progress.withLock { $0 } }

    /// Takes a fresh look at the driver's transfers in flight, and returns the progress.
    @discardableResult
    package func refresh(from driver: MirrorDriver) async -> RunProgress {
        let status = await driver.schedulerStatus()
        return progress.withLock { progress in
            progress.apply(status)
            return progress
        }
    }
}
