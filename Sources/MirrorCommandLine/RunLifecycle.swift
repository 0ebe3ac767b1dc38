import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import MirrorKit

/// What every mirroring command does around its mirror: resolve the settings, set up logging,
/// take the directory's lock, run with signals and the deadline turned into cancellation, show
/// progress and keep the metrics file current while it runs, then shut the engine down, record
/// the run, report it and exit with its status.
struct RunLifecycle {
    let common: CommonOptions
    /// The flags given, over the config file's values.
    let flags: MirrorConfiguration

    /// Makes the driver and the run's sources; with a ``Sharing``, the state is shared with other
    /// workers.
    typealias MakeRun = (MirrorDirectory, TransferEngine, Sharing?, any RunObserver, Logger) throws(MirrorError)
        -> (MirrorDriver, [any MirrorSource])

    /// The settings of a run, and how it reaches a shared state.
    struct Resolved {
        var settings: RunSettings
        var connector: (any SharedDatabaseConnector)?
    }

    /// Runs the sources `prepare` makes. `prepare` checks what must be right before the directory
    /// is touched (the client id file), and returns how to make the run once it is.
    func run(_ prepare: (RunSettings) throws(MirrorError) -> MakeRun) async throws {
        try await run(try resolve(), prepare)
    }

    /// The flags over the config file. In `mirror`, a shared state hands the process over to
    /// mirror-postgresql here: call it before anything is read (standard input) or set up.
    func resolve() throws -> Resolved {
        var settings: RunSettings
        do throws(MirrorError) {
            let path = common.config
                ?? (common.noConfig ? nil : MirrorConfiguration.defaultPath(environment: ProcessInfo.processInfo.environment))
            let file = try path.map(MirrorConfiguration.load(from:)) ?? MirrorConfiguration()
            settings = try RunSettings(file: file, flags: flags)
            if common.dryRun {
                // Workers' claims and leases are writes to a database others use: there is no copy to plan in.
                if settings.postgres != nil {
                    throw .configuration("--dry-run plans against a copy of the state in .mirror; with the PostgreSQL state (--state or the config's 'state') it cannot run")
                }
                settings.plan = Self.printPlanned(as: settings.logFormat)
            }
        } catch {
            Console.use(flags.logFormat ?? .text)
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
        Console.use(settings.logFormat)
        return Resolved(settings: settings, connector: try settings.postgres.map(SharedStateAccess.connector(for:)))
    }

    /// Runs the sources `prepare` makes with `resolved`'s settings.
    func run(_ resolved: Resolved, _ prepare: (RunSettings) throws(MirrorError) -> MakeRun) async throws {
        let settings = resolved.settings
        let logger = LogSetup.bootstrap(quiet: common.quiet, verbose: common.verbose, format: settings.logFormat)
        do {
            try await run(settings, connector: resolved.connector, logger: logger, try prepare(settings))
        } catch let error as MirrorError {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
    }

    /// What a source's summary line starts with: a tag's name, or the source (`album Ef1gH`,
    /// `feed https://…`).
    static func label(of source: String) -> String {
        source.hasPrefix("tag ") ? String(source.dropFirst(4)) : source
    }

    /// Prints each file a dry run would fetch on standard output: `URL -> path (size)`, or a JSON
    /// object a line.
    private static func printPlanned(as format: LogFormat) -> @Sendable (PlannedFile) -> Void {
        { file in
            switch format {
            case .text:
                let size = file.bytes.map { " (\(MirrorSummary.formatBytes($0)))" } ?? ""
                Console.print("\(file.url) -> \(file.path)\(size)\(file.missing ? ", missing from the disk" : "")")
            case .json:
                Console.printJSON(JSONLine.planned(file))
            }
        }
    }

    /// The run's WARC archive, when `--warc` names one; what killed runs left there is closed first.
    private func openArchive(_ settings: RunSettings, shared: Bool, logger: Logger) throws(MirrorError) -> WARCArchive? {
        guard let path = settings.warc else { return nil }
        do {
            // Workers that share a state each write files of their own, named for their host and process.
            let worker = shared ? "\(ProcessInfo.processInfo.hostName)-\(getpid())" : nil
            let archive = try WARCArchive(path: path, maxFileSize: settings.warcMaxSize, worker: worker)
            for name in archive.recovered {
                logger.warning("WARC archive: \(name) was left open by a run that ended without closing it: cut back to its last whole record and closed")
            }
            return archive
        } catch {
            throw .fileSystem(error)
        }
    }

    private func run(
        _ settings: RunSettings, connector: (any SharedDatabaseConnector)?, logger: Logger, _ makeRun: MakeRun
    ) async throws {
        var info = stat()
        let outExisted = lstat(common.out, &info) == 0
        // A dry run reads the mirror where it is and keeps its state in a scratch copy.
        let dryRun = try settings.plan.map { plan throws(MirrorError) in
            try DryRun(root: URL(fileURLWithPath: common.out), plan: plan)
        }
        if let dryRun { Console.removeOnExit(dryRun.scratchPath) }
        let directory = try dryRun?.directory ?? MirrorDirectory(root: URL(fileURLWithPath: common.out))
        // With the state in PostgreSQL, workers share the directory by leases on their work; flock
        // over NFS is not to be trusted, and would keep all but one worker out.
        var lock: RunLock?
        var shared: SharedDatabase?
        if dryRun != nil {
            // Its snapshot of the state was taken under the lock; it writes nothing the lock guards.
        } else if let postgres = settings.postgres, let connector {
            shared = try await connector.open(
                postgres, leaseDuration: settings.leaseDuration, budgetGroup: settings.budgetGroup, readOnly: false, logger: logger)
        } else {
            lock = try RunLock(directory: directory)
        }
        let sharing = shared.map { Sharing($0, maxPerHost: settings.clusterMaxPerHost) }
        var engineConfiguration = settings.engine
        let archive = try dryRun == nil ? openArchive(settings, shared: shared != nil, logger: logger) : nil
        engineConfiguration.archive = archive
        let engine = TransferEngine(configuration: engineConfiguration)
        let tracker = ProgressTracker()
        let driver: MirrorDriver
        let sources: [any MirrorSource]
        do {
            (driver, sources) = try makeRun(directory, engine, sharing, tracker, logger)
        } catch {
            await engine.shutDown()
            await shared?.close()
            throw error
        }
        // The run as the metrics file names it: its sources together.
        let runName = sources.map(\.name).joined(separator: ", ")
        archive?.describe([("mirror-sources", runName), ("hostname", ProcessInfo.processInfo.hostName)])
        let lastSuccess: Date? = (try? await driver.state.lastSuccess(of: runName)) ?? nil
        let previous: RunRecord? = (try? await driver.state.lastRun(of: runName)) ?? nil
        let metrics = dryRun == nil ? settings.metricsFile.map(MetricsFile.init(path:)) : nil
        let display = showsProgress(settings)
        let progressLabel = sources.count == 1 ? Self.label(of: runName) : "\(sources.count) sources"
        // The watcher starts inside the work, once signals are handled: a Ctrl-C at the first
        // frame stops the run rather than being lost.
        let ((results, metricsProblemReported), stop) = await Interruption.cancelOnSignal(deadline: settings.deadline) {
            let watcher = Task {
                await Self.watch(
                    tracker, driver: driver, source: runName, label: progressLabel, display: display, metrics: metrics,
                    previous: previous, lastSuccess: lastSuccess, logger: logger)
            }
            // Workers sharing a directory would overwrite one another's status file: theirs is in
            // the shared state (`mirror status` reads the workers there).
            let status = Task {
                guard sharing == nil, dryRun == nil else { return }
                await RunStatus.keepWriting(
                    run: runName, tracker: tracker, driver: driver, directory: directory,
                    log: { logger.debug("downloads: \($0.scheduler?.summaryLine ?? "none yet")") })
            }
            let results = await driver.run(sources)
            watcher.cancel()
            status.cancel()
            await status.value
            return (results, await watcher.value)
        }
        // No libcurl call may be running once the process starts to exit.
        await engine.shutDown()
        Console.endProgress()
        var archiveFailed = false
        do {
            try archive?.close()
        } catch {
            logger.error("WARC archive: \(error); the archive of this run is not whole")
            archiveFailed = true
        }
        let endedAt = Date()
        let startedAt = tracker.snapshot.startedAt
        // A signal or the deadline concerns the sources it cut short, not those done before it.
        let stops = results.map { $0.summary.interrupted || $0.notStarted ? stop : nil }
        let statuses = zip(results, stops).map { Report.exitStatus($0.summary, stop: $1) }
        var total = MirrorSummary()
        for (result, status) in zip(results, statuses) {
            total.addUp(result.summary)
            let record = RunRecord(
                source: result.source, startedAt: result.startedAt, endedAt: result.endedAt, exitStatus: status,
                summary: result.summary)
            do {
                try await driver.state.recordRun(record)
            } catch {
                logger.warning("the run could not be recorded for mirror status: \(error)")
            }
        }
        let status = ExitStatus.worst(statuses + (archiveFailed ? [ExitStatus.cannotCreate] : []))
        // One source's record is the run's: the metrics' last success must be the time a later
        // run reads back from it, not a moment later (a second apart now and then).
        let single = results.count == 1 ? results.first : nil
        var whole = RunRecord(
            source: runName, startedAt: single?.startedAt ?? startedAt, endedAt: single?.endedAt ?? endedAt,
            exitStatus: status, summary: total)
        if sources.count > 1 {
            // The run as a whole, for the metrics' last success; `mirror status` shows its sources'.
            whole.sources = sources.map(\.name)
            try? await driver.state.recordRun(whole)
        }
        if let metrics {
            let figures = MetricsFile.Figures(
                finished: whole, progress: tracker.snapshot, listing: total.listing, lastSuccess: lastSuccess)
            do {
                try metrics.write(figures)
            } catch where !metricsProblemReported {
                logger.error("metrics file: \(error)")
            } catch {}
        }
        if let shared {
            await shared.coordinator.finish(exitStatus: status)
            await shared.close()
        }
        if !outExisted, shared == nil, dryRun == nil, !results.isEmpty, results.allSatisfy({ $0.summary.stoppedBy?.namesNoSource == true }) {
            // A first run on a typo leaves nothing behind: nothing was mirrored, nor will be.
            try? FileManager.default.removeItem(atPath: common.out)
        }
        withExtendedLifetime((lock, dryRun)) {}
        for (result, (sourceStop, sourceStatus)) in zip(results, zip(stops, statuses)) {
            let label = Self.label(of: result.source)
            if result.notStarted {
                if !common.quiet || sourceStatus != 0 {
                    Console.print("\(label): not started, the run stopped first" + (result.summary.stoppedBy.map { " (\($0))" } ?? ""))
                }
                continue
            }
            // A dry run's standard output in JSON is its files alone, one object a line; the
            // summary is on standard error with the rest of the JSON.
            Report.print(
                result.summary, label: label, quiet: common.quiet, stop: sourceStop, logger: logger,
                toStandardOutput: dryRun == nil || settings.logFormat == .text)
            if settings.logFormat == .json, !common.quiet || sourceStatus != 0 {
                let summary = result.summary
                let fields = [
                    "source": result.source, "exit_status": "\(sourceStatus)", "files": "\(summary.wanted)",
                    "downloaded": "\(summary.downloaded)", "bytes": "\(summary.bytesDownloaded)",
                    "failed": "\(summary.failures.count)",
                ]
                Console.printErrorLine(JSONLine.encode(
                    level: sourceStatus == 0 ? "notice" : "error", message: "\(label): \(summary.line)", fields: fields))
            }
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Live progress is drawn on a terminal unless asked not to, `--quiet` or JSON logs (which
    /// `always` overrides for `--quiet`; `always` with JSON logs is refused), or a terminal that
    /// cannot move its cursor (`TERM=dumb`: Emacs' shell buffers).
    private func showsProgress(_ settings: RunSettings) -> Bool {
        switch settings.progress {
        case .always: true
        case .never: false
        case .auto:
            !common.quiet && settings.logFormat == .text && isatty(STDERR_FILENO) == 1
                && ProcessInfo.processInfo.environment["TERM"] != "dumb"
        }
    }

    /// Redraws the progress four times a second and rewrites the metrics file every five seconds,
    /// until cancelled; true when the metrics file could not be written (and that was said).
    private static func watch(
        _ tracker: ProgressTracker, driver: MirrorDriver, source: String, label: String, display: Bool, metrics: MetricsFile?, previous: RunRecord?,
        lastSuccess: Date?, logger: Logger
    ) async -> Bool {
        var lines = ProgressLines(label: label)
        let clock = ContinuousClock()
        let start = clock.now
        var nextMetrics = start
        var metricsFailed = false
        if display { Console.beginProgress() }
        while !Task.isCancelled {
            let snapshot = await tracker.refresh(from: driver)
            let now = clock.now
            if display {
                Console.showProgress(lines.lines(for: snapshot, at: (now - start).inSeconds, columns: Console.columns()))
            }
            if let metrics, now >= nextMetrics {
                nextMetrics = now + .seconds(5)
                do {
                    try metrics.write(MetricsFile.Figures(
                        source: source, progress: snapshot, previous: previous, lastSuccess: lastSuccess))
                } catch where !metricsFailed {
                    // Once: the file's directory will not come back within the run.
                    metricsFailed = true
                    logger.error("metrics file: \(error)")
                } catch {}
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
        return metricsFailed
    }
}
