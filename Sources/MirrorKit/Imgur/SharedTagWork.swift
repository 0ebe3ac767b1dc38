import FoundationEssentials
import Logging
import Synchronization

/// One worker's part in mirroring a tag that several share (see ``WorkCoordinator``): it crawls
/// the tag when no other worker does (the crawl's images go to the shared queue, not to this
/// worker), claims images from the queue a few at a time as it has room for them, and renews its
/// leases while it works. It ends once the crawl is over, the queue has nothing it may claim, and
/// no other live worker holds claims that could still run out and come to it.
final class SharedTagWork: Sendable {
    let coordinator: any WorkCoordinator
    let source: String
    let jobs: JobRunner
    let session: JobSession
    let images: ImageCompletion
    let claims: ClaimedImages
    let logger: Logger
    /// What the polls and the heartbeat wait on, and the time the worker's rate is measured by.
    let clock: any RunClock

    init(
        coordinator: any WorkCoordinator, source: String, jobs: JobRunner, session: JobSession, images: ImageCompletion,
        claims: ClaimedImages, clock: any RunClock = SystemClock(), logger: Logger
    ) {
        self.clock = clock
        self.coordinator = coordinator
        self.source = source
        self.jobs = jobs
        self.session = session
        self.images = images
        self.claims = claims
        self.logger = logger
    }

    /// Images this worker holds at most: enough to keep its downloads busy, few enough that the
    /// other workers find work in the queue.
    var maxHeld: Int { max(4, jobs.scheduler.configuration.maxConcurrent * 2) }

    /// Works until the shared work is done; returns this worker's crawl, if it crawled.
    func run(
        readListing: @escaping @Sendable (_ found: @escaping @Sendable ([ImgurImage]) async -> Void) async -> TagCrawler.Report,
        submit: @escaping @Sendable ([ImgurImage]) async -> Void
    ) async throws(MirrorError) -> TagCrawler.Report {
        // The server's time: a crawl "since" is compared with the server's clock, not this host's.
        let started = try await coordinator.register(source: source)
        let heartbeat = Task { await keepLeases() }
        defer { heartbeat.cancel() }
        let crawling = Task { () -> Result<TagCrawler.Report?, MirrorError> in
            do throws(MirrorError) {
                return .success(try await crawlWhenNoOneDoes(since: started, readListing: readListing))
            } catch {
                return .failure(error)
            }
        }
        let crawlEnded = { @Sendable [crawlingDone] () -> Bool in crawlingDone.isSet }
        let claiming = await withTaskCancellationHandler { () async -> Result<Void, MirrorError> in
            do throws(MirrorError) {
                return .success(try await claimUntilDone(submit: submit, crawlEnded: crawlEnded))
            } catch {
                return .failure(error)
            }
        } onCancel: {
            crawling.cancel()
        }
        switch claiming {
        case .failure(let error):
            // The downloads under way stop too: without this worker's heartbeat their claims run
            // out, and another worker would take them while they still write.
            session.halt(error)
            crawling.cancel()
        case .success:
            // Claiming ended with images still under way (their host was given up): their leases
            // are renewed until their jobs end, not left to run out while they write.
            await images.waitForRoom(below: 1)
        }
        let crawl = await crawling.value
        try claiming.get()
        return try crawl.get() ?? TagCrawler.Report()
    }

    /// The crawl is over for this worker: it crawled, or another did.
    private let crawlingDone = CancellationFlag()

    /// Crawls the tag once the lease is this worker's, unless another worker crawled it to its end
    /// since `since`; while another crawls, asks again now and then (its lease runs out if it dies).
    private func crawlWhenNoOneDoes(
        since: Date, readListing: @escaping @Sendable (_ found: @escaping @Sendable ([ImgurImage]) async -> Void) async -> TagCrawler.Report
    ) async throws(MirrorError) -> TagCrawler.Report? {
        defer { crawlingDone.set() }
        while !Task.isCancelled, !session.isHalted {
            switch try await coordinator.leadCrawl(of: source, since: since) {
            case .done:
                return nil
            case .busy:
                // Soon, not once a lease: the crawl may end at any moment, and until this
                // worker knows it has, it cannot finish.
                try? await clock.sleep(for: .milliseconds(500))
            case .lead:
                logger.debug("crawling \(source) for the workers")
                // The images go to the shared queue (the store), where every worker claims them.
                let crawl = await readListing { _ in }
                let completed = !Task.isCancelled && !session.isHalted && crawl.stoppedBy == nil
                try await coordinator.endCrawl(of: source, completed: completed)
                return crawl
            }
        }
        return nil
    }

