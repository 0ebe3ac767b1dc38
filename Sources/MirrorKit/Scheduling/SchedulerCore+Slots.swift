/// Slots, queues and the suspended budget: what runs, what waits, what is purged.
///
/// - A slot is a transfer that is not paused. At most `maxConcurrent` in all and the host's
///   limit per host. A transfer no pause holds (an HTTP/2 stream) keeps its slot: it is never
///   paused, so it makes no room and is not held back.
/// - Forced items take slots first: when none is free, an unforced transfer is paused to make
///   room, so up to `maxConcurrent` forced items run at once.
/// - While a forced transfer is receiving, unforced ones are held (paused) and none start: the
///   forced ones get the bandwidth. One that is connecting or backing off holds nobody back.
/// - Paused transfers resume before waiting items start; waiting items start newest first.
extension SchedulerCore {
    /// Starts, pauses and resumes until the transfers match the rules above.
    mutating func settle(into actions: inout [Action]) {
        // The storage of the last settling's tally, reused: settling runs for every event.
        // Swapped, not copied: a copy retains and releases each of its lists.
        var tally = Tally()
        swap(&tally, &spareTally)
        tally.reset(maxConcurrent: limits.maxConcurrent)
        defer { swap(&tally, &spareTally) }
        // Read while `self` is being changed, so it must not capture `self`.
        let limit = HostLimits(maxPerHost: limits.maxPerHost, names: hosts.names, dynamic: hostLimit)
        for handle in withTransfer {
            let state = states[handle]
            guard case .running(var run) = state.phase else { continue }
            if !run.unholdable, !run.paused, !holdable(run.id) || hosts.isMultiplexing(state.host) {
                // Kept, so that pausing (which reads the item's state) and the tally agree.
                run.unholdable = true
                hosts.markMultiplexing(state.host)
                states[handle].phase = .running(run)
            }
            tally.add(handle, host: state.host, forced: state.forced, run: run)
        }
        // Forced first: paused ones (an unforced item upgraded while paused), then waiting ones.
        for handle in tally.pausedForced
        where tally.forcedAccepts(states[handle].host, limit: limit) && tally.roomCanBeMade(for: states[handle].host, limit: limit) {
            makeRoom(for: states[handle].host, limit: limit, tally: &tally, into: &actions)
            resume(handle, tally: &tally, into: &actions)
        }
        while tally.forcedRunning < limits.maxConcurrent,
              let handle = popNewest(forced: true, accepts: { tally.forcedAccepts($0, limit: limit) && tally.roomCanBeMade(for: $0, limit: limit) }) {
            makeRoom(for: states[handle].host, limit: limit, tally: &tally, into: &actions)
            start(handle, tally: &tally, into: &actions)
        }
        if tally.forcedReceiving {
            for handle in tally.runningUnforced { pause(handle, into: &actions) }
            return
        }
        for handle in tally.pausedUnforced where tally.accepts(states[handle].host, limit: limit) {
            resume(handle, tally: &tally, into: &actions)
        }
        while tally.running < limits.maxConcurrent,
              let handle = popNewest(forced: false, accepts: { tally.accepts($0, limit: limit) }) {
            start(handle, tally: &tally, into: &actions)
        }
    }

    /// The fixed per-host limit, lowered by the transport while a host throttles.
    struct HostLimits {
        let maxPerHost: Int
        /// Host names by ``HostKey``.
        let names: [String]
        let dynamic: (String) -> Int?

        func callAsFunction(_ host: HostKey) -> Int {
            guard let lowered = dynamic(names[host]) else { return maxPerHost }
            return min(maxPerHost, max(lowered, 1))
        }
    }

    /// Queues a waiting item as the newest of its tier.
    mutating func enqueue(_ handle: Handle) {
        sequence += 1
        states[handle].phase = .waiting(order: sequence)
        if states[handle].forced {
            forcedWaiting.push(sequence, handle, host: states[handle].host)
        } else {
            unforcedWaiting.push(sequence, handle, host: states[handle].host)
        }
    }

    private mutating func popNewest(forced: Bool, accepts: (HostKey) -> Bool) -> Handle? {
        var stacks = WaitingStacks()
        // Moved out and back rather than mutated in place, so that checking an entry may read
        // `items` and `states` without copying the stacks.
        if forced { swap(&stacks, &forcedWaiting) } else { swap(&stacks, &unforcedWaiting) }
        defer { if forced { swap(&stacks, &forcedWaiting) } else { swap(&stacks, &unforcedWaiting) } }
        return stacks.popNewest(accepts: accepts) { order, handle in
            guard items[handle] != nil, states[handle].forced == forced else { return false }
            return states[handle].phase == .waiting(order: order)
        }
    }

