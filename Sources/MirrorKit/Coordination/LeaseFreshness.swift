import Synchronization

/// Whether this worker's leases are known to hold now, by its own clock: a worker that was
/// stopped for longer than a lease (SIGSTOP, a paused VM) and let go has every thread running
/// again at once, and must not touch a partial by its name (resume it, truncate it, delete it,
/// commit it) before its next renewal says which of its claims went to another worker meanwhile.
///
/// A renewal that began less than two thirds of a lease ago keeps the leases fresh (they were set
/// to run a whole lease from the database's time of that renewal). Past that, whoever asks waits
/// for the next renewal, or for its own cancel.
final class LeaseFreshness: Sendable {
    private struct State {
        /// When the last renewal that succeeded began (the claims taken before the first count
        /// from when the worker started).
        var renewedAt: Duration
        /// URLs of claims that went to other workers: never this worker's to touch again.
        var lost: Set<String> = []
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let clock: any RunClock
    private let horizon: Duration
    private let state: Mutex<State>

    init(leaseDuration: Duration, clock: any RunClock) {
        self.clock = clock
        horizon = leaseDuration * 2 / 3
        state = Mutex(State(renewedAt: clock.elapsed))
    }

    /// Records a renewal that began at `began` (by ``RunClock/elapsed``) and the URLs of the
    /// claims it found lost; wakes whoever waits.
    func renewed(began: Duration, lost urls: [String]) {
        let waiters = state.withLock { state in
            state.renewedAt = max(state.renewedAt, began)
            state.lost.formUnion(urls)
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    /// Says the claims of `urls` are this worker's again (lost once, claimed anew since).
    func reclaimed(_ urls: [String]) {
        state.withLock { state in
            guard !state.lost.isEmpty else { return }
            state.lost.subtract(urls)
        }
    }

    /// Returns once the leases are fresh: true when `url`'s partial is still this worker's to
    /// touch, false when its claim went to another worker (or the caller was cancelled).
    func mayTouch(_ url: String) async -> Bool {
        while !Task.isCancelled {
            let key = state.withLock { state -> Int in
                state.nextWaiter += 1
                return state.nextWaiter
            }
            var fresh = false
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let now = clock.elapsed
                    let ready = state.withLock { state -> Bool in
                        fresh = now - state.renewedAt < horizon
                        guard !fresh, !Task.isCancelled else { return true }
                        state.waiters[key] = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                state.withLock { $0.waiters.removeValue(forKey: key) }?.resume()
            }
            if fresh { return state.withLock { !$0.lost.contains(url) } }
        }
        return false
    }
}
