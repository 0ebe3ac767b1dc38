/// The callers of one item. Almost every item has exactly one, kept inline: an array per item
/// would be one more allocation for each of (say) 100,000 queued items.
struct Callers: Equatable {
    private var first: CallerID?
    private var others: [CallerID] = []

    init(_ caller: CallerID) { first = caller }

    var count: Int { (first == nil ? 0 : 1) + others.count }
    var isEmpty: Bool { first == nil }
    var all: [CallerID] { (first.map { [$0] } ?? []) + others }

    mutating func add(_ caller: CallerID) {
        if first == nil { first = caller } else { others.append(caller) }
    }

    /// Whether `caller` was one of them.
    mutating func remove(_ caller: CallerID) -> Bool {
        if first == caller {
            first = others.isEmpty ? nil : others.removeFirst()
            return true
        }
        guard let index = others.firstIndex(of: caller) else { return false }
        others.remove(at: index)
        return true
    }

    mutating func takeAll() -> [CallerID] {
        defer {
            first = nil
            others = []
        }
        return all
    }
}

/// Waiting items of one tier, newest first, one stack per host so that a full host never blocks
/// another. Entries are removed lazily: one whose item has left `waiting` (or was queued again
/// since) is dropped when it reaches the top.
struct WaitingStacks {
    typealias Entry = (order: UInt64, handle: SchedulerCore.Handle)
    private var stacks: [HostKey: [Entry]] = [:]

    mutating func push(_ order: UInt64, _ handle: SchedulerCore.Handle, host: HostKey) {
        stacks[host, default: []].append((order, handle))
    }

    /// Removes and returns the newest live entry whose host `accepts`.
    mutating func popNewest(
        accepts: (HostKey) -> Bool, isLive: (UInt64, SchedulerCore.Handle) -> Bool
    ) -> SchedulerCore.Handle? {
        var best: (index: Dictionary<HostKey, [Entry]>.Index, order: UInt64)?
        // Stepped by hand: `indices` would hold a copy of the dictionary, and the first removal
        // below would then copy a whole stack.
        var index = stacks.startIndex
        while index != stacks.endIndex {
            defer { stacks.formIndex(after: &index) }
            // Drop stale tops in place, through the values view, without copying any stack.
            while let top = stacks.values[index].last, !isLive(top.order, top.handle) {
                stacks.values[index].removeLast()
            }
            guard let top = stacks.values[index].last, accepts(stacks.keys[index]) else { continue }
            if best.map({ top.order > $0.order }) ?? true { best = (index, top.order) }
        }
        guard let best, let entry = stacks.values[best.index].popLast() else { return nil }
        return entry.handle
    }
}

/// A host as the scheduler counts it: a number given to each host name the first time an item
/// of it is scheduled, so that counting transfers per host on every event hashes no names.
typealias HostKey = Int

/// The host names the scheduler has seen, each with its ``HostKey`` and whether its transfers
/// share HTTP/2 connections. Kept for the scheduler's life: one entry per host, and a run's
/// hosts are a few (Imgur's) or a feed's enclosure hosts, never one per file.
struct HostNames {
    private var keys: [String: HostKey] = [:]
    private(set) var names: [String] = []
    /// By key: the host's streams share connections, so no pause holds them.
    private var multiplexing: [Bool] = []

    /// The key of `host`, given now if it has none.
    mutating func key(of host: String) -> HostKey {
        if let key = keys[host] { return key }
        let key = names.count
        keys[host] = key
        names.append(host)
        multiplexing.append(false)
        return key
    }

    func isMultiplexing(_ host: HostKey) -> Bool { multiplexing[host] }

    mutating func markMultiplexing(_ host: HostKey) { multiplexing[host] = true }
}

/// Transfers per host, for one settling: there are about as many hosts in it as slots at most, so
/// a short list searched in order costs less than a dictionary's hashing.
struct HostCounts {
    private var hosts: [HostKey] = []
    private var counts: [Int] = []

    subscript(host: HostKey) -> Int {
        get { hosts.firstIndex(of: host).map { counts[$0] } ?? 0 }
        set {
            if let index = hosts.firstIndex(of: host) {
                counts[index] = newValue
            } else {
                hosts.append(host)
                counts.append(newValue)
            }
        }
    }

    mutating func removeAll() {
        hosts.removeAll(keepingCapacity: true)
        counts.removeAll(keepingCapacity: true)
    }
}
