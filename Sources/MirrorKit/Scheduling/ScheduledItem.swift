import Synchronization

/// One URL the scheduler knows, with everyone waiting for it. Confined to the scheduler actor,
/// except `progress`, which the transport updates from the engine thread.
final class ScheduledItem {
    let url: String
    let host: String
    let expectedSize: Int64?
    var state = DownloadState.ready
    var isForced = false
    /// Callers waiting for the file: every one is answered exactly once.
    var waiters = Waiters()
    /// The transfer now running or winding down; nil when none is.
    var task: Task<Void, Never>?
    var transferID = TransferID.next()
    /// Started without being forced: occupies one of the limited slots while active.
    var holdsSlot = false
    /// Position in the waiting stack (newest highest); stale stack entries carry an older one.
    var waitingOrder: UInt64 = 0
    var isQueued = false
    var pauseTimer: Task<Void, Never>?
    /// Counts the item's pauses, so that a timer that woke just as its pause ended (and another
    /// began) cannot end the new one.
    var pauseNumber: UInt64 = 0
    var suspendedOrder: UInt64 = 0
    var suspendedBytes: Int64 = 0
    /// Set when a transfer starts: most items never get that far while many wait.
    var progress: ProgressBox?

    init(url: String, expectedSize: Int64?) {
        self.url = url
        self.expectedSize = expectedSize
        host = Self.host(of: url)
    }

    var isActive: Bool { state == .downloading || state == .paused }

    /// The authority part of a URL, for per-host limits.
    static func host(of url: String) -> String {
        URLAuthority.of(url)
    }
}

/// The callers of one item, by key. Almost every item has exactly one, kept inline: a dictionary
/// per item would be one more allocation for each of (say) 100,000 queued items.
struct Waiters {
    typealias Continuation = CheckedContinuation<FetchedFile, any Error>
    private var first: (key: UInt64, continuation: Continuation)?
    private var others: [(key: UInt64, continuation: Continuation)] = []

    var count: Int { (first == nil ? 0 : 1) + others.count }
    var isEmpty: Bool { first == nil && others.isEmpty }

    mutating func add(_ continuation: Continuation, key: UInt64) {
        if first == nil { first = (key, continuation) } else { others.append((key, continuation)) }
    }

    mutating func remove(key: UInt64) -> Continuation? {
        if first?.key == key {
            defer { first = others.isEmpty ? nil : others.removeFirst() }
            return first?.continuation
        }
        guard let index = others.firstIndex(where: { $0.key == key }) else { return nil }
        return others.remove(at: index).continuation
    }

    /// Removes and returns every continuation.
    mutating func takeAll() -> [Continuation] {
        defer {
            first = nil
            others = []
        }
        return (first.map { [$0.continuation] } ?? []) + others.map(\.continuation)
    }
}

/// Waiting items, newest first, one stack per host so a full host never blocks another.
/// Entries are removed lazily: one whose item has left `waiting` (or re-entered it later) is
/// dropped when it reaches the top.
struct WaitingStacks {
    private var stacks: [String: [(order: UInt64, item: ScheduledItem)]] = [:]
    private var sequence: UInt64 = 0

    mutating func push(_ item: ScheduledItem) {
        sequence += 1
        item.waitingOrder = sequence
        item.isQueued = true
        stacks[item.host, default: []].append((sequence, item))
    }

    /// Removes and returns the newest live waiting item whose host `accepts`.
    mutating func popNewest(where accepts: (String) -> Bool) -> ScheduledItem? {
        var best: (index: Dictionary<String, [(order: UInt64, item: ScheduledItem)]>.Index, order: UInt64)?
        for index in stacks.indices {
            // Drop stale tops in place, through the values view, without copying any stack.
            while let top = stacks.values[index].last, !Self.isLive(top) {
                stacks.values[index].removeLast()
            }
            guard let top = stacks.values[index].last, accepts(stacks.keys[index]) else { continue }
            if best.map({ top.order > $0.order }) ?? true { best = (index, top.order) }
        }
        guard let best, let entry = stacks.values[best.index].popLast() else { return nil }
        entry.item.isQueued = false
        return entry.item
    }

    private static func isLive(_ entry: (order: UInt64, item: ScheduledItem)) -> Bool {
        let item = entry.item
        guard item.waitingOrder == entry.order, item.state == .waiting, !item.isForced, item.task == nil else {
            if item.waitingOrder == entry.order { item.isQueued = false }
            return false
        }
        return true
    }
}

/// The latest progress of one item, written from the engine thread, read by ``DownloadScheduler/status(includingWaiting:)``.
final class ProgressBox: Sendable {
    private let value = Mutex(TransferProgress(completed: 0, total: nil))

    var current: TransferProgress {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
