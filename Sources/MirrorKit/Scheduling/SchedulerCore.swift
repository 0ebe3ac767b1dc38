/// Who asked for a download: every caller gets exactly one answer.
typealias CallerID = UInt64

/// The scheduler's decisions, without effects: a value that takes events and returns the actions
/// that follow from them. ``DownloadScheduler`` performs the actions (transfers, timers,
/// continuations); everything it decides is tested here, without a transport or a clock.
///
/// Each item is in one ``Phase`` that carries what that phase needs (a queue position, a
/// transfer, the bytes a suspended partial holds), so an item cannot be, say, suspended and
/// holding a slot at once.
struct SchedulerCore {
    enum Event {
        /// A caller wants `url`: a new item, or a join of the one already known.
        /// `held`: the validators of the copy the caller holds (a conditional request); the
        /// latest caller's count.
        case schedule(url: String, forced: Bool, expectedSize: ExpectedSize?, held: HeldVersion? = nil, caller: CallerID)
        /// One caller gave up; the item is suspended when nobody else waits for it.
        case leave(url: String, caller: CallerID)
        /// Every caller of `url` is answered with a cancellation; the partial is kept.
        case cancel(url: String)
        /// A transfer started receiving its body (true) or is connecting or backing off (false).
        case receiving(url: String, id: TransferID, Bool)
        case finished(url: String, id: TransferID, Result<FetchedFile, DownloadError>)
        /// The grace of pause number `pause` of transfer `id` ran out.
        case pauseExpired(url: String, id: TransferID, pause: UInt64)
        /// Transfer `id` was asked to pause and goes on receiving (an HTTP/2 stream).
        case holdRefused(url: String, id: TransferID)
        /// A host's limit (``hostLimit``) went up: items held back for it may start.
        case limitRaised
    }

    enum Action: Equatable {
        case start(url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?, forced: Bool)
        /// Hold the transfer; after the grace, send `.pauseExpired` with `number`.
        case pause(url: String, id: TransferID, number: UInt64)
        case resume(url: String, id: TransferID)
        /// End the transfer (its partial is kept); its `.finished` event follows.
        case stop(url: String, id: TransferID)
        case discardPartial(url: String)
        case answer(callers: [CallerID], Result<FetchedFile, DownloadError>)
        case notify(SchedulerEvent)
    }

    enum Phase: Equatable {
        /// Wants a transfer; `order` is its place among the waiting (newest highest).
        case waiting(order: UInt64)
        case running(Run)
        /// Its transfer was told to stop and has not ended yet.
        case stopping(TransferID, then: AfterStop)
        /// Soft-cancelled, holding `bytes` of partial data; restarts only when scheduled again.
        case suspended(order: UInt64, bytes: Int64)
    }

    struct Run: Equatable {
        let id: TransferID
        /// Held for want of a slot (`curl_easy_pause`): it keeps its connection but no slot.
        var paused = false
        /// Pauses so far, so that a timer from an earlier pause cannot end a later one.
        var pauses: UInt64 = 0
        /// Receiving its body, as opposed to connecting or backing off between attempts.
        var receiving = false
        /// A pause does not hold it (an HTTP/2 stream): it keeps its slot, and is never paused.
        var unholdable = false
    }

    enum AfterStop: Equatable {
        case wait
        case suspend(order: UInt64, bytes: Int64)
        /// Purged: its partial goes once the transfer has let go of it.
        case discard
    }

    /// What an item is fetched with and who waits for it.
    struct Item {
        let url: String
        let expectedSize: ExpectedSize?
        /// Kept for the item's life, as its expected size is: a stopped transfer restarts with it.
        var held: HeldVersion?
        var callers: Callers
    }

    /// What settling reads of an item at every event, kept apart from its ``Item``: plain values,
    /// so that reading it retains and copies nothing (an item's URL and validators would be, for
    /// every transfer at every event).
    struct ItemState {
        let host: HostKey
        var forced: Bool
        var phase: Phase
    }

    typealias Handle = Int

    let limits: DownloadScheduler.Configuration
    /// The per-host limit the transport wants now (a host that throttles), nil for no opinion.
    let hostLimit: (String) -> Int?
    /// Bytes of partial data held for a URL.
    let partialLength: (String) -> Int64
    /// Whether a pause would hold a transfer: false for one known to be an HTTP/2 stream, which
    /// goes on receiving (and keeps its slot) however it is asked.
    let holdable: (TransferID) -> Bool
    /// Every host scheduled so far; those whose streams were found to share HTTP/2 connections
    /// are marked, and no pause holds theirs.
    var hosts = HostNames()

    var items: [Item?] = []
    /// By handle, beside `items`: meaningful while the handle's item is there.
    var states: [ItemState] = []
    var freeHandles: [Handle] = []
    var handles: [String: Handle] = [:]
    /// Items with a transfer (running or stopping): never more than a few times the slot limit.
    var withTransfer: Set<Handle> = []
    var forcedWaiting = WaitingStacks()
    var unforcedWaiting = WaitingStacks()
    var suspendedQueue: [(order: UInt64, handle: Handle)] = []
    var suspendedQueueHead = 0
    var suspendedBytes: Int64 = 0
    var suspendedCount = 0
    var sequence: UInt64 = 0
    /// Items per state, kept as phases change; finished items stay counted here.
    var counts: [DownloadState: Int] = [:]
    /// Storage for the next settling's ``Tally``.
    var spareTally = Tally()

