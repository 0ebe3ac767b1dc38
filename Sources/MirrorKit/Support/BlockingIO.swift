import Dispatch
import Synchronization

/// Runs calls that block on the disk (fsync above all) on Dispatch's threads, not on Swift's
/// cooperative pool: on two cores that pool has two threads, and a thread waiting for a flush is
/// one that runs no other download.
enum BlockingIO {
    /// Serial queues with no target get threads of their own (they overcommit), unlike a
    /// concurrent queue, which shares the pool the cooperative executor runs on.
    private static let queues = (0..<4).map { DispatchQueue(label: "mirror.blocking-io.\($0)") }
    private static let next = Atomic<Int>(0)

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
