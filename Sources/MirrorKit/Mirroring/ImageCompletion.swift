import Synchronization

/// Counts each image's settled files, and marks the image done in the store once both its
/// thumbnail and its full-size file are in the mirror (or removed upstream), in batches; an image
/// with a file not settled goes to `unsettled` (a shared mirror lets go of its claim).
final class ImageCompletion: Sendable {
    private struct State {
        var remaining: [String: Int] = [:]
        var unsettled: [String: JobRunner.Outcome] = [:]
        var done: [String] = []
        var failure: MirrorError?
        /// Who waits for fewer images in flight than a limit (a shared worker with no room to
        /// claim more).
        var roomWaiter: (limit: Int, continuation: CheckedContinuation<Void, Never>)?
    }

    private let store: any CrawlStore
    private let session: JobSession
    private let batchSize: Int
    private let beforeMarking: @Sendable () async throws(MirrorError) -> Void
    private let unsettled: @Sendable (String, JobRunner.Outcome) async -> Void
    private let marked: @Sendable ([String]) -> Void
    private let state = Mutex(State())

    init(
        store: any CrawlStore, session: JobSession, batchSize: Int = 64,
        beforeMarking: @escaping @Sendable () async throws(MirrorError) -> Void,
        marked: @escaping @Sendable ([String]) -> Void = { _ in },
        unsettled: @escaping @Sendable (String, JobRunner.Outcome) async -> Void = { _, _ in }
    ) {
        self.marked = marked
        self.store = store
        self.session = session
        self.batchSize = batchSize
        self.beforeMarking = beforeMarking
        self.unsettled = unsettled
    }

    /// Images with a file still to settle.
    var inFlight: Int { state.withLock { $0.remaining.count } }

    func expect(_ id: String, files: Int) {
        state.withLock { $0.remaining[id, default: 0] += files }
    }

    func settle(_ id: String, _ outcome: JobRunner.Outcome) async {
        let (batch, left, roomy): ([String]?, JobRunner.Outcome?, CheckedContinuation<Void, Never>?) = state.withLock { state in
            if !outcome.isSettled, state.unsettled[id] == nil { state.unsettled[id] = outcome }
            state.remaining[id, default: 1] -= 1
            guard state.remaining[id] == 0 else { return (nil, nil, nil) }
            state.remaining[id] = nil
            let roomy = state.roomWaiter.flatMap { state.remaining.count < $0.limit ? state.roomWaiter.take()?.continuation : nil }
            if let left = state.unsettled.removeValue(forKey: id) { return (nil, left, roomy) }
            state.done.append(id)
            guard state.done.count >= batchSize else { return (nil, nil, roomy) }
            defer { state.done = [] }
            return (state.done, nil, roomy)
        }
        if let left { await unsettled(id, left) }
        if let batch { await write(batch) }
        // After the image's claim is let go or marked done: what wakes may claim again.
        roomy?.resume()
    }

    /// Returns once fewer than `limit` images are in flight, or the caller is cancelled.
    func waitForRoom(below limit: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    // The flag is set before the handler runs, and the handler takes this lock:
                    // a cancel either is seen here or finds the waiter stored.
                    guard state.remaining.count >= limit, !Task.isCancelled else { return true }
                    state.roomWaiter = (limit, continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.roomWaiter.take() }?.continuation.resume()
        }
    }

    /// The first write that failed: it stopped the run.
    var failure: MirrorError? { state.withLock { $0.failure } }

    func flush() async {
        let batch = state.withLock { state in
            defer { state.done = [] }
            return state.done
        }
        await write(batch)
    }

    private func write(_ batch: [String]) async {
        guard !batch.isEmpty else { return }
        do throws(MirrorError) {
            try await beforeMarking()
            try await store.markImagesDone(batch)
            marked(batch)
        } catch {
            // The files are in the mirror, and the next run finds them there and settles them
            // again; but a state database or disk that takes no writes would fail every file after.
            state.withLock { $0.failure = $0.failure ?? error }
            session.halt(error)
        }
    }
}
