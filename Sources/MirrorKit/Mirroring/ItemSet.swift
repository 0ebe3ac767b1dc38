import Glibc
import Synchronization

/// A set of items shared by a run's jobs, kept as 64-bit hashes: a run over 100,000 items holds
/// 100,000 words, not 100,000 URLs (some 120 bytes each). Two items of one run share a hash with
/// a chance of about one in 10^9 at that size; the cost would be one file not revalidated or
/// restored by this run's sweep (the next run does it).
final class ItemSet: Sendable {
    private let hashes = Mutex(SortedHashes())

    func insert(_ item: String) {
        hashes.withLock { _ = $0.insert(item.hashValue) }
    }

    /// Inserts `item`; false when it was there already.
    func inserted(_ item: String) -> Bool {
        hashes.withLock { $0.insert(item.hashValue) }
    }

    func contains(_ item: String) -> Bool {
        hashes.withLock { $0.contains(item.hashValue) }
    }
}

/// Hashes in one sorted block, eight bytes each, and the latest few in a small set that is
/// merged into the block when full.
///
/// A `Set<Int>` of a run's 200,000 files held 4 MiB (at most three quarters of its buckets
/// used), and 6 MiB while it grew, at the very end of the run: the largest thing a run over
/// 100,000 images held. The block grows by `realloc`, by 32 KiB at a time (in place, or by moving
/// pages, where malloc can; else by a copy that briefly holds two blocks of 8 bytes a hash), and
/// the merge runs from the back, in place.
struct SortedHashes: ~Copyable {
    /// Hashes taken in before they are merged: a merge costs a pass over the block, so at most
    /// one pass per this many insertions.
    static let batch = 4_096

    private var block: UnsafeMutablePointer<Int>?
    private var sortedCount = 0
    private var recent: Set<Int> = []

    init() {}

    deinit { free(block) }

    /// Hashes held.
    var count: Int { sortedCount + recent.count }

    /// Inserts `hash`; false when it was there already.
    mutating func insert(_ hash: Int) -> Bool {
        guard !isSorted(hash), recent.insert(hash).inserted else { return false }
        if recent.count >= Self.batch { mergeRecent() }
        return true
    }

    func contains(_ hash: Int) -> Bool {
        recent.contains(hash) || isSorted(hash)
    }

    private func isSorted(_ hash: Int) -> Bool {
        guard let block else { return false }
        var low = 0
        var high = sortedCount
        while low < high {
            let middle = low + (high - low) / 2
            if block[middle] < hash { low = middle + 1 } else { high = middle }
        }
        return low < sortedCount && block[low] == hash
    }

    private mutating func mergeRecent() {
        let incoming = recent.sorted()
        let total = sortedCount + incoming.count
        guard let grown = realloc(block, total * MemoryLayout<Int>.stride)?.bindMemory(to: Int.self, capacity: total) else {
            fatalError("out of memory: \(total) hashes")
        }
        block = grown
        // From the back, the larger of the two next: nothing is overwritten before it is read.
        var old = sortedCount - 1
        var new = incoming.count - 1
        var end = total - 1
        while new >= 0 {
            if old >= 0, grown[old] > incoming[new] {
                grown[end] = grown[old]
                old -= 1
            } else {
                grown[end] = incoming[new]
                new -= 1
            }
            end -= 1
        }
        sortedCount = total
        recent.removeAll(keepingCapacity: true)
    }
}