    private mutating func makeRoom(
        for host: HostKey, limit: HostLimits, tally: inout Tally, into actions: inout [Action]
    ) {
        // `while`: a host that throttles may have a limit below what it runs now.
        while tally.perHost[host] >= limit(host),
              let victim = tally.runningUnforced.first(where: { states[$0].host == host }) {
            tally.stopCounting(victim, host: host)
            pause(victim, into: &actions)
        }
        if tally.running >= limits.maxConcurrent, let victim = tally.runningUnforced.first {
            tally.stopCounting(victim, host: states[victim].host)
            pause(victim, into: &actions)
        }
    }

    private mutating func start(_ handle: Handle, tally: inout Tally, into actions: inout [Action]) {
        let (item, state) = (items[handle]!, states[handle])
        let run = Run(id: .next())
        setPhase(handle, .running(run))
        tally.count(host: state.host, forced: state.forced)
        actions.append(.start(url: item.url, id: run.id, expectedSize: item.expectedSize, held: item.held, forced: state.forced))
    }

    private mutating func pause(_ handle: Handle, into actions: inout [Action]) {
        guard case .running(var run) = states[handle].phase, !run.paused, !run.unholdable else { return }
        run.paused = true
        run.pauses += 1
        setPhase(handle, .running(run))
        actions.append(.pause(url: items[handle]!.url, id: run.id, number: run.pauses))
    }

    private mutating func resume(_ handle: Handle, tally: inout Tally, into actions: inout [Action]) {
        guard case .running(var run) = states[handle].phase, run.paused else { return }
        run.paused = false
        setPhase(handle, .running(run))
        tally.count(host: states[handle].host, forced: states[handle].forced)
        // Paused while unforced, then joined with `forced`: it may be receiving already.
        if states[handle].forced && run.receiving { tally.forcedReceiving = true }
        actions.append(.resume(url: items[handle]!.url, id: run.id))
    }

    // MARK: - Suspended partials

    mutating func account(adding bytes: Int64) {
        suspendedBytes += bytes
        if bytes > 0 { suspendedCount += 1 }
    }

    mutating func account(removing bytes: Int64) {
        suspendedBytes -= bytes
        if bytes > 0 { suspendedCount -= 1 }
    }

    /// Purges the oldest suspended partials while over the count or byte budget. Items that hold
    /// no bytes cost nothing and do not count; the item suspended last is never purged, so that a
    /// single file larger than the budget (or a run stopped by Ctrl-C) keeps what it received.
    mutating func enforceSuspendedBudget(into actions: inout [Action]) {
        // The newest entry is spared only while it is live: one revived since spares nothing.
        while let last = suspendedQueue.last, suspendedQueue.count > suspendedQueueHead,
              !isSuspended(last.handle, order: last.order) {
            suspendedQueue.removeLast()
        }
        while suspendedCount > limits.suspendedCountBudget || suspendedBytes > limits.suspendedBytesBudget,
              suspendedQueueHead < suspendedQueue.count - 1 {
            let (order, handle) = suspendedQueue[suspendedQueueHead]
            suspendedQueueHead += 1
            guard let item = items[handle] else { continue }
            switch states[handle].phase {
            case .suspended(order, let bytes) where bytes > 0:
                account(removing: bytes)
                remove(handle, counting: .cancelled)
                actions.append(.discardPartial(url: item.url))
            case .stopping(let id, .suspend(order, let bytes)) where bytes > 0:
                account(removing: bytes)
                setPhase(handle, .stopping(id, then: .discard))
            default:
                continue
            }
            actions.append(.notify(.purged(url: item.url)))
        }
        if suspendedQueueHead > 1024 && suspendedQueueHead * 2 > suspendedQueue.count {
            suspendedQueue.removeFirst(suspendedQueueHead)
            suspendedQueueHead = 0
        }
    }

    private func isSuspended(_ handle: Handle, order: UInt64) -> Bool {
        guard items[handle] != nil else { return false }
        return switch states[handle].phase {
        case .suspended(order, _), .stopping(_, .suspend(order, _)): true
        default: false
        }
    }

    // MARK: - Status

