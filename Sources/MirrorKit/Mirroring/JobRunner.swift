import FoundationEssentials
import Logging

/// Takes jobs through the scheduler and into the mirror directory, and tallies what happened:
/// the part every kind of mirror (tag, feed) shares.
struct JobRunner: Sendable {
    let directory: MirrorDirectory
    let partials: PartialStore
    /// Whether this worker's leases hold, when workers share the mirror.
    let leases: LeaseFreshness?
    let state: any MirrorStore
    /// How this worker shares the mirror with others; nil when it has the directory to itself.
    let coordinator: (any WorkCoordinator)?
    let scheduler: DownloadScheduler
    let health: HostHealth
    private(set) var mode: DownloadMode
    /// A file the mirror recorded and the user deleted stays deleted: not asked for again.
    private(set) var keepDeleted: Bool
    /// The source the files are recorded as mirrored by (see ``MirroredFile/source``).
    private(set) var source: String?
    let logger: Logger
    let flights = Flights()
    /// Items this run has asked for: a `new-file` run's sweep revalidates the others.
    let handled = ItemSet()
    /// Items a dry run has planned: a later job for one (another source lists the same image)
    /// finds it as a real run would, already fetched. By item, not URL: two feeds' entries with
    /// one URL are two files in a real run too.
    private let planned = ItemSet()
    /// Hears what the run does, for the terminal, the metrics file and `mirror status`.
    let observer: any RunObserver
    /// Writes each file's metadata sidecar; nil when the run keeps none.
    private(set) var sidecars: MetadataSidecars?
    /// Hears of every file saved (`--exec`); nil when nothing does.
    private(set) var hook: (any SavedFileHook)?
    /// What the hook said went wrong, for the summary.
    let hookFailures = HookFailures()
    /// Set once a file went to its name without the record a kill would need: said once a run.
    let unrecordableFileSaid = OnceFlag()
    /// Set for a dry run: hears each file a real run would fetch, and nothing is fetched.
    let plan: (@Sendable (PlannedFile) -> Void)?
    /// Files a sweep (``revalidateTheRest(in:claiming:restoring:)``) reads at once: its memory is
    /// a page's, whatever the source's size.
    var sweepPageSize = 500

    init(
        directory: MirrorDirectory, engine: TransferEngine, mode: DownloadMode, keepDeleted: Bool = false,
        source: String? = nil, concurrency: Int,
        retry: RetryPolicy, isRemovedPlaceholder: (@Sendable (TransferResponse) -> Bool)? = nil,
        maxFileSize: Int64 = Downloader.defaultMaxFileSize, observer: any RunObserver = UnobservedRun(),
        sharing: Sharing? = nil, metadata: Bool = false, hook: (any SavedFileHook)? = nil,
        plan: (@Sendable (PlannedFile) -> Void)? = nil, logger: Logger
    ) throws(MirrorError) {
        self.plan = plan
        self.hook = hook
        self.directory = directory
        sidecars = metadata ? MetadataSidecars(directory: directory) : nil
        self.observer = observer
        self.mode = mode
        self.keepDeleted = keepDeleted
        self.source = source
        self.logger = logger
        do {
            // Before anything is named by it: a failing MD5 must not make every partial look stray.
            _ = try Digest.md5Hex(Array("mirror".utf8))
        } catch {
            throw .digest(error.description)
        }
        partials = try directory.partialStore()
        if let sharing {
            state = sharing.state
            coordinator = sharing.coordinator
        } else {
            state = try StateDatabase(directory: directory) { logger.warning("\($0)") }
            coordinator = nil
        }
        health = HostHealth(settings: .init(maxPerHost: concurrency))
        leases = sharing?.leases
        var mayTouchPartial: (@Sendable (String) async -> Bool)?
        if let leases = sharing?.leases { mayTouchPartial = { url in await leases.mayTouch(url) } }
        var transport: any DownloadTransport = EngineTransport(
            engine: engine, partials: partials, retry: retry, health: health,
            isRemovedPlaceholder: isRemovedPlaceholder, maxFileSize: maxFileSize, mayTouchPartial: mayTouchPartial,
            logger: logger)
        if let sharing {
            transport = ClusterHostGate(inner: transport, coordinator: sharing.coordinator, limit: sharing.maxPerHost)
        }
        let configuration = DownloadScheduler.Configuration(maxConcurrent: concurrency, maxPerHost: concurrency)
        scheduler = DownloadScheduler(transport: transport, configuration: configuration)
        // Other workers' partials are theirs while they run: a shared mirror leaves them.
        guard sharing == nil else { return }
        // The budget for suspended downloads holds for what earlier runs left too.
        // At least one file of the largest size allowed: a big enclosure cut short must not lose
        // its bytes at every start.
        let dropped = partials.purge(
            keepingAtMost: configuration.suspendedCountBudget,
            bytes: max(configuration.suspendedBytesBudget, maxFileSize))
        if !dropped.isEmpty { logger.info("dropped \(dropped.count) partial downloads of earlier runs, over the budget") }
        // A dry run writes nothing, not even a removal.
        guard plan == nil else { return }
        let stale = directory.rootFolder.removeTemporariesOfOtherProcesses()
        if !stale.isEmpty { logger.info("removed \(stale.count) temporary files that killed runs left") }
    }

