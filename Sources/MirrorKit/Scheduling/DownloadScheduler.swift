import Synchronization

/// The two-tier download scheduler: forced items take the bandwidth first, unforced ones share
/// what is left.
///
/// - At most ``Configuration/maxConcurrent`` transfers run at once, and
///   ``Configuration/maxPerHost`` per host (lower while the transport says a host throttles).
/// - Forced items take free slots first; when none is free, an unforced transfer is paused (it
///   keeps its connection) to make room. While a forced transfer is receiving, unforced ones are
///   held; one that is connecting or backing off holds nobody back. A transfer paused longer than
///   ``Configuration/pauseGrace`` is stopped, its partial data kept, and resumes later by Range.
/// - Waiting items start newest first, paused ones resume before that.
/// - Requests for a URL already known join it: one transfer, every caller gets the file or the
///   error. Joining with `forced` upgrades the item.
/// - ``cancel(_:)`` suspends an item with its partial data kept; scheduling the URL again revives
///   it from there. Suspended partials beyond a budget are purged, oldest first.
///
/// The decisions are ``SchedulerCore``'s; this actor performs them.
package actor DownloadScheduler {
    package struct Configuration: Sendable, Equatable {
        /// Downloads at once, and to one host, unless told otherwise.
        package static let defaultConcurrency = 6

        var maxConcurrent: Int
        var maxPerHost: Int
        /// How long a transfer stays paused for a forced item before it is stopped instead:
        /// a server drops a connection it cannot send on after a while (nginx: 60 s).
        var pauseGrace: Duration
        /// Suspended partials kept at most, in bytes and in number.
        var suspendedBytesBudget: Int64
        var suspendedCountBudget: Int

        package init(
            maxConcurrent: Int = Configuration.defaultConcurrency, maxPerHost: Int = Configuration.defaultConcurrency, pauseGrace: Duration = .seconds(10),
            suspendedBytesBudget: Int64 = 1 << 30, suspendedCountBudget: Int = 200
        ) {
            self.maxConcurrent = max(maxConcurrent, 1)
            self.maxPerHost = max(maxPerHost, 1)
            self.pauseGrace = pauseGrace
            self.suspendedBytesBudget = suspendedBytesBudget
            self.suspendedCountBudget = suspendedCountBudget
        }
    }

    /// Starts a pause's timer: `fire` runs once `after` has passed, unless stopped first.
    package typealias TimerStarter = @Sendable (_ after: Duration, _ fire: @escaping @Sendable () -> Void) -> Stopper

    /// One dispatch timer for every pause of the process (see ``PauseTimers``).
    package static let sharedTimers: TimerStarter = { after, fire in
        pauseTimers.start(after: after, fire)
    }

    private static let pauseTimers = PauseTimers()

    let configuration: Configuration
    private let transport: any DownloadTransport
    private let hub = EventHub()
    private let inbox = SchedulerInbox()
    private let callerNumbers = Atomic<CallerID>(0)
    private var core: SchedulerCore
    private var callers: [CallerID: CallerTicket.Continuation] = [:]
    private var transfers: [TransferID: Stopper] = [:]
    private var pauseTimers: [TransferID: Stopper] = [:]
    /// The transfer of each URL that has one, with what it reports from the engine thread.
    private var reports: [String: (id: TransferID, report: TransferReport)] = [:]
    /// Bytes received this run by transfers that have ended (each leg of a stopped and resumed
    /// one counted once).
    private var receivedByEndedTransfers: Int64 = 0
    private var statusesTaken = 0
    private let startTimer: TimerStarter

    package init(
        transport: any DownloadTransport, configuration: Configuration = Configuration(),
        timers: @escaping TimerStarter = DownloadScheduler.sharedTimers
    ) {
        self.transport = transport
        self.configuration = configuration
        startTimer = timers
        core = SchedulerCore(
            limits: configuration,
            hostLimit: { transport.concurrencyLimit(forHost: $0) },
            partialLength: { transport.partialLength(of: $0) },
            holdable: { transport.isHoldable($0) })
        transport.onHoldRefused { [weak self] id in self?.post(.holdRefused(id: id)) }
        transport.onLimitRaised { [weak self] in self?.post(.limitRaised) }
    }

    /// Transfers and timers hold the scheduler weakly: when it goes, they stop.
    deinit {
        for stopper in transfers.values { stopper.stop() }
        for stopper in pauseTimers.values { stopper.stop() }
    }

    /// A new stream of everything that happens from now on; any number of observers may listen.
    nonisolated func events() -> AsyncStream<SchedulerEvent> {
        hub.stream()
    }

    /// Ends every event stream.
    nonisolated func finishEvents() {
        hub.finish()
    }

    /// Downloads `url` (or joins the download already under way) and returns the complete file.
    ///
    /// The request reaches the scheduler before the first suspension of this call: a
    /// nonisolated task that calls it with `Task.immediate` has been heard once it is created.
    ///
    /// - Parameters:
    ///   - forced: give it the bandwidth first, holding unforced transfers back.
    ///   - expectedSize: the size the file must have, when the caller knows it.
    ///   - held: the validators of the copy the caller holds: the file is fetched only if it
    ///     changed, else ``FetchedFile/isNotModified`` comes back.
    /// - Throws: ``DownloadError``; a cancelled item or caller gets `.transfer(.cancelled)`.
    package nonisolated func schedule(
        _ url: String, forced: Bool = false, expectedSize: ExpectedSize? = nil, held: HeldVersion? = nil
    ) async throws(DownloadError) -> FetchedFile {
        let caller = CallerTicket(id: callerNumbers.add(1, ordering: .relaxed).newValue)
        do {
            return try await withTaskCancellationHandler {
                // A caller cancelled already has posted its leave: its arrival is answered at once.
                try await withCheckedThrowingContinuation { continuation in
                    caller.attach(continuation)
                    post(.schedule(url: url, forced: forced, expectedSize: expectedSize, held: held, caller: caller))
                }
            } onCancel: {
                post(.leave(url: url, caller: caller))
            }
        } catch let error as DownloadError {
            throw error
        } catch {
            throw SchedulerCore.cancelled(url)
        }
    }

    /// Soft-cancels `url`: its callers get a cancellation error, its partial data is kept, and it
    /// waits, suspended, until scheduled again.
    func cancel(_ url: String) {
        carryOut()
        handle(.cancel(url: url))
        carryOut()
    }

    /// Returns once everything that has reached the scheduler so far has been acted on, and what
    /// that set off has too: requests, leaves, and transfers' and timers' reports are handled,
    /// and every transfer decided on is started, paused, resumed or stopped. With a transport and
    /// timers that report synchronously, a test steps the scheduler with this instead of polling.
    func settled() {
        carryOut()
    }

    /// Counts per state, and the items with a transfer (waiting and suspended ones are only
    /// counted: the snapshot is taken every second, and a tag of 100,000 items must not cost
    /// 100,000 entries each time).
    package func status() -> SchedulerStatus {
        carryOut()
        var status = core.status(progress: { reports[$0]?.report.progress }, received: { reports[$0]?.report.received ?? 0 })
        statusesTaken += 1
        status.sequence = statusesTaken
        status.receivedBytes = receivedByEndedTransfers
            + reports.values.reduce(Int64(0)) { $0 + $1.report.received }
        return status
    }

    /// Where `url` stands, while the scheduler knows it.
    func state(of url: String) -> DownloadState? {
        carryOut()
        return core.state(of: url)
    }

    // MARK: - Mail

    private nonisolated func post(_ mail: SchedulerMail) {
        guard inbox.post(mail) else { return }
        switch mail {
        case .schedule, .leave, .finished:
            // On the poster's thread while the actor is free (a caller's task, a transfer's): a
            // task of its own would wake another thread for every request and answer.
            Task.immediate { await self.carryOut() }
        case .receivingChanged, .pauseExpired, .holdRefused, .limitRaised:
            // Posted from the engine's thread and the timers': the drain may start transfers (a
            // stat of each partial) and delete partials, which must not hold up every transfer.
            Task { await self.carryOut() }
        }
    }

    /// Handles the mail until none is left, mail that handling posts included.
    private func carryOut() {
        inbox.promiseDrain()
        while case let batch = inbox.take(), !batch.isEmpty {
            for mail in batch { open(mail) }
        }
    }

    private func open(_ mail: SchedulerMail) {
        switch mail {
        case .schedule(let url, let forced, let expectedSize, let held, let caller):
            guard let continuation = caller.takeContinuation() else {
                assertionFailure("a caller arrived without its continuation")
                return
            }
            guard !caller.leftEarly else {
                continuation.resume(throwing: SchedulerCore.cancelled(url))
                return
            }
            callers[caller.id] = continuation
            // An unforced transfer's word on receiving is not sent: joined with `forced`, its
            // item hears it first (kept, nothing settled while unforced) and every later word as
            // it comes, so that the join's settling knows whether it holds the others back.
            if forced, let current = reports[url], current.report.markForced() {
                handle(.receiving(url: url, id: current.id, current.report.receiving))
            }
            handle(.schedule(url: url, forced: forced, expectedSize: expectedSize, held: held, caller: caller.id))
        case .leave(let url, let caller):
            // Not arrived yet (or answered already, when marking it costs nothing).
            guard callers[caller.id] != nil else {
                caller.markLeftEarly()
                return
            }
            handle(.leave(url: url, caller: caller.id))
        case .receivingChanged(let url, let id):
            guard let current = reports[url], current.id == id else { return }
            handle(.receiving(url: url, id: id, current.report.receiving))
        case .finished(let url, let id, let result):
            transferEnded(url, id: id, result: result)
        case .pauseExpired(let url, let id, let pause):
            handle(.pauseExpired(url: url, id: id, pause: pause))
        case .holdRefused(let id):
            guard let url = reports.first(where: { $0.value.id == id })?.key else { return }
            handle(.holdRefused(url: url, id: id))
        case .limitRaised:
            handle(.limitRaised)
        }
    }

    // MARK: - Performing

    private func handle(_ event: SchedulerCore.Event) {
        for action in core.handle(event) { perform(action) }
    }

    private func perform(_ action: SchedulerCore.Action) {
        switch action {
        case .start(let url, let id, let expectedSize, let held, let forced):
            start(url, id: id, expectedSize: expectedSize, held: held, forced: forced)
        case .pause(let url, let id, let number):
            transport.pause(id)
            hub.emit(.paused(url: url))
            pauseTimers.removeValue(forKey: id)?.stop()
            pauseTimers[id] = startTimer(configuration.pauseGrace) { [weak self] in
                self?.post(.pauseExpired(url: url, id: id, pause: number))
            }
        case .resume(let url, let id):
            pauseTimers.removeValue(forKey: id)?.stop()
            transport.resume(id)
            hub.emit(.resumed(url: url))
        case .stop(_, let id):
            transfers[id]?.stop()
            // Stopped while held between two attempts (a retry's wait, a wait for a cluster
            // slot), no cancel reaches the engine: its pause is lifted after the stop.
            liftPauseOfEnded(id)
        case .discardPartial(let url):
            transport.discardPartial(of: url)
        case .answer(let ids, let result):
            for id in ids { callers.removeValue(forKey: id)?.resume(with: result.mapError { $0 as any Error }) }
        case .notify(let event):
            hub.emit(event)
        }
    }

    private func start(_ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?, forced: Bool) {
        // What the partial holds is not looked up here, on every start: the transfer reports it
        // when its body starts (see ``TransferReport``).
        let report = TransferReport(forced: forced)
        reports[url] = (id, report)
        hub.emit(.started(url: url, forced: forced))
        let hub = hub
        transfers[id] = transport.launch(
            url, id: id, expectedSize: expectedSize, held: held,
            progress: { progress in
                report.record(progress)
                hub.emit(.progress(url: url, completed: progress.completed, total: progress.total))
            },
            receiving: { [weak self] receiving in
                // Only the latest word counts, however the hops that carry it are ordered; an
                // unforced transfer's is not sent at all (a hop and a settling per file): no
                // decision reads it, and a host limit raised as a body starts is posted on its own.
                guard report.setReceiving(receiving) else { return }
                self?.post(.receivingChanged(url: url, id: id))
            },
            finished: { [weak self] result in
                self?.post(.finished(url: url, id: id, result))
            })
    }

    /// Stops the pause timer of `id`, a transfer that is over or told to stop, and lifts its
    /// pause if it was held: the transport keeps a pause until it is lifted, since one can come
    /// before its transfer starts or between two attempts, and this comes after every pause of it.
    private func liftPauseOfEnded(_ id: TransferID) {
        guard let paused = pauseTimers.removeValue(forKey: id) else { return }
        paused.stop()
        transport.resume(id)
    }

    private func transferEnded(_ url: String, id: TransferID, result: Result<FetchedFile, DownloadError>) {
        transfers[id] = nil
        // Ended while held: its body had all arrived, or its last attempt failed.
        liftPauseOfEnded(id)
        if let current = reports[url], current.id == id {
            reports[url] = nil
            let received: Int64 = switch result {
            case .success(let file): file.bytesReceived
            case .failure: current.report.received
            }
            receivedByEndedTransfers += received
        }
        handle(.finished(url: url, id: id, result))
    }
}

