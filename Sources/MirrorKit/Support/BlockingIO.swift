import Dispatch
import Synchronization

/// Runs calls that block on the disk (fsync above all) on threads of their own, not on Swift's
/// cooperative pool: on two cores that pool has two threads, and a thread waiting for a flush is
/// one that runs no other download.
enum BlockingIO {
    /// As many threads as downloads commonly end together: the journal of ext4 (or XFS's log)
    /// commits the fsyncs that wait at the same moment in one go, so more of them waiting at once
    /// costs less each (sixteen rather than four took the small workload from 0.83 s to 0.74 s
    /// at 16 downloads).
    private static let threads = BlockingThreads(limit: 16)

    /// ``runApart(_:)``'s outcome as a value, for callers whose wrappers take no typed throws.
    static func resultApart<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async -> Result<T, E> {
        do throws(E) {
            return .success(try await runApart(work))
        } catch {
            return .failure(error)
        }
    }

    /// ``run(_:)`` on a queue of its own, for work that takes long (copying a partial of
    /// hundreds of MB): it would hold one of the shared threads that long.
    static func runApart<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let queue = DispatchQueue(label: "mirror.blocking-io.apart")
        return try await outcome { continuation in
            queue.async { continuation.resume(returning: Result(catching: work)) }
        }
    }

    static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        try await outcome { continuation in
            threads.run { continuation.resume(returning: Result(catching: work)) }
        }
    }

    private static func outcome<T: Sendable, E: Error>(
        _ start: (CheckedContinuation<Result<T, E>, Never>) -> Void
    ) async throws(E) -> T {
        try await withCheckedContinuation(start).get()
    }
}

/// Threads that take work from one line, first come first served, started as the work needs
/// them and kept: an idle thread waits on a semaphore, and the only wakeup a piece of work
/// costs is the one that hands it to a waiting thread. (Dispatch's serial queues, which did this
/// before, woke a second worker thread for nearly every piece of work, and a piece queued behind
/// a long sync on its queue waited there while other threads were free.)
final class BlockingThreads: Sendable {
    private struct Line {
        var work: [(@Sendable () -> Void)?] = []
        var head = 0
        /// Threads waiting for work, or about to.
        var idle = 0
        var started = 0

        var count: Int { work.count - head }

        mutating func append(_ piece: @escaping @Sendable () -> Void) {
            work.append(piece)
        }

        mutating func takeFirst() -> (@Sendable () -> Void)? {
            guard head < work.count else { return nil }
            defer {
                work[head] = nil
                head += 1
                // Taken pieces are dropped in one go once they are half the storage.
                if head >= 64, head * 2 >= work.count {
                    work.removeFirst(head)
                    head = 0
                }
            }
            return work[head]
        }
    }

    private let line = Mutex(Line())
    /// One signal per piece of work in the line.
    private let ready = DispatchSemaphore(value: 0)
    private let limit: Int

    init(limit: Int) {
        self.limit = max(limit, 1)
    }

    /// Threads started so far: never more than the limit.
    var started: Int { line.withLock { $0.started } }

    /// Threads waiting for work.
    var idle: Int { line.withLock { $0.idle } }

    /// Runs `work` on one of the threads, as soon as one is free.
    func run(_ work: @escaping @Sendable () -> Void) {
        let startThread = line.withLock { line -> Bool in
            line.append(work)
            // More work waiting than threads ready to take it: one more thread, while allowed.
            guard line.count > line.idle, line.started < limit else { return false }
            line.started += 1
            return true
        }
        if startThread {
            DedicatedThread.start(named: "mirror-io") { [self] in serve() }
        }
        ready.signal()
    }

    private func serve() {
        while true {
            line.withLock { $0.idle += 1 }
            ready.wait()
            let work = line.withLock { line in
                line.idle -= 1
                return line.takeFirst()
            }
            work?()
        }
    }
}