    /// The same runner (its scheduler, state and flights), recording files as `source`'s.
    func named(_ source: String) -> JobRunner {
        var runner = self
        runner.source = source
        return runner
    }

    /// The same runner taking a source's own choices of how its files are kept.
    func choosing(mode: DownloadMode, keepDeleted: Bool, metadata: Bool, hook: (any SavedFileHook)?) -> JobRunner {
        var runner = self
        runner.mode = mode
        runner.keepDeleted = keepDeleted
        runner.sidecars = metadata ? MetadataSidecars(directory: directory) : nil
        runner.hook = hook
        return runner
    }

    /// Makes the names given so far durable (before anything that vouches for them is written).
    func syncDirectories() async throws(MirrorError) {
        let directory = directory
        try await BlockingIO.run { () throws(MirrorError) in try directory.syncDirectories() }
    }

    /// Opens a session that takes jobs as a source finds them.
    func start(window: Int? = nil) -> JobSession {
        JobSession(runner: self, window: window ?? JobSession.window(concurrency: scheduler.configuration.maxConcurrent))
    }

    /// Tries the job's URL, then each mirror while the failure is the source's (not a cancel).
    func mirrorFromAnySource(_ job: MirrorJob, forced: Bool) async -> Outcome {
        let outcome = await mirror(job, forced: forced)
        guard !job.mirrors.isEmpty else { return outcome }
        return await tryMirrors(of: job, forced: forced, after: outcome)
    }