/// What one transfer reports from the engine thread: its progress, for the status, and whether
/// it is receiving, for the scheduler (which needs it only of a forced transfer: see
/// ``setReceiving(_:)``).
///
/// Its first progress comes when the body starts and counts what the partial held then (nothing
/// when the server sends the whole file again): bytes received in this run are counted from there,
/// across the download's later attempts too, without a look at the partial when it starts.
final class TransferReport: Sendable {
    private struct State {
        var progress: TransferProgress?
        var heldAtFirstBody: Int64?
        var receiving = false
        var forced: Bool
    }

    private let state: Mutex<State>

    init(forced: Bool) {
        state = Mutex(State(forced: forced))
    }

    /// Nil until the body starts.
    var progress: TransferProgress? { state.withLock { $0.progress } }

    /// Bytes received for this transfer in this run.
    var received: Int64 {
        state.withLock { state in
            guard let progress = state.progress, let held = state.heldAtFirstBody else { return 0 }
            return max(progress.completed - held, 0)
        }
    }

    func record(_ progress: TransferProgress) {
        state.withLock { state in
            if state.heldAtFirstBody == nil { state.heldAtFirstBody = progress.completed }
            state.progress = progress
        }
    }

    var receiving: Bool { state.withLock { $0.receiving } }

    /// Records whether the transfer is receiving; true when that changed and the transfer is
    /// forced, the only kind whose receiving holds others back.
    func setReceiving(_ receiving: Bool) -> Bool {
        state.withLock { state in
            defer { state.receiving = receiving }
            return state.receiving != receiving && state.forced
        }
    }

    /// Marks the transfer forced (its item was joined with `forced`); true when it was not: its
    /// word on receiving has not been sent.
    func markForced() -> Bool {
        state.withLock { state in
            defer { state.forced = true }
            return !state.forced
        }
    }
}
