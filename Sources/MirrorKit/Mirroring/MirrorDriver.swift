import FoundationEssentials
import Logging

/// Runs every source of a run through one job runner: one scheduler, one engine, one state
/// database, one set of host verdicts. Each source gets a job session of its own (its window, its
/// tally, its summary line) and they run in the order given; the driver alone knows about jobs,
/// naming and summaries, and sources only list.
package final class MirrorDriver: Sendable {
    package struct Settings: Sendable {
        var mode: DownloadMode
        /// Downloads running at once.
        var concurrency: Int
        /// Attempts and backoff for each file.
        var retry: RetryPolicy
        /// The most bytes any file may have, whatever its source or server claims.
        var maxFileSize: Int64
        /// Write each file's metadata sidecar (see ``MetadataSidecars``).
        var metadata: Bool
        /// A recorded file gone from the disk stays gone, rather than being fetched again.
        var keepDeleted: Bool
        /// Tells a host's placeholder for removed media from the file (Imgur's `removed.png`).
        var isRemovedPlaceholder: (@Sendable (TransferResponse) -> Bool)?
        /// Hears of every file saved (`--exec`).
        var hook: (any SavedFileHook)?
        /// Set for a dry run (see ``DryRun``): hears each file a real run would fetch, instead.
        var plan: (@Sendable (PlannedFile) -> Void)?

        /// Downloads at once unless told otherwise.
        package static let defaultConcurrency = DownloadScheduler.Configuration.defaultConcurrency

        package init(
            mode: DownloadMode = .skipIfExists, concurrency: Int = defaultConcurrency, retry: RetryPolicy = RetryPolicy(),
            maxFileSize: Int64 = Downloader.defaultMaxFileSize, metadata: Bool = false, keepDeleted: Bool = false,
            isRemovedPlaceholder: (@Sendable (TransferResponse) -> Bool)? = nil, hook: (any SavedFileHook)? = nil,
            plan: (@Sendable (PlannedFile) -> Void)? = nil
        ) {
            self.plan = plan
            self.hook = hook
            self.keepDeleted = keepDeleted
            self.mode = mode
            self.concurrency = concurrency
            self.retry = retry
            self.maxFileSize = maxFileSize
            self.metadata = metadata
            self.isRemovedPlaceholder = isRemovedPlaceholder
        }
    }

    /// What one source of the run came to.
    package struct SourceResult: Sendable {
        package var source: String
        package var summary: MirrorSummary
        /// The run stopped (a signal, the deadline, a full disk, a media host given up) before this
        /// source was started.
        package var notStarted: Bool
        package var startedAt: Date
        package var endedAt: Date
    }

    let runner: JobRunner
    /// Sources whose files are taken differently (their mode, metadata, hook), by name.
    private let perSource: [String: Settings]

    /// With `sharing`, the mirror's state and work are shared with other workers. A source named
    /// in `perSource` has its files taken by those settings' mode, deleted-file rule, metadata and
    /// hook; the rest (concurrency, retries, sizes) are the run's.
    package init(
        directory: MirrorDirectory, engine: TransferEngine, settings: Settings, perSource: [String: Settings] = [:],
        sharing: Sharing? = nil, observer: any RunObserver = UnobservedRun(), logger: Logger
    ) throws(MirrorError) {
        self.perSource = perSource
        runner = try JobRunner(
            directory: directory, engine: engine, mode: settings.mode, keepDeleted: settings.keepDeleted,
            concurrency: settings.concurrency,
            retry: settings.retry, isRemovedPlaceholder: settings.isRemovedPlaceholder,
            maxFileSize: settings.maxFileSize, observer: observer, sharing: sharing,
            metadata: settings.metadata, hook: settings.hook, plan: settings.plan, logger: logger)
    }

    /// The transfers in flight and the bytes received so far, all sources together.
    package func schedulerStatus() async -> SchedulerStatus {
        await runner.scheduler.status()
    }
    /// Where the mirror's records, cursors and runs are kept.
    package var state: any MirrorState { runner.state }

    /// Mirrors each source in turn. Once the run is cancelled or halted, or a media host is
    /// given up, the sources not yet started are not started, and say why: a later run mirrors them.
    package func run(_ sources: [any MirrorSource]) async -> [SourceResult] {
        var results: [SourceResult] = []
        var stopped: RunStopReason?
        // A file is finished by its source's runner: the hook that source has, if any.
        await runner.beginRun { self.runner(of: $0) }
        defer { runner.endRun() }
        for source in sources {
            let startedAt = Date()
            let verdicts = runner.health.verdicts
            if Task.isCancelled || stopped != nil || !verdicts.isEmpty {
                // A given-up host would stop the source's listing at once, with nothing said of it.
                var summary = MirrorSummary()
                summary.interrupted = true
                summary.stoppedBy = stopped ?? (verdicts.isEmpty ? nil : .listing(ListingFailure(.tryLater, HostsGivenUp(verdicts: verdicts))))
                summary.unavailableHosts = verdicts
                results.append(SourceResult(source: source.name, summary: summary, notStarted: true, startedAt: startedAt, endedAt: startedAt))
                continue
            }
            let summary = await mirror(source)
            // A mirror that cannot go on (a full disk, a state that takes no writes) cannot for
            // the next source either.
            if case .mirror(let error)? = summary.stoppedBy, error.stopsTheRun { stopped = summary.stoppedBy }
            results.append(SourceResult(source: source.name, summary: summary, notStarted: false, startedAt: startedAt, endedAt: Date()))
        }
        return results
    }

    /// The runner of the source called `name`: its files recorded as its own, kept its way.
    private func runner(of name: String?) -> JobRunner {
        guard let name else { return runner }
        var runner = runner.named(name)
        if let own = perSource[name] {
            runner = runner.choosing(mode: own.mode, keepDeleted: own.keepDeleted, metadata: own.metadata, hook: own.hook)
        }
        return runner
    }

    private func mirror(_ source: any MirrorSource) async -> MirrorSummary {
        let runner = runner(of: source.name)
        runner.observer.observe(.source(source.name))
        let session = runner.start()
        let sink = SourceSink(name: source.name, runner: runner, session: session, sidecars: runner.sidecars)
        let listing = await source.list(into: sink)
        var summary = MirrorSummary()
        summary.plan.isDryRun = runner.plan != nil
        runner.observer.observe(.phase(.downloading))
        await session.finish(into: &summary)
        runner.observer.observe(.phase(.finished))
        if let groups = listing.groups {
            await groups.flush()
            if let failure = groups.failure {
                // The last batch is marked after the session's outcomes are counted.
                summary.interrupted = true
                summary.stoppedBy = summary.stoppedBy ?? .mirror(failure)
            }
        }
        summary.problems = sink.reportedProblems + listing.problems + runner.hookFailures.take()
        summary.leftOut = sink.filesLeftOut
        summary.removedAlbums = listing.removedAlbums
        summary.skippedReleases = listing.skippedReleases
        // A halted session's error (a full disk) comes first: it is why the listing stopped.
        summary.stoppedBy = summary.stoppedBy ?? listing.stoppedBy
        summary.unavailableHosts = runner.health.verdicts
        // Files that failed before their host was given up, for the reason it was, are left for
        // the next run like the files that followed them: they are no loss to report as one.
        let hostTrouble = summary.failures.filter { runner.isHostTrouble($0) }
        for failure in hostTrouble { summary.defer(failure.url) }
        if !hostTrouble.isEmpty { summary.failures.removeAll { runner.isHostTrouble($0) } }
        for failure in summary.failures where JobRunner.isUnansweredOrThrottled(failure) {
            runner.logger.error("\(failure)", metadata: failure.logFields)
        }
        for verdict in summary.unavailableHosts where verdict.isUnresolved && summary.deferredByHost[verdict.host, default: 0] > 0 {
            // A name that resolved for an earlier run may be a DNS outage: that is try-later. One
            // whose files all came from a mirror instead lost nothing.
            if let served = try? await runner.state.hasFiles(fromHost: verdict.host), !served {
                summary.unresolvableHosts.append(verdict.host)
            }
        }
        summary.listing = listing.listing
        // What stopped the listing before a cancel still counts (sources record no error a
        // cancel caused): an auth failure or a full disk must not pass for a clean deadline stop.
        if Task.isCancelled { summary.interrupted = true }
        return summary
    }
}

/// Why a source was not started: a media host was given up earlier in the run.
struct HostsGivenUp: Error, Sendable, CustomStringConvertible {
    var verdicts: [HostHealth.Verdict]

    var description: String {
        verdicts.map(\.description).joined(separator: "; ") + "; not started, a later run mirrors it"
    }
}
