import Dispatch

/// Runs calls that block on the disk (fsync above all) on Dispatch's threads, not on Swift's
/// cooperative pool: on two cores that pool has two threads, and a thread waiting for a flush is
/// one that runs no other download.
enum BlockingIO {
    private static let queue = DispatchQueue(label: "mirror.blocking-io", attributes: .concurrent)

    static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
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
