import Synchronization

/// One URL the scheduler knows, with everyone waiting for it. Confined to the scheduler actor,
/// except `progress`, which the transport updates from the engine thread.
final class ScheduledItem {
    let url: String
    let host: String
    let expectedSize: Int64?
    var state = DownloadState.ready
    var isForced = false
    /// Callers waiting for the file, by key: every one is answered exactly once.
    var waiters: [UInt64: CheckedContinuation<FetchedFile, any Error>] = [:]
    /// The transfer now running or winding down; nil when none is.
    var task: Task<Void, Never>?
    var transferID = TransferID.next()
    /// Started without being forced: occupies one of the limited slots while active.
    var holdsSlot = false
    /// Position in the waiting stack (newest highest); stale stack entries carry an older one.
    var waitingOrder: UInt64 = 0
    var isQueued = false
    var pauseTimer: Task<Void, Never>?
    var suspendedOrder: UInt64 = 0
    var suspendedBytes: Int64 = 0
    let progress = ProgressBox()

    init(url: String, expectedSize: Int64?) {
        self.url = url
        self.expectedSize = expectedSize
        host = Self.host(of: url)
    }

    var isActive: Bool { state == .downloading || state == .paused }

    /// The authority part of a URL, for per-host limits; cheap, since every schedule computes it.
    static func host(of url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return "" }
        let rest = url[schemeEnd.upperBound...]
        return String(rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" })
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
        var best: (host: String, order: UInt64)?
        for host in Array(stacks.keys) {
            dropStaleTop(of: host)
            guard let top = stacks[host]?.last, accepts(host) else { continue }
            if best.map({ top.order > $0.order }) ?? true { best = (host, top.order) }
        }
        guard let best, let entry = stacks[best.host]?.popLast() else { return nil }
        if stacks[best.host]?.isEmpty == true { stacks[best.host] = nil }
        entry.item.isQueued = false
        return entry.item
    }

    private mutating func dropStaleTop(of host: String) {
        while let top = stacks[host]?.last, !Self.isLive(top) {
            stacks[host]?.removeLast()
        }
        if stacks[host]?.isEmpty == true { stacks[host] = nil }
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

/// The latest progress of one item, written from the engine thread, read by ``DownloadScheduler/status()``.
final class ProgressBox: Sendable {
    private let value = Mutex(TransferProgress(completed: 0, total: nil))

    var current: TransferProgress {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
