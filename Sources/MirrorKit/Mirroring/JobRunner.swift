import FoundationEssentials
import Logging
import Synchronization

/// One file to put into the mirror.
struct MirrorJob: Sendable {
    var url: String
    /// Where the file goes; a new version of it goes beside it (`name(1).ext`).
    var relativePath: String
    var expectedSize: Int64?
    /// The size a feed declares for the file: what it must have when the server states none.
    var declaredSize: Int64?
    /// Other URLs of the same file, tried in turn when `url` fails.
    var mirrors: [String] = []
    /// What the file is a version of (see ``MirroredFile/item``): the URL, unless a feed entry.
    var item: String
    /// The feed entry's release, recorded with the file.
    var release: FeedRelease?
    /// Every URL of the file: the first `url`, then its mirrors.
    let sources: [String]
    /// Asked after by a `new-file` run's sweep, not listed by its source this run.
    var isSweep = false
    /// The claim the file is committed under, when workers share the mirror.
    var fence: CommitFence?

    /// A tag's media: the item is its URL, and a URL the host removed stays removed. A feed's
    /// entry is what the feed lists now, whatever its URL once answered.
    var isMedia: Bool { item == url && mirrors.isEmpty }

    init(
        url: String, relativePath: String, expectedSize: Int64? = nil, mirrors: [String] = [], item: String? = nil,
        release: FeedRelease? = nil
    ) {
        self.url = url
        self.relativePath = relativePath
        self.expectedSize = expectedSize
        self.mirrors = mirrors
        self.item = item ?? url
        self.release = release
        sources = [url] + mirrors
    }
}

/// A mirror several workers share: the state they keep together, how they divide the work, and
/// the connections to one media host all of them may have at once.
package struct Sharing: Sendable {
    var state: any MirrorStore
    var coordinator: any WorkCoordinator
    var maxPerHost: Int
    /// Whether this worker's leases are known to hold: partials are touched only then.
    let leases: LeaseFreshness

    init(state: any MirrorStore, coordinator: any WorkCoordinator, maxPerHost: Int, clock: any RunClock = SystemClock()) {
        self.state = state
        self.coordinator = coordinator
        self.maxPerHost = maxPerHost
        leases = LeaseFreshness(leaseDuration: coordinator.leaseDuration, clock: clock)
    }

    /// Workers sharing the mirror through `database`.
    package init(_ database: SharedDatabase, maxPerHost: Int) {
        self.init(state: database.state, coordinator: database.coordinator, maxPerHost: maxPerHost)
    }
}

/// Takes jobs through the scheduler and into the mirror directory, and tallies what happened:
/// the part every kind of mirror (tag, feed) shares.
struct JobRunner: Sendable {
    enum Outcome: Sendable {
        /// Saved; `newVersion` when an older version of the item stays beside it, `restored` when
        /// the mirror had it and it was deleted from the disk.
        case downloaded(bytes: Int64, newVersion: Bool, restored: Bool = false)
        case alreadyPresent
        /// Asked again (`new-file`): the server's file is the one the mirror holds.
        case unchanged
        /// Gone upstream; `known` when an earlier run found it so (it is not named again), `kept`
        /// when the mirror holds a copy from before (`new-file` asked after it).
        case removed(String, known: Bool = false, kept: Bool = false)
        case interrupted
        /// A dry run would fetch it (see ``DryRun``).
        case planned(PlannedFile)
        /// A dry run in `new-file` mode would ask after the copy the mirror holds.
        case plannedRecheck
        /// Not tried: its host is down or throttling this run; a later run tries it.
        case deferred(url: String)
        case failed(DownloadError)
        /// The mirror as a whole cannot go on (a full disk, a database that takes no writes, a
        /// folder that is a planted link): the run stops, keeping what it has.
        case halted(MirrorError)
        /// Another worker took the file's claim over while this one was stopped past its lease:
        /// the file is that worker's to mirror.
        case handedOver

        /// The mirror as a whole cannot go on: a lost claim does not excuse it.
        var haltsTheRun: Bool {
            if case .halted = self { true } else { false }
        }

        /// The file is in the mirror, or known gone: no later run needs to try it.
        var isSettled: Bool {
            switch self {
            case .downloaded, .alreadyPresent, .unchanged, .removed, .planned, .plannedRecheck: true
            case .interrupted, .deferred, .failed, .halted, .handedOver: false
            }
        }
    }

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

