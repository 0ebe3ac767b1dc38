import Foundation
import Logging
import Synchronization

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
        /// Not tried: its host is down or throttling this run; a later run tries it.
        case deferred
        case failed(DownloadError)
        /// The mirror as a whole cannot go on (a full disk, a database that takes no writes, a
        /// folder that is a planted link): the run stops, keeping what it has.
        case halted(MirrorError)

        /// The file is in the mirror, or known gone: no later run needs to try it.
        var isSettled: Bool {
            switch self {
            case .downloaded, .alreadyPresent, .removed: true
            case .interrupted, .deferred, .failed, .halted: false
            }
        }
    }

    let directory: MirrorDirectory
    let partials: PartialStore
    let state: StateDatabase
    let scheduler: DownloadScheduler
    let health: HostHealth
    let mode: DownloadMode
    let logger: Logger
    private let flights = Flights()

    init(
        directory: MirrorDirectory, engine: TransferEngine, mode: DownloadMode, concurrency: Int, retry: RetryPolicy,
        isRemovedPlaceholder: (@Sendable (TransferResponse) -> Bool)? = nil,
        maxFileSize: Int64 = Downloader.defaultMaxFileSize, logger: Logger
    ) throws(MirrorError) {
        self.directory = directory
        self.mode = mode
        self.logger = logger
        do {
            // Before anything is named by it: a failing MD5 must not make every partial look stray.
            _ = try Digest.md5Hex(Array("mirror".utf8))
        } catch {
            throw .digest(error.description)
        }
        partials = try directory.partialStore()
        state = try StateDatabase(directory: directory) { logger.warning("\($0)") }
        health = HostHealth(settings: .init(maxPerHost: concurrency))
        let transport = EngineTransport(
            engine: engine, partials: partials, retry: retry, health: health,
            isRemovedPlaceholder: isRemovedPlaceholder, maxFileSize: maxFileSize, logger: logger)
        let configuration = DownloadScheduler.Configuration(maxConcurrent: concurrency, maxPerHost: concurrency)
        scheduler = DownloadScheduler(transport: transport, configuration: configuration)
        // The budget for suspended downloads holds for what earlier runs left too.
        // At least one file of the largest size allowed: a big enclosure cut short must not lose
        // its bytes at every start.
        let dropped = partials.purge(
            keepingAtMost: configuration.suspendedCountBudget,
            bytes: max(configuration.suspendedBytesBudget, maxFileSize))
        if !dropped.isEmpty { logger.info("dropped \(dropped.count) partial downloads of earlier runs, over the budget") }
    }

    /// Makes the names given so far durable (before anything that vouches for them is written).
    func syncDirectories() async throws(MirrorError) {
        let directory = directory
        try await BlockingIO.run { () throws(MirrorError) in try directory.syncDirectories() }
    }

    /// Opens a session that takes jobs as a source finds them; keeps `.mirror/status.json`
    /// current until it finishes.
    func start(source: String, window: Int? = nil) -> JobSession {
        JobSession(runner: self, source: source, window: window ?? JobSession.window(
            concurrency: scheduler.configuration.maxConcurrent))
    }

    func record(_ outcome: Outcome, in summary: inout MirrorSummary) {
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
        case .deferred:
            summary.deferred += 1
        case .failed(let error) where isHostTrouble(error):
            // It failed before its host was given up, for the reason the host was: one line about
            // the host says it, and the next run tries the file again.
            summary.deferred += 1
        case .failed(let error):
            logger.error("\(error)")
            summary.failures.append(error)
        case .halted(let error):
            summary.interrupted = true
            if summary.stoppedBy == nil { summary.stoppedBy = error }
        }
    }

    /// The error that stops the whole run, when `error` is not one file's but the disk's or the
    /// mirror's: every other file would fail the same way.
    static func halting(_ error: DownloadError) -> MirrorError? {
        switch error.reason {
        case .transfer(.fileWrite(let failure)) where failure.stopsTheRun: .fileSystem(failure)
        case .transfer(.digest(let message)): .digest(message)
        default: nil
        }
    }

    /// `.halted` for an error that stops the run, `.failed` for one of this file's name alone.
    private func halting(_ error: MirrorError, _ job: MirrorJob) -> Outcome {
        error.stopsTheRun ? .halted(error) : .failed(DownloadError(url: job.url, reason: .storage(error.description)))
    }

    /// A throttling answer or a connection failure from a host this run has given up.
    private func isHostTrouble(_ error: DownloadError) -> Bool {
        guard health.verdict(forURL: error.url) != nil else { return false }
        switch error.reason {
        case .httpStatus(let status): return RetryPolicy.isThrottling(status: status)
        case .transfer(let reason): return TransferError(url: error.url, reason: reason).unanswered != nil
        default: return false
        }
    }

    /// Tries the job's URL, then each mirror while the failure is the source's (not a cancel).
    func mirrorFromAnySource(_ job: MirrorJob, forced: Bool) async -> Outcome {
        var outcome = await mirror(job, forced: forced)
        for alternate in job.mirrors {
            let failure: String
            switch outcome {
            case .failed(let error): failure = error.description
            case .deferred: failure = "\(URLAuthority.of(job.url)) is unavailable"
            default: return outcome
            }
            logger.warning("\(failure); trying the mirror \(alternate)")
            var next = job
            next.url = alternate
            outcome = await mirror(next, forced: forced)
        }
        return outcome
    }

    /// Mirrors `job`, or, while another job mirrors the same URL, waits for that one: a URL is
    /// looked up, downloaded and committed by one job at a time, so no job ever touches a partial
    /// it did not download (two names for one file: a feed enclosure and another's mirror URL).
    private func mirror(_ job: MirrorJob, forced: Bool) async -> Outcome {
        guard !Task.isCancelled else { return .interrupted }
        let (outcome, led) = await flights.run(job.url) { await mirrorAlone(job, forced: forced) }
        guard !led, case .downloaded = outcome else { return outcome }
        return .alreadyPresent
    }

    private func mirrorAlone(_ job: MirrorJob, forced: Bool) async -> Outcome {
        guard !Task.isCancelled else { return .interrupted }
        let fate = await state.fate(of: job.url)
        do {
            if let known = fate.mirroredPath, try directory.fileExists(known) {
                return .alreadyPresent
            }
            if mode == .skipIfExists, try directory.fileExists(job.relativePath) {
                return .alreadyPresent
            }
        } catch {
            return halting(error, job)
        }
        if fate.removed { return .removed(job.url) }
        do {
            let file = try await scheduler.schedule(job.url, forced: forced, expectedSize: job.expectedSize)
            guard file.length > 0 else {
                // A 200 with nothing in it is a broken server, not an empty file worth keeping.
                partials.remove(job.url)
                return .failed(DownloadError(url: job.url, reason: .emptyBody))
            }
            let lastModified = file.lastModified.flatMap(HTTPDate.parse)
            // The commit moves the partial away (or, when the name is taken, deletes it).
            let (directory, mode, partials) = (directory, mode, partials)
            let partName: String
            do {
                partName = try partials.partName(for: job.url)
            } catch {
                return .halted(.digest(error.description))
            }
            let committed = try await BlockingIO.run { () throws(MirrorError) in
                try directory.commit(partName, from: partials.folder, as: job.relativePath, mode: mode)
            }
            guard let name = committed else { return .alreadyPresent }
            do {
                try await state.recordMirrored(job.url, as: name, bytes: file.length)
            } catch {
                // Unrecorded, the file would be fetched again under a second name by a new-file
                // run: it goes back to being a partial, whole, for the next run to commit.
                do {
                    try directory.uncommit(name, backTo: partials.folder, as: partName)
                } catch let failure {
                    logger.error("\(name.escapedForTerminal) is mirrored but not recorded (\(failure)); a new-file run may save it twice")
                }
                return .halted(error)
            }
            partials.detachRecord(for: job.url) { directory.removeAttribute($0, of: name) }
            // Like wget -N and gallery-dl: the file carries the server's date, not the download's.
            if let lastModified { directory.setModificationDate(lastModified, of: name) }
            logger.info("saved \(name.escapedForTerminal)")
            return .downloaded(bytes: file.bytesReceived)
        } catch let error as MirrorError {
            return halting(error, job)
        } catch let error as DownloadError {
            switch error.reason {
            case .removed:
                do {
                    try await state.recordRemoved(job.url)
                } catch {
                    return .halted(error)
                }
                return .removed(job.url)
            case .hostUnavailable:
                return .deferred
            default:
                if let halting = Self.halting(error) { return .halted(halting) }
                return error.isCancellation ? .interrupted : .failed(error)
            }
        } catch {
            return .failed(DownloadError(url: job.url, reason: .storage("\(error)")))
        }
    }
}

