/// A transport whose fetches each hold one of the connection slots the whole cluster of workers
/// may use on the file's host: N workers put no more connections on a CDN than `limit`, however
/// many there are. A fetch waits for a free slot (polling the shared state), then runs as the
/// inner transport's.
struct ClusterHostGate: DownloadTransport {
    let inner: any DownloadTransport
    let coordinator: any WorkCoordinator
    /// Connections to one host across all workers.
    let limit: Int
    /// How often a fetch waiting for a slot asks again.
    let pollInterval: Duration

    init(inner: any DownloadTransport, coordinator: any WorkCoordinator, limit: Int, pollInterval: Duration = .milliseconds(200)) {
        self.inner = inner
        self.coordinator = coordinator
        self.limit = max(limit, 1)
        self.pollInterval = pollInterval
    }

    func fetch(
        _ url: String, id: TransferID, expectedSize: Int64?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void
    ) async throws(DownloadError) -> FetchedFile {
        let host = URLAuthority.of(url)
        let (coordinator, limit) = (coordinator, limit)
        var slot: Int?
        while slot == nil {
            // Taken and let go outside the caller's cancellation: a query cut short after its
            // commit would leave a slot taken that no one lets go (and the heartbeat renews).
            let taken = await Task { () -> Result<Int?, MirrorError> in
                do throws(MirrorError) {
                    return .success(try await coordinator.takeHostSlot(host, limit: limit))
                } catch {
                    return .failure(error)
                }
            }.value
            switch taken {
            case .success(let taken): slot = taken
            case .failure(let error): throw DownloadError(url: url, reason: .storage(error.description))
            }
            if let taken = slot, Task.isCancelled {
                await Task { await coordinator.releaseHostSlot(host, slot: taken) }.value
                throw DownloadError(url: url, reason: .transfer(.cancelled))
            }
            if slot == nil {
                // Jittered, so workers that wait together do not ask together.
                let wait = pollInterval + .milliseconds(Int.random(in: 0...100))
                do {
                    try await Task.sleep(for: wait)
                } catch {
                    throw DownloadError(url: url, reason: .transfer(.cancelled))
                }
            }
        }
        let taken = slot!
        let result: Result<FetchedFile, DownloadError>
        do {
            result = .success(try await inner.fetch(
                url, id: id, expectedSize: expectedSize, held: held, progress: progress, receiving: receiving))
        } catch {
            result = .failure(error)
        }
        await Task { await coordinator.releaseHostSlot(host, slot: taken) }.value
        return try result.get()
    }

    func pause(_ id: TransferID) { inner.pause(id) }
    func resume(_ id: TransferID) { inner.resume(id) }
    func partialLength(of url: String) -> Int64 { inner.partialLength(of: url) }
    func discardPartial(of url: String) { inner.discardPartial(of: url) }
    func concurrencyLimit(forHost host: String) -> Int? { inner.concurrencyLimit(forHost: host) }
}