    func record(_ outcome: Outcome, in summary: inout MirrorSummary) {
        switch outcome {
        case .downloaded(let bytes, let newVersion, let restored):
            if restored { summary.missingFetchedAgain += 1 }
            summary.downloaded += 1
            summary.bytesDownloaded += bytes
            if newVersion { summary.newVersions += 1 }
        case .alreadyPresent:
            summary.alreadyPresent += 1
        case .unchanged:
            summary.unchanged += 1
        case .removed(_, known: true, _):
            summary.removedBefore += 1
        case .removed(let url, known: false, _):
            logger.info("removed upstream: \(url)", metadata: ["url": "\(url)"])
            summary.removed.append(url)
        case .interrupted:
            summary.interrupted = true
        case .handedOver:
            summary.handedOver += 1
        case .planned(let file):
            summary.plan.add(file)
        case .plannedRecheck:
            summary.plan.rechecks += 1
        case .deferred(let url):
            summary.defer(url)
        case .failed(let error) where isHostTrouble(error):
            // It failed before its host was given up, for the reason the host was: one line about
            // the host says it, and the next run tries the file again.
            summary.defer(error.url)
        case .failed(let error):
            // A host that does not answer may yet be given up this run, and then one line says
            // so for all its files: the driver says the others at the end.
            if !Self.isUnansweredOrThrottled(error) { logger.error("\(error)", metadata: error.logFields) }
            summary.failures.append(error)
        case .halted(let error):
            summary.interrupted = true
            if summary.stoppedBy == nil { summary.stoppedBy = .mirror(error) }
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
    func halting(_ error: MirrorError, _ job: MirrorJob) -> Outcome {
        error.stopsTheRun ? .halted(error) : .failed(DownloadError(url: job.url, reason: .storage(error.description)))
    }

    /// A throttling answer or a connection failure from a host this run has given up.
    func isHostTrouble(_ error: DownloadError) -> Bool {
        health.verdict(forURL: error.url) != nil && Self.isUnansweredOrThrottled(error)
    }

    /// The host did not answer, or throttled: trouble of this worker's link or address, which
    /// another worker may not have.
    static func isUnansweredOrThrottled(_ error: DownloadError) -> Bool {
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

    private func mirrorAlone(_ job: MirrorJob, forced: Bool) async -> Outcome {
        guard !Task.isCancelled else { return .interrupted }
        if job.fence?.isLost == true { return .handedOver }
        let held: MirroredFile?
        let missing: Bool
        do {
            let removed: Bool
            let nameTaken: Bool
            (held, removed, missing, nameTaken) = try await heldCopy(for: job)
            // Deleted by hand and kept deleted: not asked for in any mode (new-file would save
            // the server's copy as a "new version" under the deleted name).
            if missing, keepDeleted { return .alreadyPresent }
            if held != nil {
                // Kept, and not asked for again unless new-file mode wants to know of a change;
                // media gone upstream has none to offer.
                if mode == .skipIfExists || (removed && job.isMedia) { return .alreadyPresent }
            } else {
                if removed { return .removed(job.url, known: true) }
                if mode == .skipIfExists, nameTaken { return .alreadyPresent }
            }
        } catch {
            return halting(error, job)
        }
        if let plan {
            guard held == nil else { return .plannedRecheck }
            guard planned.inserted(job.item) else { return .alreadyPresent }
            let file = PlannedFile(url: job.url, path: job.relativePath, bytes: job.expectedSize ?? job.declaredSize, missing: missing, source: source)
            plan(file)
            return .planned(file)
        }
        do {
            let condition = try held.flatMap { held throws(MirrorError) -> HeldVersion? in
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
            if let fence = job.fence, fence.takenOver {
                // The worker whose claim ran out may be alive, only stopped, with this partial
                // open: once let go, it must write into a file no name leads to.
                let (partials, url) = (partials, job.url)
                try await BlockingIO.runApart { () throws(MirrorError) in
                    do throws(FileSystemError) { try partials.detach(url) } catch { throw .fileSystem(error) }
                }
            }
            let file = try await scheduler.schedule(
                job.url, forced: forced, expectedSize: ExpectedSize(exact: job.expectedSize, declared: job.declaredSize), held: condition)
            if let held, file.isNotModified {
                try await state.confirm(
                    held.path, url: job.url, etag: file.etag, lastModified: file.lastModified, release: job.release,
                    replacingValidators: held.url != job.url)
                return .unchanged
            }
            // New-file mode keeps every version: one of them may have these bytes, the newest
            // (held) or an older one, also when the newest was deleted by hand (missing).
            if held != nil || (missing && mode == .newFile) {
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
            }
            guard file.length > 0 else {
                // A 200 with nothing in it is a broken server, not an empty file worth keeping.
                partials.remove(job.url)
                return .failed(DownloadError(url: job.url, reason: .emptyBody))
            }
            return await commit(file, of: job, besides: held, restoring: missing)
        } catch let error as MirrorError {
            return halting(error, job)
        } catch let error as DownloadError {
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
        } catch {
            return .failed(DownloadError(url: job.url, reason: .storage("\(error)")))
        }
    }

    /// The name a commit's file got (nil: skip-if-exists found it taken, and the file went).
    private struct NameGiven: Sendable {
        var name: String?
    }

    /// Names the fetched file and records it: beside `held` (a new version) when there is one.
    private func commit(_ file: FetchedFile, of job: MirrorJob, besides held: MirroredFile?, restoring missing: Bool) async -> Outcome {
        let lastModified = file.lastModified.flatMap { HTTPDate.parse($0) }
        // The commit moves the partial away (or, when the name is taken, deletes it).
        let (directory, partials) = (directory, partials)
        let mode = held == nil ? mode : .newFile
        let partName: String
        if let named = file.partName {
            partName = named
        } else {
            do throws(DigestError) {
                partName = try partials.partName(for: job.url)
            } catch {
                return .halted(.digest(error.description))
            }
        }
        // Carried by the named file until its state row is written: a kill in between leaves
        // what the next run needs to record it without a request (see ``adoptUnrecorded(_:)``).
        let record = PartialRecord(url: job.url, etag: file.etag, lastModified: file.lastModified, totalLength: file.length)
        if let leases, let fence = job.fence, !(await leases.mayTouch(job.url)) {
            // Stopped past its lease and let go: the partial's name may be another worker's now.
            guard !Task.isCancelled else { return .interrupted }
            fence.markLost()
            return .handedOver
        }
        let (source, relativePath, isFenced) = (source, job.relativePath, job.fence != nil)
        let giveName: @Sendable () throws(MirrorError) -> String? = {
            try directory.name(partName, from: partials.folder, as: relativePath, mode: mode)
        }
        let opened: OpenFile
        let namedWithTheSync: NameGiven?
        do {
            // Unfenced, the name follows the sync on the same thread: one hop to the blocking
            // queue and back per file, not two. Fenced, it waits for the claim's transaction.
            (opened, namedWithTheSync) = try await BlockingIO.run { () throws(MirrorError) in
                let opened = try directory.synced(partName, in: partials.folder, beforeSync: { PartialStore.attachForCommit(record, toFile: $0) })
                guard !isFenced else { return (opened, nil) }
                return (opened, NameGiven(name: try giveName()))
            }
        } catch {
            return halting(error, job)
        }
        let named = Mutex<String?>(nil)
        let recorded: MirroredFile?
        do {
            recorded = try await state.recordNamed(fencedBy: job.fence) { () async throws(MirrorError) -> MirroredFile? in
                // Fenced, the claim's row is locked meanwhile and the heartbeat renewing it
                // waits: long copies run on a queue apart (``BlockingIO/runApart(_:)``).
                let name: String?
                if let namedWithTheSync {
                    name = namedWithTheSync.name
                } else {
                    name = try await BlockingIO.run(giveName)
                }
                guard let name else { return nil }
                named.withLock { $0 = name }
                return MirroredFile(
                    path: name, item: job.item, source: source, url: job.url, etag: file.etag, lastModified: file.lastModified,
                    bytes: file.length, md5: file.md5, version: job.release?.version, updated: job.release?.updated)
            }
        } catch {
            guard let name = named.withLock({ $0 }) else {
                if case .claimTaken = error, let fence = job.fence {
                    // The partial is left as it is: it may be the other worker's by now.
                    fence.markLost()
                    logger.warning("\(error); leaving \(job.url) to it", metadata: ["url": "\(job.url)"])
                    return .handedOver
                }
                return halting(error, job)
            }
            // Unrecorded, the file would be fetched again under a second name by a new-file
            // run: it goes back to being a partial, whole, for the next run to commit.
            // The record a partial keeps, not the compact one a named file carries, put on before
            // the move so that no kill finds the partial without it: the next run commits it
            // whole, without fetching it again.
            let attached = PartialStore.attach(record, toFile: opened.descriptor)
            do {
                try directory.uncommit(name, backTo: partials.folder, as: partName)
                // Too long for an attribute: in the file beside it.
                if !attached { try? partials.save(record) }
            } catch let failure {
                logger.error("\(name) is mirrored but not recorded (\(failure)); a new-file run may save it twice")
            }
            return .halted(error)
        }
        guard let name = recorded?.path else { return .alreadyPresent }
        partials.detachRecord(for: job.url, fromFile: opened.descriptor)
        // Like wget -N and gallery-dl: the file carries the server's date, not the download's.
        if let lastModified { Directory.setModificationDate(lastModified, ofFile: opened.descriptor) }
        // Made only when the line is logged: a quiet run's files are most of its files.
        let fields = { () -> Logger.Metadata in ["url": "\(file.url)", "file": "\(name)", "bytes": "\(file.length)"] }
        if let held {
            logger.info("saved \(name), a new version beside \(held.path)", metadata: fields())
        } else {
            logger.info("saved \(name)", metadata: fields())
        }
        if let hook, let failure = await hook.saved(SavedFile(
            path: directory.root.appendingPathComponent(name).path, mirror: directory.root.path, relativePath: name,
            url: file.url, item: job.item,
            source: source, bytes: file.length)) {
            hookFailures.add(failure)
        }
        return .downloaded(bytes: file.bytesReceived, newVersion: held != nil, restored: missing)
    }
}

/// One mirroring of a URL at a time: the first job for it leads, in its own task; later ones wait
/// for its outcome. A follower that is cancelled gets `.interrupted` at once and the lead goes
/// on; a lead that is cancelled stops (only a whole run is ever cancelled), and its followers
/// hear that.
final class Flights: Sendable {
    private struct State {
        /// The followers of each URL being mirrored, by number.
        var flights: [String: [Int: CheckedContinuation<JobRunner.Outcome?, Never>]] = [:]
        var nextFollower = 0
    }

    private let state = Mutex(State())

    /// `body`'s outcome, and whether this call ran it (rather than joined a run under way).
    func run(
        _ url: String, _ body: () async -> JobRunner.Outcome
    ) async -> (JobRunner.Outcome, led: Bool) {
        while true {
            let follower = state.withLock { state -> Int? in
                guard state.flights[url] != nil else {
                    state.flights[url] = [:]
                    return nil
                }
                state.nextFollower += 1
                return state.nextFollower
            }
            guard let follower else {
                // Inline rather than in a task of its own: one task and one thread hop less per file.
                let outcome = await body()
                let followers = state.withLock { $0.flights.removeValue(forKey: url) } ?? [:]
                for waiting in followers.values { waiting.resume(returning: outcome) }
                return (outcome, true)
            }
            // nil: the lead ended between the two looks; this job looks again, as the next lead.
            if let outcome = await follow(url, as: follower) { return (outcome, false) }
        }
    }

    /// Jobs waiting for the lead of `url`.
    func followers(of url: String) -> Int {
        state.withLock { $0.flights[url]?.count ?? 0 }
    }

    private func follow(_ url: String, as follower: Int) async -> JobRunner.Outcome? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = state.withLock { state -> JobRunner.Outcome?? in
                    guard state.flights[url] != nil else { return .some(nil) }
                    // Checked under the lock the cancel handler takes: a cancel before this
                    // finds nothing to answer, so it is answered here.
                    guard !Task.isCancelled else { return .some(.interrupted) }
                    state.flights[url]![follower] = continuation
                    return .none
                }
                if case .some(let answer) = answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            state.withLock { $0.flights[url]?.removeValue(forKey: follower) }?.resume(returning: .interrupted)
        }
    }
}