    init(limits: DownloadScheduler.Configuration, hostLimit: @escaping (String) -> Int? = { _ in nil },
         partialLength: @escaping (String) -> Int64 = { _ in 0 }, holdable: @escaping (TransferID) -> Bool = { _ in true }) {
        self.holdable = holdable
        self.limits = limits
        self.hostLimit = hostLimit
        self.partialLength = partialLength
    }

    /// Applies `event` and returns what must happen, in order.
    mutating func handle(_ event: Event) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .schedule(let url, let forced, let expectedSize, let held, let caller):
            schedule(url, forced: forced, expectedSize: expectedSize, held: held, caller: caller, into: &actions)
        case .leave(let url, let caller):
            guard let handle = handles[url], items[handle]!.callers.remove(caller) else { return [] }
            actions.append(.answer(callers: [caller], .failure(Self.cancelled(url))))
            if items[handle]!.callers.isEmpty { cancel(handle, into: &actions) }
        case .cancel(let url):
            guard let handle = handles[url] else { return [] }
            cancel(handle, into: &actions)
        case .receiving(let url, let id, let receiving):
            guard let handle = handles[url], case .running(var run) = states[handle].phase, run.id == id else { return [] }
            run.receiving = receiving
            states[handle].phase = .running(run)
            // Only a forced transfer that receives holds others back: an unforced one's word
            // changes nothing until it is forced, and is kept for then.
            guard states[handle].forced else { return [] }
        case .finished(let url, let id, let result):
            finished(url, id: id, result: result, into: &actions)
        case .pauseExpired(let url, let id, let number):
            guard let handle = handles[url], case .running(let run) = states[handle].phase,
                  run.id == id, run.paused, run.pauses == number else { return [] }
            setPhase(handle, .stopping(run.id, then: .wait))
            actions.append(.stop(url: url, id: run.id))
        case .holdRefused(let url, let id):
            guard let handle = handles[url], case .running(var run) = states[handle].phase, run.id == id else { return [] }
            run.unholdable = true
            // The host's streams share connections: later ones are never taken for held either.
            hosts.markMultiplexing(states[handle].host)
            if run.paused {
                // Counted as running again, with no grace running out: a stream still receiving
                // would otherwise be stopped after it and fetched again by Range. Its host may
                // carry one more than its limit until a transfer ends (its place went to another
                // while it was taken for held); nothing else starts there meanwhile.
                run.paused = false
                actions.append(.resume(url: url, id: id))
            }
            setPhase(handle, .running(run))
        case .limitRaised:
            break
        }
        settle(into: &actions)
        return actions
    }

    // MARK: - Events

    private mutating func schedule(
        _ url: String, forced: Bool, expectedSize: ExpectedSize?, held: HeldVersion?, caller: CallerID, into actions: inout [Action]
    ) {
        guard let handle = handles[url] else {
            let handle = insert(
                Item(url: url, expectedSize: expectedSize, held: held, callers: Callers(caller)),
                ItemState(host: hosts.key(of: URLAuthority.of(url)), forced: forced, phase: .waiting(order: 0)))
            counts[.waiting, default: 0] += 1
            enqueue(handle)
            actions.append(.notify(.queued(url: url, forced: forced)))
            return
        }
        items[handle]!.callers.add(caller)
        items[handle]!.held = held
        if forced { states[handle].forced = true }
        let (item, state) = (items[handle]!, states[handle])
        switch state.phase {
        case .suspended(_, let bytes):
            account(removing: bytes)
            setPhase(handle, .waiting(order: 0))
            enqueue(handle)
            actions.append(.notify(.queued(url: url, forced: state.forced)))
        case .stopping(let id, .suspend(_, let bytes)):
            account(removing: bytes)
            setPhase(handle, .stopping(id, then: .wait))
            actions.append(.notify(.queued(url: url, forced: state.forced)))
        case .stopping(let id, .discard):
            // Purged while its transfer wound down: the partial is still there, so keep it.
            setPhase(handle, .stopping(id, then: .wait))
            actions.append(.notify(.queued(url: url, forced: state.forced)))
        case .waiting:
            // An upgrade to forced moves it to the forced queue; a plain join changes nothing.
            if forced { enqueue(handle) }
            actions.append(.notify(.coalesced(url: url, callers: item.callers.count, forced: state.forced)))
        case .running, .stopping(_, .wait):
            actions.append(.notify(.coalesced(url: url, callers: item.callers.count, forced: state.forced)))
        }
    }

    /// Answers every caller with a cancellation and suspends the item, keeping its partial.
    private mutating func cancel(_ handle: Handle, into actions: inout [Action]) {
        let item = items[handle]!
        let bytes: Int64
        switch states[handle].phase {
        case .suspended, .stopping(_, .suspend), .stopping(_, .discard):
            return
        case .waiting:
            bytes = partialLength(item.url)
            sequence += 1
            setPhase(handle, .suspended(order: sequence, bytes: bytes))
        case .running(let run):
            bytes = partialLength(item.url)
            sequence += 1
            setPhase(handle, .stopping(run.id, then: .suspend(order: sequence, bytes: bytes)))
            actions.append(.stop(url: item.url, id: run.id))
        case .stopping(let id, .wait):
            bytes = partialLength(item.url)
            sequence += 1
            setPhase(handle, .stopping(id, then: .suspend(order: sequence, bytes: bytes)))
        }
        let callers = items[handle]!.callers.takeAll()
        if !callers.isEmpty { actions.append(.answer(callers: callers, .failure(Self.cancelled(item.url)))) }
        // A suspended item belongs to no tier; whoever revives it decides whether it is forced.
        states[handle].forced = false
        account(adding: bytes)
        suspendedQueue.append((sequence, handle))
        actions.append(.notify(.suspended(url: item.url, bytes: bytes)))
        enforceSuspendedBudget(into: &actions)
    }

    private mutating func finished(
        _ url: String, id: TransferID, result: Result<FetchedFile, DownloadError>, into actions: inout [Action]
    ) {
        guard let handle = handles[url] else { return }
        let (item, state) = (items[handle]!, states[handle])
        let current = if case .running(let run) = state.phase { run.id == id } else { false }
        switch state.phase {
        case .stopping(id, .wait) where result.isCancellation:
            // Stopped after a long pause (or to give its host back its limit): it waits again and
            // resumes from its partial.
            setPhase(handle, .waiting(order: 0))
            enqueue(handle)
            actions.append(.notify(.queued(url: url, forced: state.forced)))
        case .running where current, .stopping(id, .wait):
            // A transfer told to stop may have ended first: its file or its error stands.
            switch result {
            case .success(let file):
                remove(handle, counting: .completed)
                actions.append(.answer(callers: item.callers.all, .success(file)))
                actions.append(.notify(.completed(url: url, bytes: file.length)))
            case .failure(let error):
                remove(handle, counting: .failed)
                actions.append(.answer(callers: item.callers.all, .failure(error)))
                actions.append(.notify(.failed(url: url, message: error.description)))
            }
        case .stopping(id, .suspend(var order, let bytes)):
            // The stopped transfer has written out what it had: count the partial at its size now.
            let now = partialLength(url)
            account(removing: bytes)
            account(adding: now)
            if bytes == 0 && now > 0 {
                // The purge passed over it while it held nothing: queue it again, or it could
                // never be purged.
                sequence += 1
                order = sequence
                suspendedQueue.append((order, handle))
            }
            setPhase(handle, .suspended(order: order, bytes: now))
            enforceSuspendedBudget(into: &actions)
        case .stopping(id, .discard):
            remove(handle, counting: .cancelled)
            actions.append(.discardPartial(url: url))
        default:
            break
        }
    }

    // MARK: - Bookkeeping

    /// The one place an item's phase changes, keeping the counts and the set of transfers.
    mutating func setPhase(_ handle: Handle, _ phase: Phase) {
        let old = states[handle].phase
        counts[Self.state(of: old), default: 0] -= 1
        counts[Self.state(of: phase), default: 0] += 1
        states[handle].phase = phase
        switch phase {
        case .running, .stopping: withTransfer.insert(handle)
        case .waiting, .suspended: withTransfer.remove(handle)
        }
    }

    private mutating func insert(_ item: Item, _ state: ItemState) -> Handle {
        let handle: Handle
        if let free = freeHandles.popLast() {
            handle = free
            items[handle] = item
            states[handle] = state
        } else {
            handle = items.count
            items.append(item)
            states.append(state)
        }
        handles[item.url] = handle
        return handle
    }

    /// Drops a finished item, counting it as `state`.
    mutating func remove(_ handle: Handle, counting state: DownloadState) {
        let item = items[handle]!
        counts[Self.state(of: states[handle].phase), default: 0] -= 1
        counts[state, default: 0] += 1
        withTransfer.remove(handle)
        handles[item.url] = nil
        items[handle] = nil
        freeHandles.append(handle)
    }

    /// Where `url` stands, while it is known.
    func state(of url: String) -> DownloadState? {
        handles[url].map { Self.state(of: states[$0].phase) }
    }

    /// What the public status calls a phase.
    static func state(of phase: Phase) -> DownloadState {
        switch phase {
        case .waiting, .stopping(_, .wait): .waiting
        case .running(let run): run.paused ? .paused : .downloading
        case .suspended, .stopping(_, .suspend): .suspended
        case .stopping(_, .discard): .cancelled
        }
    }

    static func cancelled(_ url: String) -> DownloadError {
        DownloadError(url: url, reason: .transfer(.cancelled))
    }
}

extension Result<FetchedFile, DownloadError> {
    fileprivate var isCancellation: Bool {
        if case .failure(let error) = self { error.isCancellation } else { false }
    }
}
