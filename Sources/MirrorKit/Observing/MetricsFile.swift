import FoundationEssentials
import Glibc
import Prometheus

/// A run's figures as a Prometheus text exposition file, for node_exporter's textfile collector:
/// rewritten every few seconds while the run goes and once at its end, always whole (written
/// beside and renamed over), so the collector never reads half a file.
///
/// Every series carries `source="tag cats"` (or the feed), so one textfile directory can hold the
/// files of several mirrors. `mirror_last_success_timestamp_seconds` comes from the state
/// database's runs, so it survives failing runs: the figure to alert on.
package struct MetricsFile: Sendable {
    /// One moment of a run, or its end.
    package struct Figures: Sendable, Equatable {
        var source: String
        var startedAt: Date
        /// When the last run ended, and how (while one goes on, the run before it).
        package var endedAt: Date?
        package var exitStatus: Int32?
        package var inProgress = false
        /// The last run (of the same source) that ended with status 0.
        var lastSuccess: Date?
        package var filesDownloaded = 0
        package var bytesDownloaded: Int64 = 0
        package var filesFailed = 0
        package var filesRemoved = 0
        var apiCallsMade: Int?
        var apiCallsLeft: Int?
        /// The crawl's next page; nil for a feed, or a listing read to its end.
        package var crawlNextPage: Int?
        package var crawlEstimatedPages: Int?
        package var bytesPerSecond: Double = 0

        init(source: String, startedAt: Date) {
            self.source = source
            self.startedAt = startedAt
        }

        /// The figures of a run that has ended: what its record says, with the crawl's calls and
        /// budget from its progress and the cursor where it left it.
        package init(finished run: RunRecord, progress: RunProgress, listing: ListingProgress?, lastSuccess: Date?) {
            self.init(source: run.source, startedAt: run.startedAt)
            endedAt = run.endedAt
            exitStatus = run.exitStatus
            self.lastSuccess = run.exitStatus == 0 ? run.endedAt : lastSuccess
            filesDownloaded = run.filesDownloaded
            bytesDownloaded = run.bytesDownloaded
            filesFailed = run.filesFailed
            filesRemoved = run.filesRemoved
            bytesPerSecond = run.bytesPerSecond
            apiCallsMade = progress.crawl?.apiCallsMade
            apiCallsLeft = progress.crawl?.apiCallsLeft
            crawlNextPage = listing.map { $0.nextPage } ?? progress.crawl?.page
            crawlEstimatedPages = listing.map { $0.estimatedPages } ?? progress.crawl?.estimatedPages
        }

        /// The figures of a run still going, from its progress. Its end and exit status are the
        /// previous run's, until it ends: an alert on them neither clears nor fires while it goes.
        package init(
            source: String, progress: RunProgress, previous: RunRecord?, lastSuccess: Date?, now: Date = Date()
        ) {
            self.init(source: source, startedAt: progress.startedAt)
            self.lastSuccess = lastSuccess
            endedAt = previous?.endedAt
            exitStatus = previous?.exitStatus
            inProgress = true
            filesDownloaded = progress.filesDownloaded
            bytesDownloaded = progress.bytesReceived
            filesFailed = progress.filesFailed
            filesRemoved = progress.filesRemoved
            apiCallsMade = progress.crawl?.apiCallsMade
            apiCallsLeft = progress.crawl?.apiCallsLeft
            crawlNextPage = progress.crawl?.page
            crawlEstimatedPages = progress.crawl?.estimatedPages
            let seconds = now.timeIntervalSince(progress.startedAt)
            bytesPerSecond = seconds > 0 ? Double(bytesDownloaded) / seconds : 0
        }
    }

    let path: String

    package init(path: String) {
        self.path = path
    }

    /// The exposition text of `figures`.
    static func render(_ figures: Figures) -> [UInt8] {
        let registry = PrometheusCollectorRegistry()
        let labels = [("source", URLUserinfo.redacted(figures.source))]
        func gauge(_ name: String, _ help: String, _ value: Double?) {
            guard let value else { return }
            // The unit is the name's last word where it is one, as Prometheus's naming asks.
            let unit = ["seconds", "bytes", "second"].first { name.hasSuffix("_" + $0) } ?? ""
            let descriptor = MetricNameDescriptor(
                namespace: "mirror", metricName: unit.isEmpty ? name : String(name.dropLast(unit.count + 1)),
                unitName: unit, helpText: help)
            registry.makeGauge(descriptor: descriptor, labels: labels).set(value)
        }
        // Whole seconds, cut as the state database keeps them: a last success read back from it
        // must equal the one written at the end of its run.
        func seconds(_ date: Date?) -> Double? { date.map { $0.timeIntervalSince1970.rounded(.down) } }
        gauge("run_in_progress", "1 while a run is going, 0 once it has ended.", figures.inProgress ? 1 : 0)
        gauge("last_run_start_timestamp_seconds", "When the last run started.", seconds(figures.startedAt))
        gauge("last_run_end_timestamp_seconds", "When the last run ended (while one goes on: the run before it).",
              seconds(figures.endedAt))
        gauge("last_run_exit_status",
              "The last run's exit status (0 all mirrored, 1 some files failed, 75 try later, ...; while one goes on: the run before it).",
              figures.exitStatus.map(Double.init))
        // 0 for never, so that "no success for hours" holds for a mirror that never had one.
        gauge("last_success_timestamp_seconds", "When a run last ended with exit status 0 (0: never).",
              seconds(figures.lastSuccess) ?? 0)
        gauge("last_run_files_downloaded", "Files the last run downloaded (while one goes on: so far).", Double(figures.filesDownloaded))
        gauge("last_run_bytes_downloaded", "Bytes the last run downloaded (while one goes on: so far).", Double(figures.bytesDownloaded))
        gauge("last_run_files_failed", "Files the last run could not mirror; the next run tries them again.",
              Double(figures.filesFailed))
        gauge("last_run_files_removed", "Files the last run found removed upstream.", Double(figures.filesRemoved))
        gauge("last_run_bytes_per_second", "The last run's download rate over its whole length.", figures.bytesPerSecond)
        gauge("last_run_api_calls", "Imgur API calls the last run made.", figures.apiCallsMade.map(Double.init))
        gauge("api_calls_left", "Imgur API calls left this hour, as the API last said.", figures.apiCallsLeft.map(Double.init))
        gauge("crawl_next_page", "The listing page the crawl reads next.", figures.crawlNextPage.map(Double.init))
        gauge("crawl_estimated_pages", "The listing's size in pages, as the API states it.",
              figures.crawlEstimatedPages.map(Double.init))
        return registry.emitToBuffer()
    }

    /// Writes `figures` whole: to a new file beside, readable by all (node_exporter runs as its
    /// own user), then renamed over `path`.
    package func write(_ figures: Figures) throws(MirrorError) {
        let bytes = Self.render(figures)
        let target = URL(fileURLWithPath: path)
        let folder = target.deletingLastPathComponent().path
        let temporary = folder + "/." + target.lastPathComponent + ".\(getpid()).\(UInt32.random(in: .min ... .max)).tmp"
        // A new name, made here (O_EXCL): nothing planted at it is written through.
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .fileSystem(FileSystemError(path: temporary, errno: errno)) }
        fchmod(descriptor, 0o644)
        do throws(FileSystemError) {
            try Directory.writeAll(bytes, to: descriptor, at: 0, path: temporary)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw .fileSystem(error)
        }
        close(descriptor)
        // The collector reads only *.prom: a name left by a crash is ignored (and starts with a dot).
        guard rename(temporary, path) == 0 else {
            let error = FileSystemError(path: path, errno: errno)
            unlink(temporary)
            throw .fileSystem(error)
        }
    }
}
