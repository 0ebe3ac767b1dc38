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
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void
    ) async throws(DownloadError) -> FetchedFile {
        let host = URLAuthority.of(url)
        let slot = try await takeSlot(on: host, for: url)
        let result: Result<FetchedFile, DownloadError>
        do {
            result = .success(try await inner.fetch(
                url, id: id, expectedSize: expectedSize, held: held, progress: progress, receiving: receiving))
        } catch {
            result = .failure(error)
        }
        await coordinator.releaseHostSlot(host, slot: slot)
        return try result.get()
    }

    /// Waits for a free slot on `host` and takes it. The coordinator finishes a take or a release
    /// even when the caller is cancelled: a slot taken as the fetch was cancelled is let go here.
    private func takeSlot(on host: String, for url: String) async throws(DownloadError) -> Int {
        while true {
            let slot: Int?
            do {
                slot = try await coordinator.takeHostSlot(host, limit: limit)
            } catch {
                throw DownloadError(url: url, reason: .storage(error.description))
            }
            if let slot {
                guard Task.isCancelled else { return slot }
                await coordinator.releaseHostSlot(host, slot: slot)
                throw DownloadError(url: url, reason: .transfer(.cancelled))
            }
            // Jittered, so workers that wait together do not ask together.
            do {
                try await Task.sleep(for: pollInterval + .milliseconds(Int.random(in: 0...100)))
            } catch {
                throw DownloadError(url: url, reason: .transfer(.cancelled))
            }
        }
    }

    func pause(_ id: TransferID) { inner.pause(id) }
    func onHoldRefused(_ handler: @escaping @Sendable (TransferID) -> Void) { inner.onHoldRefused(handler) }
    func isHoldable(_ id: TransferID) -> Bool { inner.isHoldable(id) }
    func resume(_ id: TransferID) { inner.resume(id) }
    func partialLength(of url: String) -> Int64 { inner.partialLength(of: url) }
    func discardPartial(of url: String) { inner.discardPartial(of: url) }
    func concurrencyLimit(forHost host: String) -> Int? { inner.concurrencyLimit(forHost: host) }
    func onLimitRaised(_ handler: @escaping @Sendable () -> Void) { inner.onLimitRaised(handler) }
}
