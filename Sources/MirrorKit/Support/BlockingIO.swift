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

    /// ``run(_:)``'s outcome as a value, for callers whose wrappers take no typed throws.
    static func result<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async -> Result<T, E> {
        do throws(E) {
            return .success(try await run(work))
        } catch {
            return .failure(error)
        }
    }

    static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let queue = queues[next.add(1, ordering: .relaxed).oldValue % queues.count]
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