/// One mirroring of a URL at a time: the first job for it leads, later ones wait for its outcome.
/// The lead is cancelled only once every job waiting for it has been.
private final class Flights: Sendable {
    private struct Flight {
        let task: Task<JobRunner.Outcome, Never>
        var interested: Int
    }

    private let flights = Mutex<[String: Flight]>([:])

    /// `body`'s outcome, and whether this call ran it (rather than joined a run under way).
    func run(
        _ url: String, _ body: @escaping @Sendable () async -> JobRunner.Outcome
    ) async -> (JobRunner.Outcome, led: Bool) {
        let (task, led) = flights.withLock { flights -> (Task<JobRunner.Outcome, Never>, Bool) in
            if let flight = flights[url] {
                flights[url]?.interested += 1
                return (flight.task, false)
            }
            let task = Task {
                let outcome = await body()
                self.flights.withLock { $0[url] = nil }
                return outcome
            }
            flights[url] = Flight(task: task, interested: 1)
            return (task, true)
        }
        let outcome = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            let abandoned = flights.withLock { flights -> Bool in
                guard flights[url]?.task == task else { return false }
                flights[url]?.interested -= 1
                return flights[url]?.interested == 0
            }
            if abandoned { task.cancel() }
        }
        return (outcome, led)
    }
}

