import Dispatch
import Synchronization

/// Runs calls that block on the disk (fsync above all) on Dispatch's threads, not on Swift's
/// cooperative pool: on two cores that pool has two threads, and a thread waiting for a flush is
/// one that runs no other download.
enum BlockingIO {
    /// Serial queues with no target get threads of their own (they overcommit), unlike a
    /// concurrent queue, which shares the pool the cooperative executor runs on. As many as
    /// downloads commonly end together: the journal of ext4 (or XFS's log) commits the fsyncs
    /// that wait at the same moment in one go, so more of them waiting at once costs less each
    /// (sixteen rather than four took the small workload from 0.83 s to 0.74 s at 16 downloads).
    private static let queues = (0..<16).map { DispatchQueue(label: "mirror.blocking-io.\($0)") }
    private static let next = Atomic<Int>(0)

    /// ``runApart(_:)``'s outcome as a value, for callers whose wrappers take no typed throws.
    static func resultApart<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async -> Result<T, E> {
        do throws(E) {
            return .success(try await runApart(work))
        } catch {
            return .failure(error)
        }
    }

    /// ``run(_:)`` on a queue of its own, for work that takes long (copying a partial of
    /// hundreds of MB): whatever is queued behind it on the shared queues (a commit's rename
    /// while its claim is locked) would wait that long.
    static func runApart<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        try await run(on: DispatchQueue(label: "mirror.blocking-io.apart"), work)
    }

    static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        try await run(on: queues[next.add(1, ordering: .relaxed).oldValue % queues.count], work)
    }

    private static func run<T: Sendable, E: Error>(
        on queue: DispatchQueue, _ work: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(E) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