    /// Claims images while there is room, until nothing is left this worker could do.
    private func claimUntilDone(
        submit: @escaping @Sendable ([ImgurImage]) async -> Void, crawlEnded: @escaping @Sendable () -> Bool
    ) async throws(MirrorError) {
        var idle = false
        // Set once a look found no other live claim: the next empty take ends the work.
        var othersHeldNone = false
        while !Task.isCancelled, !session.isHalted {
            if let host = jobs.health.verdicts.first {
                // This worker's address is refused or its host down: it takes no more, and what
                // it let go is any other worker's (on another address, it may fare better).
                logger.warning("\(host); leaving the rest to the other workers")
                return
            }
            // Read before claiming: the crawl's last page may land between an empty claim and
            // the check, and must not be taken for nothing left.
            let ended = crawlEnded()
            let room = maxHeld - images.inFlight
            var claimed: [ImgurImage] = []
            if room > 0 {
                for taken in try await coordinator.claimImages(limit: room) {
                    guard let image = ImgurCrawlStore.image(taken.image) else { continue }
                    claims.hold(image.id, fence: taken.fence)
                    claimed.append(image)
                }
                if !claimed.isEmpty {
                    logger.debug("claimed \(claimed.count) images: \(claimed.map(\.id).joined(separator: " "))")
                    idle = false
                    othersHeldNone = false
                    await submit(claimed)
                    continue
                }
            }
            if room > 0, ended, images.inFlight == 0 {
                // What this worker finished is marked first: other workers wait on its claims
                // as it waits on theirs.
                await images.flush()
                // Nothing to claim: done, unless a live worker's claims may still run out. A
                // claim that ran out between the take above and this look is neither held nor
                // taken: one more take, after the look, finds it before the worker ends.
                guard try await coordinator.othersHoldClaims() else {
                    if othersHeldNone { return }
                    othersHeldNone = true
                    continue
                }
                othersHeldNone = false
                if !idle { logger.debug("waiting for other workers' claims to finish or run out") }
                idle = true
            }
            if room <= 0 {
                // Full: the next image to settle makes room, and this worker claims at once
                // (polling here held a worker of small files to a few images a beat).
                await images.waitForRoom(below: maxHeld)
                continue
            }
            try? await clock.sleep(for: .milliseconds(250))
        }
    }

    /// Renews this worker's leases three times a lease; stops the downloads of images whose
    /// claims ran out and went to another worker.
    private func keepLeases() async {
        var last = (time: clock.elapsed, bytes: Int64(0))
        var renewed = clock.elapsed
        while !Task.isCancelled {
            try? await clock.sleep(for: coordinator.leaseDuration / 3)
            guard !Task.isCancelled else { return }
            let bytes = await jobs.scheduler.status().receivedBytes
            let now = clock.elapsed
            let seconds = (now - last.time).inSeconds
            let rate = seconds > 0 ? Double(bytes - last.bytes) / seconds : 0
            last = (now, bytes)
            let figures = WorkerFigures(filesDone: session.settled, bytes: bytes, bytesPerSecond: max(rate, 0))
            let began = clock.elapsed
            do throws(MirrorError) {
                let lost = try await coordinator.heartbeat(figures, holding: claims.ids)
                renewed = clock.elapsed
                // An image marked done since the beat began is not lost.
                var lostURLs: [String] = []
                for id in lost.intersection(claims.ids) {
                    logger.warning("the claim on image \(id) ran out and another worker took it; stopping its downloads here")
                    lostURLs += claims.lose(id)
                }
                // Before the downloads waiting to touch their partials go on: those of lost
                // claims hear it first.
                jobs.leases?.renewed(began: began, lost: lostURLs)
                for url in lostURLs { await jobs.scheduler.cancel(url) }
            } catch {
                // The next beat tries again; leases last three beats. Near the end of the last,
                // this worker stops its downloads: once its claims run out, another worker may
                // take them over, and two must never write one partial.
                logger.warning("could not renew this worker's leases: \(error)")
                if clock.elapsed - renewed >= coordinator.leaseDuration * 2 / 3 {
                    session.halt(error)
                    return
                }
            }
        }
    }
}

/// The images this worker holds claims on, with the fence each was taken under and their
/// files' URLs.
final class ClaimedImages: Sendable {
    private struct Claim {
        var fence: CommitFence?
        var urls: [String] = []
    }

    private let held = Mutex<[String: Claim]>([:])

    /// Notes the claim on `id` as taken under `fence`, before its files are known.
    func hold(_ id: String, fence: CommitFence) {
        held.withLock { $0[id] = Claim(fence: fence) }
    }

    /// Notes the files of `id`; returns the fence they commit under, nil when the claim is not
    /// held (lost before its jobs began).
    func insert(_ id: String, urls: [String]) -> CommitFence? {
        held.withLock { held in
            guard held[id] != nil else { return nil }
            held[id]!.urls = urls
            return held[id]!.fence
        }
    }

    /// Forgets `id`; returns its URLs.
    @discardableResult
    func remove(_ id: String) -> [String] {
        held.withLock { $0.removeValue(forKey: id) }?.urls ?? []
    }

    /// Forgets `id`, whose claim another worker has taken over: its jobs end as handed over.
    /// Returns its URLs, whose downloads are to stop.
    func lose(_ id: String) -> [String] {
        let claim = held.withLock { $0.removeValue(forKey: id) }
        claim?.fence?.markLost()
        return claim?.urls ?? []
    }

    var ids: Set<String> { held.withLock { Set($0.keys) } }
}

extension JobRunner.Outcome {
    /// Whether a shared mirror leaves the image alone for a while: it failed here and would fail
    /// again at once; a cancelled one is any worker's at once.
    var parksClaim: Bool {
        switch self {
        // A host that did not answer or throttled this worker (its link, its address) may serve
        // another: only the file's own failures (a 404, a body too large) wait.
        case .failed(let error): !JobRunner.isUnansweredOrThrottled(error)
        case .deferred, .downloaded, .alreadyPresent, .unchanged, .removed, .interrupted, .halted, .planned, .plannedRecheck,
             .handedOver: false
        }
    }
}

