import Foundation
import Logging

/// One file to put into the mirror.
struct MirrorJob: Sendable {
    var url: String
    var relativePath: String
    var expectedSize: Int64?
    /// Other URLs of the same file, tried in turn when `url` fails.
    var mirrors: [String] = []
}

/// Takes jobs through the scheduler and into the mirror directory, and tallies what happened:
/// the part every kind of mirror (tag, feed) shares.
struct JobRunner: Sendable {
    enum Outcome: Sendable {
        case downloaded(bytes: Int64)
        case alreadyPresent
        case removed(String)
        case interrupted
        case failed(DownloadError)
    }

    let directory: MirrorDirectory
    let partials: PartialStore
    let state: StateDatabase
    let scheduler: DownloadScheduler
    let mode: DownloadMode
    let logger: Logger

    init(
        directory: MirrorDirectory, engine: TransferEngine, mode: DownloadMode, concurrency: Int, retry: RetryPolicy,
        logger: Logger
    ) throws(MirrorError) {
        self.directory = directory
        self.mode = mode
        self.logger = logger
        partials = try PartialStore(directory: directory.stateDirectory.appendingPathComponent("partials"))
        state = try StateDatabase(directory: directory) { logger.warning("\($0)") }
        let transport = EngineTransport(engine: engine, partials: partials, retry: retry, logger: logger)
        scheduler = DownloadScheduler(transport: transport, configuration: .init(
            maxConcurrent: concurrency, maxPerHost: concurrency))
    }

    /// Runs `unforced` jobs all at once and `forced` ones one after another, each forced job taking
    /// the bandwidth while it runs; keeps `.mirror/status.json` current meanwhile.
    func run(unforced: [MirrorJob], forced: [MirrorJob], source: String, into summary: inout MirrorSummary) async {
        summary.wanted += unforced.count + forced.count
        let (logger, scheduler, directory) = (logger, scheduler, directory)
        let reporter = Task {
            await RunStatus.keepWriting(
                source: source, scheduler: scheduler, directory: directory,
                log: { logger.debug("downloads: \($0.summaryLine)") })
        }
        // Unstructured tasks, cancelled by hand: a task group removes each finished child from a
        // linked list (Swift 6.3), which costs seconds at tens of thousands of thumbnails.
        let lane = Task {
            var outcomes: [Outcome] = []
            for job in forced { outcomes.append(await mirrorFromAnySource(job, forced: true)) }
            return outcomes
        }
        let thumbnails = unforced.map { job in Task { await mirrorFromAnySource(job, forced: false) } }
        await withTaskCancellationHandler {
            for thumbnail in thumbnails { record(await thumbnail.value, in: &summary) }
            for outcome in await lane.value { record(outcome, in: &summary) }
        } onCancel: {
            lane.cancel()
            thumbnails.forEach { $0.cancel() }
        }
        reporter.cancel()
        await reporter.value
    }

    private func record(_ outcome: Outcome, in summary: inout MirrorSummary) {
        switch outcome {
        case .downloaded(let bytes):
            summary.downloaded += 1
            summary.bytesDownloaded += bytes
        case .alreadyPresent:
            summary.alreadyPresent += 1
        case .removed(let url):
            logger.info("removed upstream: \(url)")
            summary.removed.append(url)
        case .interrupted:
            summary.interrupted = true
        case .failed(let error):
            logger.error("\(error)")
            summary.failures.append(error)
        }
    }

    /// Tries the job's URL, then each mirror while the failure is the source's (not a cancel).
    private func mirrorFromAnySource(_ job: MirrorJob, forced: Bool) async -> Outcome {
        var outcome = await mirror(job, forced: forced)
        for alternate in job.mirrors {
            guard case .failed(let error) = outcome else { break }
            logger.warning("\(error); trying the mirror \(alternate)")
            var next = job
            next.url = alternate
            outcome = await mirror(next, forced: forced)
        }
        return outcome
    }

    private func mirror(_ job: MirrorJob, forced: Bool) async -> Outcome {
        guard !Task.isCancelled else { return .interrupted }
        do {
            if let known = await state.mirroredPath(of: job.url), try directory.fileExists(known) {
                return .alreadyPresent
            }
            if mode == .skipIfExists, try directory.fileExists(job.relativePath) {
                return .alreadyPresent
            }
        } catch {
            return .failed(DownloadError(url: job.url, reason: .storage(error.description)))
        }
        if await state.isRemoved(job.url) { return .removed(job.url) }
        do {
            let file = try await scheduler.schedule(job.url, forced: forced, expectedSize: job.expectedSize)
            guard file.length > 0 else {
                // A 200 with nothing in it is a broken server, not an empty file worth keeping.
                partials.remove(job.url)
                return .failed(DownloadError(url: job.url, reason: .emptyBody))
            }
            let lastModified = partials.record(for: job.url)?.lastModified.flatMap(HTTPDate.parse)
            let committed = try directory.commit(file.path, as: job.relativePath, mode: mode)
            partials.remove(job.url)
            guard let name = committed else { return .alreadyPresent }
            // Like wget -N and gallery-dl: the file carries the server's date, not the download's.
            if let lastModified { directory.setModificationDate(lastModified, of: name) }
            await state.recordMirrored(job.url, as: name, bytes: file.length)
            logger.info("saved \(name)")
            return .downloaded(bytes: file.bytesReceived)
        } catch let error as DownloadError {
            if error.reason == .removed {
                await state.recordRemoved(job.url)
                return .removed(job.url)
            }
            if error.isCancellation { return .interrupted }
            return .failed(error)
        } catch {
            return .failed(DownloadError(url: job.url, reason: .storage("\(error)")))
        }
    }
}