/// The jobs of one run, taken as they come: the scheduler decides what runs, forced jobs taking
/// the bandwidth first. At most a window of jobs are under way at once; a source submitting more
/// waits for room, so a tag of 100,000 items costs no more memory than one of a few hundred.
/// Outcomes are tallied as jobs end, and nothing of a finished job is kept.
final class JobSession: Sendable {
    /// Jobs under way at most: enough to keep every slot busy, with forced and unforced jobs
    /// waiting for each, and few enough that their tasks stay small (each waiting job's task
    /// holds some 50 KiB of async frames: 4,096 of them made a run 200 MiB larger).
    static func window(concurrency: Int) -> Int {
        max(64, 32 * concurrency)
    }

    private struct State {
        var running: [Int: Task<Void, Never>] = [:]
        var submitted = 0
        var tally = MirrorSummary()
        var roomWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        var drained: CheckedContinuation<Void, Never>?
        var cancelled = false
        var finished = false
        /// A job's outcome stopped the run (see ``JobRunner/Outcome/halted(_:)``).
        var halted = false
    }

    private let runner: JobRunner
    private let window: Int
    private let reporter: Task<Void, Never>
    private let state = Mutex(State())

    fileprivate init(runner: JobRunner, source: String, window: Int) {
        self.runner = runner
        self.window = max(window, 1)
        let (logger, scheduler, directory) = (runner.logger, runner.scheduler, runner.directory)
        reporter = Task {
            await RunStatus.keepWriting(
                source: source, scheduler: scheduler, directory: directory,
                log: { logger.debug("downloads: \($0.summaryLine)") })
        }
    }

