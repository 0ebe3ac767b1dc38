import CMirrorSystem
import FoundationEssentials
import Logging
import Synchronization

/// The jobs of one run, taken as they come: the scheduler decides what runs, forced jobs taking
/// the bandwidth first. At most a window of jobs are under way at once; a source submitting more
/// waits for room, so a tag of 100,000 items costs no more memory than one of a few hundred.
/// Outcomes are tallied as jobs end, and nothing of a finished job is kept.
final class JobSession: Sendable {
    /// Jobs under way at most: enough to keep every slot busy, with forced and unforced jobs
    /// waiting for each and a listing a few pages ahead of the downloads, and few enough that
    /// their tasks stay small. Each job in the window holds its task's async frames (about 10 KiB
    /// waiting, some 50 KiB at its deepest): at 16 downloads a window of 512 held 11 MiB of them
    /// (heaptrack's peak, small workload) and 128 holds a quarter, with no second lost.
    static func window(concurrency: Int) -> Int {
        max(64, 8 * concurrency)
    }

    private struct State {
        var running: [Int: Task<Void, Never>] = [:]
        /// Places in the window granted to submitters whose jobs have not started yet: a grant
        /// and the job's start are two steps, and a second submitter must not be granted the
        /// same place in between.
        var reserved = 0
        /// The most jobs under way at once so far.
        var peakUnderWay = 0
        var submitted = 0
        var settled = 0
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
    private let state = Mutex(State())

    init(runner: JobRunner, window: Int) {
        self.runner = runner
        self.window = max(window, 1)
    }

    /// Starts mirroring `job` once fewer than ``window`` jobs are under way; `then` hears its
    /// outcome. A session that has finished takes no more. Cancelling the caller while it waits
    /// for room cancels the session: the jobs under way stop, keeping their partials.
    func submit(_ job: MirrorJob, forced: Bool, then: (@Sendable (JobRunner.Outcome) async -> Void)? = nil) async {
        await waitForRoom()
        // Before the job runs: the sweep that may follow at once must see it.
        runner.handled.insert(job.item)
        let taken = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.submitted += 1
            let number = state.submitted
            runner.observer.observe(.fileKnown)
            // Unstructured tasks, cancelled by hand: a task group removes each finished child from
            // a linked list (Swift 6.3), which costs seconds at tens of thousands of thumbnails.
            // The task holds the session, not a copy of the runner, which would retain each of
            // the runner's references for every job.
            let task = Task {
                let outcome = await self.runner.mirrorFromAnySource(job, forced: forced)
                await then?(outcome)
                self.ended(number, outcome)
            }
            if state.cancelled { task.cancel() }
            state.running[number] = task
            state.reserved = max(state.reserved - 1, 0)
            state.peakUnderWay = max(state.peakUnderWay, state.running.count)
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
                    if state.cancelled { return true }
                    guard state.running.count + state.reserved >= window else {
                        state.reserved += 1
                        return true
                    }
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

    /// Submitters waiting for room in the window.
    var waitingForRoom: Int { state.withLock { $0.roomWaiters.count } }

    /// The most jobs that were under way at once: never more than the window.
    var peakUnderWay: Int { state.withLock { $0.peakUnderWay } }

    /// Jobs that have ended, whatever their outcome.
    var settled: Int { state.withLock { $0.settled } }

    /// Whether a job's outcome stopped the run: sources stop submitting.
    var isHalted: Bool { state.withLock { $0.halted } }

    /// Stops the run for `error`, the disk's or the mirror's rather than one file's (see
    /// ``MirrorError/stopsTheRun``): sources stop submitting, the jobs under way stop and keep
    /// their partials, and the summary names `error` (the first, when several come).
    func halt(_ error: MirrorError) {
        let first = state.withLock { state in
            defer { state.halted = true }
            guard !state.halted else { return false }
            state.tally.interrupted = true
            state.tally.stoppedBy = state.tally.stoppedBy ?? .mirror(error)
            return true
        }
        if first { cancel() }
    }

    private func ended(_ number: Int, _ outcome: JobRunner.Outcome) {
        if case .halted(let error) = outcome { halt(error) }
        let (waiter, drained) = state.withLock { state in
            state.running[number] = nil
            state.settled += 1
            // The counts, not a copy of the tally: a copy would make the next append to one of
            // its lists copy the whole list, at every file.
            let before = (downloaded: state.tally.downloaded, failed: state.tally.failures.count, removed: state.tally.removed.count)
            runner.record(outcome, in: &state.tally)
            runner.observer.observe(.fileSettled(
                state.tally.downloaded > before.downloaded ? .downloaded
                    : state.tally.failures.count > before.failed ? .failed
                    : state.tally.removed.count > before.removed ? .removed : .other))
            // The place the job leaves goes to the submitter waiting longest, reserved for it.
            let waiter = state.roomWaiters.isEmpty ? nil : state.roomWaiters.removeValue(forKey: state.roomWaiters.keys.min()!)
            if waiter != nil { state.reserved += 1 }
            let drained = state.finished && state.running.isEmpty ? state.drained.take() : nil
            return (waiter, drained)
        }
        waiter?.resume()
        drained?.resume()
        // A job's steps run on whichever thread is free (pool threads, blocking-I/O queues, the
        // archive's queue), each allocating from a malloc arena of its own that keeps what it
        // freed: a long run's memory would grow with the files it has done, not with the window.
        // Counted for the process, not the session: a run of many small sources is long too.
        if Self.settledInProcess.add(1, ordering: .relaxed).newValue % Self.filesBetweenMemoryReleases == 0 {
            mirror_release_free_memory()
        }
    }

    /// Often enough that a run's arenas stay near what the window holds; rare enough to cost
    /// nothing (a trim takes a millisecond or two, a few thousand files take seconds).
    static let filesBetweenMemoryReleases = 8_192
    private static let settledInProcess = Atomic<Int>(0)

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
        do throws(MirrorError) {
            try await runner.syncDirectories()
        } catch {
            // The names made this run may not survive a crash: the disk's failure, not a file's.
            summary.interrupted = true
            summary.stoppedBy = summary.stoppedBy ?? .mirror(error)
        }
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
        unchanged += other.unchanged
        newVersions += other.newVersions
        missingFetchedAgain += other.missingFetchedAgain
        removed += other.removed
        removedBefore += other.removedBefore
        plan.addUp(other.plan)
        deferredByHost.merge(other.deferredByHost, uniquingKeysWith: +)
        failures += other.failures
        interrupted = interrupted || other.interrupted
        handedOver += other.handedOver
        stoppedBy = stoppedBy ?? other.stoppedBy
    }
}
