import Synchronization

/// One mirroring of a URL at a time: the first job for it leads, in its own task; later ones wait
/// for its outcome. A follower that is cancelled gets `.interrupted` at once and the lead goes
/// on; a lead that is cancelled stops (only a whole run is ever cancelled), and its followers
/// hear that.
final class Flights: Sendable {
    private struct State {
        /// The followers of each URL being mirrored, by number.
        var flights: [String: [Int: CheckedContinuation<JobRunner.Outcome?, Never>]] = [:]
        var nextFollower = 0
    }

    private let state = Mutex(State())

    /// `body`'s outcome, and whether this call ran it (rather than joined a run under way).
    func run(
        _ url: String, _ body: () async -> JobRunner.Outcome
    ) async -> (JobRunner.Outcome, led: Bool) {
        while true {
            let follower = state.withLock { state -> Int? in
                guard state.flights[url] != nil else {
                    state.flights[url] = [:]
                    return nil
                }
                state.nextFollower += 1
                return state.nextFollower
            }
            guard let follower else {
                // Inline rather than in a task of its own: one task and one thread hop less per file.
                let outcome = await body()
                let followers = state.withLock { $0.flights.removeValue(forKey: url) } ?? [:]
                for waiting in followers.values { waiting.resume(returning: outcome) }
                return (outcome, true)
            }
            // nil: the lead ended between the two looks; this job looks again, as the next lead.
            if let outcome = await follow(url, as: follower) { return (outcome, false) }
        }
    }

    /// Jobs waiting for the lead of `url`.
    func followers(of url: String) -> Int {
        state.withLock { $0.flights[url]?.count ?? 0 }
    }

    private func follow(_ url: String, as follower: Int) async -> JobRunner.Outcome? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = state.withLock { state -> JobRunner.Outcome?? in
                    guard state.flights[url] != nil else { return .some(nil) }
                    // Checked under the lock the cancel handler takes: a cancel before this
                    // finds nothing to answer, so it is answered here.
                    guard !Task.isCancelled else { return .some(.interrupted) }
                    state.flights[url]![follower] = continuation
                    return .none
                }
                if case .some(let answer) = answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            state.withLock { $0.flights[url]?.removeValue(forKey: follower) }?.resume(returning: .interrupted)
        }
    }
}
