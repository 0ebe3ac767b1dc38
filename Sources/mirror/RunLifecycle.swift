import ArgumentParser
import Foundation
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
    /// What the summary line starts with: the tag, or `feed`.
    let label: String

    /// Makes the mirror; with a ``Sharing``, its state is shared with other workers.
    typealias MakeMirror = (MirrorDirectory, TransferEngine, Sharing?, Logger) throws(MirrorError) -> any MirrorRun

    /// Runs the mirror `prepare` makes. `prepare` checks what must be right before the directory
    /// is touched (the client id file), and returns how to make the mirror once it is.
    func run(_ prepare: (RunSettings) throws(MirrorError) -> MakeMirror) async throws {
        let settings: RunSettings
        do {
            let file = try common.config.map(MirrorConfiguration.load(from:)) ?? MirrorConfiguration()
            settings = try RunSettings(file: file, flags: flags)
        } catch {
            Console.use(flags.logFormat ?? .text)
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
        let logger = LogSetup.bootstrap(quiet: common.quiet, verbose: common.verbose, format: settings.logFormat)
        do {
            try await run(settings, logger: logger, try prepare(settings))
        } catch let error as MirrorError {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
    }

    private func run(_ settings: RunSettings, logger: Logger, _ makeMirror: MakeMirror) async throws {
        let directory = try MirrorDirectory(root: URL(fileURLWithPath: common.out))
        // With the state in PostgreSQL, workers share the directory by leases on their work; flock
        // over NFS is not to be trusted, and would keep all but one worker out.
        var lock: RunLock?
        var shared: (state: PostgresState, coordinator: PostgresCoordinator)?
        if let postgres = settings.postgres {
            let state = try await PostgresState(postgres, logger: logger)
            shared = (state, PostgresCoordinator(state: state, leaseDuration: settings.leaseDuration))
        } else {
            lock = try RunLock(directory: directory)
        }
        let sharing = shared.map { Sharing(state: $0.state, coordinator: $0.coordinator, maxPerHost: settings.clusterMaxPerHost) }
        let engine = TransferEngine(configuration: settings.engine)
        let mirror: any MirrorRun
        do {
            mirror = try makeMirror(directory, engine, sharing, logger)
        } catch {
            await engine.shutDown()
            await shared?.state.close()
            throw error
        }
        let lastSuccess: Date? = (try? await mirror.state.lastSuccess(of: mirror.source)) ?? nil
        let previous: RunRecord? = (try? await mirror.state.lastRun(of: mirror.source)) ?? nil
        let metrics = settings.metricsFile.map(MetricsFile.init(path:))
        let (display, label) = (showsProgress(settings), label)
        // The watcher starts inside the work, once signals are handled: a Ctrl-C at the first
        // frame stops the run rather than being lost.
        let ((summary, metricsProblemReported), stop) = await Interruption.cancelOnSignal(deadline: settings.deadline) {
            let watcher = Task {
                await Self.watch(
                    mirror, label: label, display: display, metrics: metrics, previous: previous, lastSuccess: lastSuccess,
                    logger: logger)
            }
            let summary = await mirror.run()
            watcher.cancel()
            return (summary, await watcher.value)
        }
        // No libcurl call may be running once the process starts to exit.
        await engine.shutDown()
        Console.endProgress()
        let status = Report.exitStatus(summary, stop: stop)
        let record = RunRecord(
            source: mirror.source, startedAt: mirror.progress.snapshot.startedAt, endedAt: Date(), exitStatus: status,
            summary: summary)
        do {
            try await mirror.state.recordRun(record)
        } catch {
            logger.warning("the run could not be recorded for mirror status: \(error)")
        }
        if let metrics {
            let figures = MetricsFile.Figures(
                finished: record, progress: mirror.progress.snapshot, listing: summary.listing, lastSuccess: lastSuccess)
            do {
                try metrics.write(figures)
            } catch where !metricsProblemReported {
                logger.error("metrics file: \(error)")
            } catch {}
        }
        if let shared {
            await shared.coordinator.finish(exitStatus: status)
            await shared.state.close()
        }
        withExtendedLifetime(lock) {}
        Report.print(summary, label: label, quiet: common.quiet, stop: stop, logger: logger)
        if settings.logFormat == .json, !common.quiet || status != 0 {
            let fields = [
                "source": mirror.source, "exit_status": "\(status)", "files": "\(summary.wanted)",
                "downloaded": "\(summary.downloaded)", "bytes": "\(summary.bytesDownloaded)",
                "failed": "\(summary.failures.count)",
            ]
            Console.printErrorLine(JSONLine.encode(level: status == 0 ? "notice" : "error", message: "\(label): \(summary.line)", fields: fields))
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
        _ mirror: any MirrorRun, label: String, display: Bool, metrics: MetricsFile?, previous: RunRecord?, lastSuccess: Date?,
        logger: Logger
    ) async -> Bool {
        var lines = ProgressLines(label: label)
        let clock = ContinuousClock()
        let start = clock.now
        var nextMetrics = start
        var metricsFailed = false
        if display { Console.beginProgress() }
        while !Task.isCancelled {
            let snapshot = await mirror.progress.refresh()
            let now = clock.now
            if display {
                Console.showProgress(lines.lines(for: snapshot, at: (now - start).inSeconds, columns: Console.columns()))
            }
            if let metrics, now >= nextMetrics {
                nextMetrics = now + .seconds(5)
                do {
                    try metrics.write(MetricsFile.Figures(
                        source: mirror.source, progress: snapshot, previous: previous, lastSuccess: lastSuccess))
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