    /// Counts per state (finished items included) and the items with a transfer; waiting and
    /// suspended items are only counted, so a tag of 100,000 items costs no more than a small one.
    /// `progress` is nil for a transfer whose body has not started: what its partial holds is
    /// shown. `received` gives the bytes a transfer received in this run.
    func status(
        progress: (String) -> TransferProgress?, received: (String) -> Int64 = { _ in 0 }
    ) -> SchedulerStatus {
        var list: [SchedulerStatus.Item] = []
        for handle in withTransfer {
            guard let item = items[handle] else { continue }
            let current = progress(item.url) ?? TransferProgress(completed: partialLength(item.url), total: nil)
            list.append(SchedulerStatus.Item(
                url: item.url, state: Self.state(of: states[handle].phase), isForced: states[handle].forced,
                completedBytes: current.completed, totalBytes: current.total ?? item.expectedSize?.shown,
                receivedBytes: received(item.url)))
        }
        list.sort { ($0.isForced ? 0 : 1, $0.state.rawValue, $0.url) < ($1.isForced ? 0 : 1, $1.state.rawValue, $1.url) }
        return SchedulerStatus(counts: counts.filter { $0.value > 0 }, items: list)
    }
}

/// The running transfers, counted for one settling.
struct Tally {
    var running = 0
    var perHost = HostCounts()
    var forcedRunning = 0
    var forcedPerHost = HostCounts()
    var forcedReceiving = false
    /// Unforced transfers a pause holds: the ones that can make room.
    var runningUnforced: [SchedulerCore.Handle] = []
    var runningUnforcedPerHost = HostCounts()
    var pausedForced: [SchedulerCore.Handle] = []
    var pausedUnforced: [SchedulerCore.Handle] = []
    var maxConcurrent = 0

    /// Empty, for `maxConcurrent` slots, keeping the storage it had.
    mutating func reset(maxConcurrent: Int) {
        self.maxConcurrent = maxConcurrent
        (running, forcedRunning, forcedReceiving) = (0, 0, false)
        perHost.removeAll()
        forcedPerHost.removeAll()
        runningUnforced.removeAll(keepingCapacity: true)
        runningUnforcedPerHost.removeAll()
        pausedForced.removeAll(keepingCapacity: true)
        pausedUnforced.removeAll(keepingCapacity: true)
    }

    mutating func add(_ handle: SchedulerCore.Handle, host: HostKey, forced: Bool, run: SchedulerCore.Run) {
        switch (forced, run.paused) {
        case (true, true): pausedForced.append(handle)
        case (false, true): pausedUnforced.append(handle)
        case (true, false):
            count(host: host, forced: true)
            if run.receiving { forcedReceiving = true }
        case (false, false):
            count(host: host, forced: false)
            // One no pause holds keeps its slot: it makes no room, and is not held back.
            if !run.unholdable {
                runningUnforced.append(handle)
                runningUnforcedPerHost[host] += 1
            }
        }
    }

    mutating func count(host: HostKey, forced: Bool) {
        running += 1
        perHost[host] += 1
        if forced {
            forcedRunning += 1
            forcedPerHost[host] += 1
        }
    }

    /// An unforced transfer about to be paused no longer holds a slot.
    mutating func stopCounting(_ handle: SchedulerCore.Handle, host: HostKey) {
        assert(perHost[host] > 0 && runningUnforcedPerHost[host] > 0, "a transfer not counted is uncounted")
        running -= 1
        perHost[host] -= 1
        runningUnforced.removeAll { $0 == handle }
        runningUnforcedPerHost[host] -= 1
    }

    /// Whether pausing what a pause holds (see ``SchedulerCore/makeRoom``) leaves room for one
    /// more transfer on `host`: with transfers no pause holds (HTTP/2 streams), it may not.
    func roomCanBeMade(for host: HostKey, limit: SchedulerCore.HostLimits) -> Bool {
        let onHost = perHost[host]
        guard onHost - runningUnforcedPerHost[host] < limit(host) else { return false }
        let pausedOnHost = max(0, onHost - limit(host) + 1)
        return running - pausedOnHost < maxConcurrent || runningUnforced.count > pausedOnHost
    }

    func accepts(_ host: HostKey, limit: SchedulerCore.HostLimits) -> Bool {
        running < maxConcurrent && perHost[host] < limit(host)
    }

    func forcedAccepts(_ host: HostKey, limit: SchedulerCore.HostLimits) -> Bool {
        forcedRunning < maxConcurrent && forcedPerHost[host] < limit(host)
    }
}