    /// Split out so that ``mirrorFromAnySource(_:forced:)``'s frame, which every job holds to
    /// its end (see ``mirrorAlone(_:forced:)``), stays small: most jobs have no mirror.
    @inline(never)
    private func tryMirrors(of job: MirrorJob, forced: Bool, after first: Outcome) async -> Outcome {
        var outcome = first
        for alternate in job.mirrors {
            let failure: String
            switch outcome {
            case .failed(let error): failure = error.description
            case .deferred(let url): failure = "\(URLAuthority.of(url)) is unavailable"
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
        var (outcome, led) = await flights.run(job.url) { await mirrorAlone(job, forced: forced) }
        // Whatever stopped a job whose claim another worker took (a cancel, a partial that went
        // away, a write into the file given up), the file is that worker's now.
        if let fence = job.fence, fence.isLost, !outcome.isSettled, !outcome.haltsTheRun { outcome = .handedOver }
        guard !led else { return outcome }
        switch outcome {
        case .downloaded, .planned: return .alreadyPresent
        default: return outcome
        }
    }

    /// A job whose copy was looked up, waiting for its download. A class: the few async frames
    /// it passes through hold a reference, not a copy each.
    private final class LookedUp: Sendable {
        let job: MirrorJob
        let held: MirroredFile?
        let missing: Bool
        /// What the copy held lets the server answer "not modified" to.
        let condition: HeldVersion?

        init(job: MirrorJob, held: MirroredFile?, missing: Bool, condition: HeldVersion?) {
            self.job = job
            self.held = held
            self.missing = missing
            self.condition = condition
        }
    }

    private enum LookUp {
        case settled(Outcome)
        case download(LookedUp)
    }

    /// Looks the job up, waits for its turn and the download, and settles it. Most of the window
    /// waits in the scheduler, and a task keeps the memory of its deepest frames until it ends
    /// (its allocator reuses it, never frees it): so the steps before the wait are small async
    /// functions with their synchronous logic in functions of its own, passing a reference. As
    /// one function, these frames were 15 KiB, and their lookups another 10, held by every
    /// waiting job.
    private func mirrorAlone(_ job: MirrorJob, forced: Bool) async -> Outcome {
        guard !Task.isCancelled else { return .interrupted }
        if job.fence?.isLost == true { return .handedOver }
        let lookedUp: LookedUp
        switch await lookUp(job) {
        case .settled(let outcome): return outcome
        case .download(let found): lookedUp = found
        }
        let file: FetchedFile
        do {
            file = try await scheduler.schedule(
                lookedUp.job.url, forced: forced,
                expectedSize: ExpectedSize(exact: lookedUp.job.expectedSize, declared: lookedUp.job.declaredSize),
                held: lookedUp.condition)
        } catch {
            return await settleFailure(error, of: lookedUp)
        }
        return await settle(file, of: lookedUp)
    }

    @inline(never)
    private func lookUp(_ job: MirrorJob) async -> LookUp {
        do throws(MirrorError) {
            let copy = try await heldCopy(for: job)
            if let outcome = settledByHeldCopy(job, copy) { return .settled(outcome) }
            var job = job
            if copy.held == nil, mode == .skipIfExists, copy.nameTaken {
                guard copy.missing, let newest = try await missingNewestBesideAnOlderVersion(of: job) else { return .settled(.alreadyPresent) }
                job.relativePath = newest
            }
            if let plan { return .settled(plannedOutcome(job, held: copy.held, missing: copy.missing, plan: plan)) }
            let lookedUp = try LookedUp(job: job, held: copy.held, missing: copy.missing, condition: condition(of: copy.held, for: job))
            if let fence = job.fence, fence.takenOver { try await detachPartial(of: job) }
            return .download(lookedUp)
        } catch {
            return .settled(halting(error, job))
        }
    }

    /// The outcome when the copy held (or its absence) settles the job without a download.
    @inline(never)
    private func settledByHeldCopy(_ job: MirrorJob, _ copy: (held: MirroredFile?, removed: Bool, missing: Bool, nameTaken: Bool)) -> Outcome? {
        // Deleted by hand and kept deleted: not asked for in any mode (new-file would save
        // the server's copy as a "new version" under the deleted name).
        if copy.missing, keepDeleted { return .alreadyPresent }
        if copy.held != nil {
            // Kept, and not asked for again unless new-file mode wants to know of a change;
            // media gone upstream has none to offer.
            if mode == .skipIfExists || (copy.removed && job.isMedia) { return .alreadyPresent }
        } else if copy.removed {
            return .removed(job.url, known: true)
        }
        return nil
    }

    /// A dry run's job: heard as planned, nothing fetched.
    @inline(never)
    private func plannedOutcome(_ job: MirrorJob, held: MirroredFile?, missing: Bool, plan: @Sendable (PlannedFile) -> Void) -> Outcome {
        guard held == nil else { return .plannedRecheck }
        guard planned.inserted(job.item) else { return .alreadyPresent }
        let file = PlannedFile(url: job.url, path: job.relativePath, bytes: job.expectedSize ?? job.declaredSize, missing: missing, source: source)
        plan(file)
        return .planned(file)
    }

    /// The validators the copy held lets the request send.
    @inline(never)
    private func condition(of held: MirroredFile?, for job: MirrorJob) throws(MirrorError) -> HeldVersion? {
        guard let held else { return nil }
        if held.url == job.url {
            guard held.etag == nil, held.lastModified == nil else {
                return HeldVersion(etag: held.etag, lastModified: held.lastModified)
            }
            // Recorded before validators were (or sent none): the file's time is the
            // server's Last-Modified, or when it was saved; wget -N asks by it too.
            return HeldVersion(etag: nil, lastModified: try directory.modificationDate(of: held.path).map(HTTPDate.format))
        }
        // A mirror of the same file may tag it alike (a content hash), but its date says
        // nothing of this server's copy; another URL's validators say nothing at all.
        guard job.sources.contains(held.url), let etag = held.etag else { return nil }
        return HeldVersion(etag: etag, lastModified: nil)
    }

    /// The worker whose claim on the job ran out may be alive, only stopped, with this partial
    /// open: once let go, it must write into a file no name leads to.
    private func detachPartial(of job: MirrorJob) async throws(MirrorError) {
        let (partials, url) = (partials, job.url)
        try await BlockingIO.runApart { () throws(MirrorError) in
            do throws(FileSystemError) { try partials.detach(url) } catch { throw .fileSystem(error) }
        }
    }

    /// Keeps the downloaded answer: confirms the copy held, or names the bytes of a version the
    /// mirror has, or commits the new file.
    @inline(never)
    private func settle(_ file: FetchedFile, of lookedUp: LookedUp) async -> Outcome {
        // New-file mode keeps every version: one of them may have these bytes, the newest
        // (held) or an older one, also when the newest was deleted by hand (missing).
        if lookedUp.held != nil || (lookedUp.missing && mode == .newFile),
           let outcome = await settleAsAVersionHeld(file, of: lookedUp) {
            return outcome
        }
        guard file.length > 0 else {
            // A 200 with nothing in it is a broken server, not an empty file worth keeping.
            partials.remove(lookedUp.job.url)
            return .failed(DownloadError(url: lookedUp.job.url, reason: .emptyBody))
        }
        return await commit(file, of: lookedUp.job, besides: lookedUp.held, restoring: lookedUp.missing)
    }

    /// The outcome when the answer is a version the mirror has (not modified, or the bytes of
    /// one it holds); nil when it is new. Split out so that the frame of the caller, which a
    /// job holds through its commit, stays small: most files are new.
    @inline(never)
    private func settleAsAVersionHeld(_ file: FetchedFile, of lookedUp: LookedUp) async -> Outcome? {
        let (job, held) = (lookedUp.job, lookedUp.held)
        do throws(MirrorError) {
            if let held, file.isNotModified {
                try await state.confirm(
                    held.path, url: job.url, etag: file.etag, lastModified: file.lastModified, release: job.release,
                    replacingValidators: held.url != job.url)
                return .unchanged
            }
            if let same = try await sameBytes(file, as: job.item) {
                if try !directory.fileExists(same.path) {
                    guard keepDeleted, let held else {
                        // A version deleted by hand, served again: back under its own name.
                        var restoring = job
                        restoring.relativePath = same.path
                        return await commit(file, of: restoring, besides: nil, restoring: true)
                    }
                    // Kept deleted: the copy held stays the current one (made current, the
                    // deleted version would keep the item from being asked after again).
                    partials.remove(job.url)
                    try await state.confirm(
                        held.path, url: job.url, etag: file.etag, lastModified: file.lastModified, release: job.release,
                        replacingValidators: true)
                    return .unchanged
                }
                partials.remove(job.url)
                if same.path != held?.path {
                    // Back to an older version's bytes: that file is the item's current one again.
                    try await state.record(same)
                }
                // The validators of this answer, as sent: stale ones would fetch it whole every run.
                try await state.confirm(
                    same.path, url: job.url, etag: file.etag, lastModified: file.lastModified, release: job.release,
                    replacingValidators: true)
                logger.debug("\(job.url): a new answer with the bytes of \(same.path)")
                return .unchanged
            }
        } catch {
            return halting(error, job)
        }
        return nil
    }

    /// What a download that failed leaves of the job.
    @inline(never)
    private func settleFailure(_ error: DownloadError, of lookedUp: LookedUp) async -> Outcome {
        let (job, held) = (lookedUp.job, lookedUp.held)
        // A 404 or 410 for a file the mirror holds means gone upstream: the copy stays, and
        // later runs stop asking. A URL a feed lists fails instead, so its mirrors are tried,
        // and a later release is still seen.
        let gone: Bool = switch error.reason {
        case .removed: true
        // A sweep's job is a file the mirror had (a deleted one being restored has no held copy).
        case .httpStatus(let status): (held != nil || job.isSweep) && (status == 404 || status == 410) && (job.isMedia || job.isSweep)
        default: false
        }
        if gone {
            do {
                try await state.recordRemoved(job.url)
            } catch {
                return .halted(error)
            }
            return .removed(job.url, kept: held != nil)
        }
        switch error.reason {
        case .hostUnavailable:
            return .deferred(url: job.url)
        default:
            if let halting = Self.halting(error) { return .halted(halting) }
            guard error.isCancellation else { return .failed(error) }
            return job.fence?.isLost == true ? .handedOver : .interrupted
        }
    }
}
