/// The two-tier download scheduler: unforced items share a limited number of slots; one forced
/// item at a time takes the bandwidth for itself.
///
/// - Unforced items run concurrently, up to ``Configuration/maxConcurrent`` in all and
///   ``Configuration/maxPerHost`` per host. Waiting items start newest first.
/// - A forced item runs alone. Running unforced transfers are paused (they keep their connection)
///   and resume when it is done; one paused longer than ``Configuration/pauseGrace`` is stopped,
///   its partial data kept, and resumes later with a Range request. A newer forced item demotes the
///   older one to waiting, unforced.
/// - Requests for a URL already known join it: one transfer, every caller gets the file or the
///   error. Joining with `forced` upgrades the item.
/// - ``cancel(_:)`` suspends an item with its partial data kept; scheduling the URL again revives
///   it from there. Suspended partials beyond a budget are purged, oldest first.
public actor DownloadScheduler {
    public struct Configuration: Sendable, Equatable {
        public var maxConcurrent: Int
        public var maxPerHost: Int
        /// How long a transfer stays paused for a forced item before it is stopped instead:
        /// a server drops a connection it cannot send on after a while (nginx: 60 s).
        public var pauseGrace: Duration
        /// Suspended partials kept at most, in bytes and in number.
        public var suspendedBytesBudget: Int64
        public var suspendedCountBudget: Int

        public init(
            maxConcurrent: Int = 6, maxPerHost: Int = 6, pauseGrace: Duration = .seconds(10),
            suspendedBytesBudget: Int64 = 1 << 30, suspendedCountBudget: Int = 200
        ) {
            self.maxConcurrent = max(maxConcurrent, 1)
            self.maxPerHost = max(maxPerHost, 1)
            self.pauseGrace = pauseGrace
            self.suspendedBytesBudget = suspendedBytesBudget
            self.suspendedCountBudget = suspendedCountBudget
        }
    }

    public let configuration: Configuration
    private let transport: any DownloadTransport
    private let hub = EventHub()

    private var items: [String: ScheduledItem] = [:]
    private var forced: ScheduledItem?
    private var waiting = WaitingStacks()
    /// Items downloading or paused.
    private var active: [ObjectIdentifier: ScheduledItem] = [:]
    private var slotsInUse = 0
    private var slotsPerHost: [String: Int] = [:]
    private var suspendedQueue: [(order: UInt64, item: ScheduledItem)] = []
    private var suspendedQueueHead = 0
    private var suspendedSequence: UInt64 = 0
    private var suspendedBytes: Int64 = 0
    private var suspendedCount = 0
    private var finishedCounts: [DownloadState: Int] = [:]
    private var nextWaiterKey: UInt64 = 0

    /// Waits out a pause's grace; tests pass one they fire by hand.
    private let sleep: @Sendable (Duration) async throws -> Void

    public init(
        transport: any DownloadTransport, configuration: Configuration = Configuration(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.transport = transport
        self.configuration = configuration
        self.sleep = sleep
    }

    /// A new stream of everything that happens from now on; any number of observers may listen.
    public nonisolated func events() -> AsyncStream<SchedulerEvent> {
        hub.stream()
    }

    /// Ends every event stream.
    public nonisolated func finishEvents() {
        hub.finish()
    }

    // MARK: - Scheduling

    /// Downloads `url` (or joins the download already under way) and returns the complete file.
    ///
    /// - Parameters:
    ///   - forced: run it alone, pausing everything else.
    ///   - expectedSize: the size the file must have, when the caller knows it.
    /// - Throws: ``DownloadError``; a cancelled item or caller gets `.transfer(.cancelled)`.
    public func schedule(_ url: String, forced: Bool = false, expectedSize: Int64? = nil) async throws(DownloadError) -> FetchedFile {
        nextWaiterKey += 1
        let key = nextWaiterKey
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    join(url, forced: forced, expectedSize: expectedSize, key: key, continuation: continuation)
                }
            } onCancel: {
                Task { await self.leave(url, key: key) }
            }
        } catch let error as DownloadError {
            throw error
        } catch {
            throw Self.cancelled(url)
        }
    }

    /// Soft-cancels `url`: its callers get a cancellation error, its partial data is kept, and it
    /// waits, suspended, until scheduled again.
    public func cancel(_ url: String) {
        guard let item = items[url], [.ready, .waiting, .downloading, .paused].contains(item.state) else { return }
        answerAll(item, with: .failure(Self.cancelled(url)))
        // A suspended item belongs to no tier; whoever revives it decides whether it is forced.
        if forced === item { forced = nil }
        item.isForced = false
        stop(item, to: .suspended)
        suspendedSequence += 1
        item.suspendedOrder = suspendedSequence
        suspendedQueue.append((suspendedSequence, item))
        account(item, suspendedBytes: transport.partialLength(of: url))
        hub.emit(.suspended(url: url, bytes: item.suspendedBytes))
        enforceSuspendedBudget()
        pump()
    }

    /// Counts per state, and the unfinished items that are not just waiting (those are only
    /// counted, unless `includingWaiting`): the snapshot is rebuilt every second, and a tag of
    /// 100,000 items must not cost 100,000 entries each time.
    public func status(includingWaiting: Bool = false) -> SchedulerStatus {
        var counts = finishedCounts
        var list: [SchedulerStatus.Item] = []
        for item in items.values {
            counts[item.state, default: 0] += 1
            guard includingWaiting || item.state != .waiting else { continue }
            let progress = item.progress?.current ?? TransferProgress(completed: 0, total: nil)
            list.append(SchedulerStatus.Item(
                url: item.url, state: item.state, isForced: item.isForced,
                completedBytes: progress.completed, totalBytes: progress.total ?? item.expectedSize))
        }
        list.sort { ($0.isForced ? 0 : 1, $0.state.rawValue, $0.url) < ($1.isForced ? 0 : 1, $1.state.rawValue, $1.url) }
        return SchedulerStatus(counts: counts, items: list)
    }

    private func join(
        _ url: String, forced isForced: Bool, expectedSize: Int64?, key: UInt64,
        continuation: CheckedContinuation<FetchedFile, any Error>
    ) {
        if Task.isCancelled {
            continuation.resume(throwing: Self.cancelled(url))
            return
        }
        if let item = items[url], !item.state.isTerminal {
            item.waiters.add(continuation, key: key)
            if item.state == .suspended {
                revive(item)
                hub.emit(.queued(url: url, forced: isForced))
            } else {
                hub.emit(.coalesced(url: url, callers: item.waiters.count, forced: isForced || item.isForced))
            }
            if isForced && !item.isForced {
                makeForced(item)
            } else if item.state == .waiting && !item.isQueued && item.task == nil && !item.isForced {
                waiting.push(item)
            }
        } else {
            let item = ScheduledItem(url: url, expectedSize: expectedSize)
            items[url] = item
            item.waiters.add(continuation, key: key)
            hub.emit(.queued(url: url, forced: isForced))
            transition(item, to: .waiting)
            if isForced { makeForced(item) } else { waiting.push(item) }
        }
        pump()
    }

    /// A caller gave up: answer it, and suspend the item if nobody else waits for it.
    private func leave(_ url: String, key: UInt64) {
        guard let item = items[url], let continuation = item.waiters.remove(key: key) else { return }
        continuation.resume(throwing: Self.cancelled(url))
        if item.waiters.isEmpty { cancel(url) }
    }

    // MARK: - Tiers

    private func makeForced(_ item: ScheduledItem) {
        if let current = forced, current !== item { demote(current) }
        item.isForced = true
        forced = item
    }

    private func demote(_ item: ScheduledItem) {
        item.isForced = false
        forced = nil
        hub.emit(.demoted(url: item.url))
        switch item.state {
        case .downloading, .paused:
            stop(item, to: .waiting)
        case .waiting where item.task == nil && !item.isQueued:
            waiting.push(item)
        default:
            break
        }
    }

    /// Starts, pauses and resumes to match the tiers: the forced item alone when there is one,
    /// otherwise paused items first, then the newest waiting ones up to the limits.
    private func pump() {
        if let forced {
            for item in active.values where item !== forced && item.state == .downloading { pause(item) }
            if forced.state == .waiting && forced.task == nil {
                start(forced)
            } else if forced.state == .paused {
                resume(forced)
            }
            return
        }
        for item in active.values where item.state == .paused { resume(item) }
        while slotsInUse < configuration.maxConcurrent,
              let next = waiting.popNewest(where: { slotsPerHost[$0, default: 0] < hostLimit($0) }) {
            start(next)
        }
    }

    /// The fixed per-host limit, lowered by the transport while a host throttles.
    private func hostLimit(_ host: String) -> Int {
        guard let dynamic = transport.concurrencyLimit(forHost: host) else { return configuration.maxPerHost }
        return min(configuration.maxPerHost, max(dynamic, 1))
    }

    private func start(_ item: ScheduledItem) {
        let offset = transport.partialLength(of: item.url)
        transition(item, to: .downloading)
        if !item.isForced {
            item.holdsSlot = true
            slotsInUse += 1
            slotsPerHost[item.host, default: 0] += 1
        }
        item.transferID = .next()
        let progressBox = item.progress ?? ProgressBox()
        item.progress = progressBox
        progressBox.current = TransferProgress(completed: offset, total: progressBox.current.total ?? item.expectedSize)
        hub.emit(.started(url: item.url, forced: item.isForced, offset: offset))
        let (url, id, size, transport, hub) = (item.url, item.transferID, item.expectedSize, transport, hub)
        // Detached: the fetch runs off the actor from its first instruction, saving a hop per item.
        item.task = Task.detached {
            let result: Result<FetchedFile, DownloadError>
            do throws(DownloadError) {
                result = .success(try await transport.fetch(url, id: id, expectedSize: size, progress: { progress in
                    progressBox.current = progress
                    hub.emit(.progress(url: url, completed: progress.completed, total: progress.total))
                }))
            } catch {
                result = .failure(error)
            }
            await self.finished(url, id: id, result: result)
        }
    }

    private func pause(_ item: ScheduledItem) {
        item.pauseTimer?.cancel()
        transition(item, to: .paused)
        transport.pause(item.transferID)
        hub.emit(.paused(url: item.url))
        item.pauseNumber += 1
        let (url, number, grace, sleep) = (item.url, item.pauseNumber, configuration.pauseGrace, sleep)
        item.pauseTimer = Task {
            // A cancelled timer must not fire: its pause ended (and a new one may have begun).
            do { try await sleep(grace) } catch { return }
            self.pauseExpired(url, pause: number)
        }
    }

    private func resume(_ item: ScheduledItem) {
        item.pauseTimer?.cancel()
        item.pauseTimer = nil
        transition(item, to: .downloading)
        transport.resume(item.transferID)
        hub.emit(.resumed(url: item.url))
    }

    /// A pause went on too long to keep the connection: stop the transfer; it resumes by Range.
    private func pauseExpired(_ url: String, pause number: UInt64) {
        guard let item = items[url], item.pauseNumber == number, item.state == .paused else { return }
        stop(item, to: .waiting)
    }

    /// Moves an item out of the active states, ending its transfer (which keeps its partial).
    /// An item sent back to waiting is queued again once its transfer has wound down.
    private func stop(_ item: ScheduledItem, to state: DownloadState) {
        transition(item, to: state)
        item.task?.cancel()
        if state == .waiting && item.task == nil && !item.isForced && !item.isQueued { waiting.push(item) }
    }

    // MARK: - Completion

    private func finished(_ url: String, id: TransferID, result: Result<FetchedFile, DownloadError>) {
        guard let item = items[url], item.transferID == id else { return }
        item.task = nil
        switch (item.state, result) {
        case (.downloading, .success(let file)), (.paused, .success(let file)), (.waiting, .success(let file)):
            finish(item, as: .completed, answer: .success(file))
            hub.emit(.completed(url: url, bytes: file.length))
        case (.waiting, .failure(let error)) where error.isCancellation:
            // Stopped for a forced item or demoted: queue it again to resume from its partial.
            if !item.isForced && !item.isQueued { waiting.push(item) }
        case (.downloading, .failure(let error)), (.paused, .failure(let error)), (.waiting, .failure(let error)):
            finish(item, as: .failed, answer: .failure(error))
            hub.emit(.failed(url: url, message: error.description))
        case (.suspended, _):
            // The stopped transfer has written out what it had: count the partial at its size now.
            account(item, suspendedBytes: transport.partialLength(of: url))
            enforceSuspendedBudget()
        case (.cancelled, _):
            transport.discardPartial(of: url)
            items[url] = nil
        default:
            break
        }
        pump()
    }

    private func finish(_ item: ScheduledItem, as state: DownloadState, answer: Result<FetchedFile, DownloadError>) {
        transition(item, to: state)
        answerAll(item, with: answer)
        items[item.url] = nil
        if forced === item { forced = nil }
        finishedCounts[state, default: 0] += 1
    }

    private func answerAll(_ item: ScheduledItem, with answer: Result<FetchedFile, DownloadError>) {
        for waiter in item.waiters.takeAll() { waiter.resume(with: answer.mapError { $0 as any Error }) }
    }

    // MARK: - Suspended partials

    private func revive(_ item: ScheduledItem) {
        account(item, suspendedBytes: 0)
        item.suspendedOrder = 0
        transition(item, to: .waiting)
    }

    /// Sets the partial bytes a suspended item holds, keeping the budget's totals: the bytes, and
    /// the number of suspended items that hold any.
    private func account(_ item: ScheduledItem, suspendedBytes bytes: Int64) {
        suspendedBytes += bytes - item.suspendedBytes
        suspendedCount += (bytes > 0 ? 1 : 0) - (item.suspendedBytes > 0 ? 1 : 0)
        item.suspendedBytes = bytes
    }

    /// Purges the oldest suspended partials while over the count or byte budget. Items that hold
    /// no bytes cost nothing and do not count; the item suspended last is never purged, so that a
    /// single file larger than the budget (or a run stopped by Ctrl-C) keeps what it received.
    private func enforceSuspendedBudget() {
        while suspendedCount > configuration.suspendedCountBudget || suspendedBytes > configuration.suspendedBytesBudget,
              suspendedQueueHead < suspendedQueue.count - 1 {
            let entry = suspendedQueue[suspendedQueueHead]
            suspendedQueueHead += 1
            let item = entry.item
            guard item.state == .suspended, item.suspendedOrder == entry.order, item.suspendedBytes > 0 else { continue }
            account(item, suspendedBytes: 0)
            transition(item, to: .cancelled)
            finishedCounts[.cancelled, default: 0] += 1
            if item.task == nil {
                transport.discardPartial(of: item.url)
                items[item.url] = nil
            }
            hub.emit(.purged(url: item.url))
        }
        if suspendedQueueHead > 1024 && suspendedQueueHead * 2 > suspendedQueue.count {
            suspendedQueue.removeFirst(suspendedQueueHead)
            suspendedQueueHead = 0
        }
    }

    // MARK: - State

    /// The one place an item's state changes; an illegal move is a programming error.
    private func transition(_ item: ScheduledItem, to next: DownloadState) {
        DownloadState.checkTransition(from: item.state, to: next, url: item.url)
        let wasActive = item.isActive
        item.state = next
        if item.isActive {
            active[ObjectIdentifier(item)] = item
        } else if wasActive {
            active[ObjectIdentifier(item)] = nil
            item.pauseTimer?.cancel()
            item.pauseTimer = nil
            if item.holdsSlot {
                item.holdsSlot = false
                slotsInUse -= 1
                slotsPerHost[item.host, default: 1] -= 1
                if slotsPerHost[item.host] == 0 { slotsPerHost[item.host] = nil }
            }
        }
    }

    private static func cancelled(_ url: String) -> DownloadError {
        DownloadError(url: url, reason: .transfer(.cancelled))
    }
}