    /// Starts mirroring `job` once fewer than ``window`` jobs are under way; `then` hears its
    /// outcome. A session that has finished takes no more. Cancelling the caller while it waits
    /// for room cancels the session: the jobs under way stop, keeping their partials.
    func submit(_ job: MirrorJob, forced: Bool, then: (@Sendable (JobRunner.Outcome) async -> Void)? = nil) async {
        await waitForRoom()
        let runner = runner
        let taken = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.submitted += 1
            let number = state.submitted
            // Unstructured tasks, cancelled by hand: a task group removes each finished child from
            // a linked list (Swift 6.3), which costs seconds at tens of thousands of thumbnails.
            let task = Task {
                let outcome = await runner.mirrorFromAnySource(job, forced: forced)
                await then?(outcome)
                self.ended(number, outcome)
            }
            if state.cancelled { task.cancel() }
            state.running[number] = task
            return true
        }
        assert(taken, "a job submitted to a finished session: \(job.url)")
    }

    private func waitForRoom() async {
        let key = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let roomy = state.withLock { state -> Bool in
                    guard state.running.count >= window, !state.cancelled else { return true }
                    state.roomWaiters[key] = continuation
                    return false
                }
                if roomy { continuation.resume() }
            }
        } onCancel: {
            cancel()
            state.withLock { $0.roomWaiters.removeValue(forKey: key) }?.resume()
        }
    }

    /// Whether a job's outcome stopped the run: sources stop submitting.
    var isHalted: Bool { state.withLock { $0.halted } }

    private func ended(_ number: Int, _ outcome: JobRunner.Outcome) {
        if case .halted(let error) = outcome {
            let first = state.withLock { state in
                defer { state.halted = true }
                return !state.halted
            }
            if first {
                runner.logger.error("stopping the run: \(error)")
                cancel()
            }
        }
        let (waiter, drained) = state.withLock { state in
            state.running[number] = nil
            runner.record(outcome, in: &state.tally)
            let waiter = state.roomWaiters.isEmpty ? nil : state.roomWaiters.removeValue(forKey: state.roomWaiters.keys.min()!)
            let drained = state.finished && state.running.isEmpty ? state.drained.take() : nil
            return (waiter, drained)
        }
        waiter?.resume()
        drained?.resume()
    }

    /// Waits for every job submitted and adds their outcomes to `summary`; cancelling the caller
    /// cancels them (partials are kept).
    func finish(into summary: inout MirrorSummary) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Bool in
                    state.finished = true
                    guard !state.running.isEmpty else { return true }
                    state.drained = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            cancel()
        }
        let (submitted, tally) = state.withLock { ($0.submitted, $0.tally) }
        summary.wanted += submitted
        summary.addOutcomes(of: tally)
        do {
            try await runner.syncDirectories()
        } catch {
            runner.logger.error("\(error)")
            summary.problems.append("\(error)")
        }
        reporter.cancel()
        await reporter.value
    }

    /// Stops every job: those under way keep their partial data.
    func cancel() {
        let (running, waiters) = state.withLock { state in
            state.cancelled = true
            defer { state.roomWaiters = [:] }
            return (Array(state.running.values), Array(state.roomWaiters.values))
        }
        running.forEach { $0.cancel() }
        waiters.forEach { $0.resume() }
    }
}

extension MirrorSummary {
    /// Adds what ``JobRunner/record(_:in:)`` tallies in `other`.
    mutating func addOutcomes(of other: MirrorSummary) {
        downloaded += other.downloaded
        bytesDownloaded += other.bytesDownloaded
        alreadyPresent += other.alreadyPresent
        removed += other.removed
        deferred += other.deferred
        failures += other.failures
        interrupted = interrupted || other.interrupted
        stoppedBy = stoppedBy ?? other.stoppedBy
    }
}
