import Logging

/// What the scheduler needs from the network and the disk: the seam where tests put a scripted
/// fake and the tool puts libcurl.
package protocol DownloadTransport: Sendable {
    /// Downloads `url` into its partial, continuing from what the partial holds, and returns the
    /// complete, verified file. Must end promptly with an error when the calling task is cancelled,
    /// keeping what it received. `receiving` hears true when the file's body starts arriving and
    /// false while it is not (waiting to try again): a forced transfer holds others back only
    /// while it receives.
    /// With `held`, the fetch is conditional on the server's file not being that copy, and may
    /// return ``FetchedFile/isNotModified``.
    func fetch(
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void
    ) async throws(DownloadError) -> FetchedFile

    /// Starts fetching `url` as ``fetch(_:id:expectedSize:held:progress:receiving:)`` does and
    /// returns at once; `finished` hears the result exactly once, and the stopper cancels the
    /// fetch (it then finishes with a cancellation, keeping its partial). Transports get this
    /// for free; a scripted one implements it to hand the result over synchronously, so a test
    /// knows when the scheduler has heard it.
    func launch(
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void,
        finished: @escaping @Sendable (Result<FetchedFile, DownloadError>) -> Void
    ) -> Stopper

    /// Holds a running transfer without dropping it.
    func pause(_ id: TransferID)
    /// Tells `handler` of each transfer asked to pause that goes on receiving all the same (an
    /// HTTP/2 stream): the scheduler counts it as running.
    func onHoldRefused(_ handler: @escaping @Sendable (TransferID) -> Void)
    /// Whether a pause would hold the transfer: false once it is known to be an HTTP/2 stream.
    func isHoldable(_ id: TransferID) -> Bool
    /// Lets a held transfer go on.
    func resume(_ id: TransferID)
    /// Bytes of partial data held for `url`.
    func partialLength(of url: String) -> Int64
    /// Deletes the partial data held for `url`.
    func discardPartial(of url: String)
    /// How many transfers `host` should get at once now, when the transport knows better than
    /// the scheduler's fixed limit (a host that throttles); nil for no opinion.
    func concurrencyLimit(forHost host: String) -> Int?
    /// Tells `handler` whenever a limit ``concurrencyLimit(forHost:)`` gives goes up: the
    /// scheduler looks again only when something happens, and a transport that gives limits must
    /// say so when one rises (a wrapper forwards it), or items held back for it wait for the
    /// next transfer to end. One handler: the scheduler's.
    func onLimitRaised(_ handler: @escaping @Sendable () -> Void)
}

extension DownloadTransport {
    package func concurrencyLimit(forHost host: String) -> Int? { nil }
    /// No limit of its own, so none is raised.
    package func onLimitRaised(_ handler: @escaping @Sendable () -> Void) {}
    /// Every pause applies.
    package func onHoldRefused(_ handler: @escaping @Sendable (TransferID) -> Void) {}
    package func isHoldable(_ id: TransferID) -> Bool { true }

    package func launch(
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void,
        finished: @escaping @Sendable (Result<FetchedFile, DownloadError>) -> Void
    ) -> Stopper {
        // Detached: the fetch runs off the caller (the scheduler's actor) from its first instruction.
        let task = Task.detached {
            do throws(DownloadError) {
                finished(.success(try await fetch(
                    url, id: id, expectedSize: expectedSize, held: held, progress: progress, receiving: receiving)))
            } catch {
                finished(.failure(error))
            }
        }
        return Stopper { task.cancel() }
    }
}

/// Ends something started (a transfer, a timer) early.
package struct Stopper: Sendable {
    private let action: @Sendable () -> Void

    package init(_ action: @escaping @Sendable () -> Void) {
        self.action = action
    }

    package func stop() { action() }
}

/// The real transport: libcurl through ``TransferEngine``, partials in a ``PartialStore``.
package struct EngineTransport: DownloadTransport {
    let engine: TransferEngine
    let downloader: Downloader
    let partials: PartialStore
    let health: HostHealth?

    package init(
        engine: TransferEngine, partials: PartialStore, retry: RetryPolicy = RetryPolicy(), health: HostHealth? = nil,
        isRemovedPlaceholder: (@Sendable (TransferResponse) -> Bool)? = nil,
        maxFileSize: Int64 = Downloader.defaultMaxFileSize, mayTouchPartial: (@Sendable (String) async -> Bool)? = nil,
        logger: Logger
    ) {
        self.engine = engine
        self.partials = partials
        self.health = health
        downloader = Downloader(
            engine: engine, partials: partials, retry: retry, health: health,
            isRemovedPlaceholder: isRemovedPlaceholder, maxFileSize: maxFileSize, mayTouchPartial: mayTouchPartial,
            logger: logger)
    }

    package func fetch(
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void
    ) async throws(DownloadError) -> FetchedFile {
        try await downloader.fetch(
            url, id: id, expectedSize: expectedSize, held: held, progress: progress, receiving: receiving)
    }

    package func pause(_ id: TransferID) { engine.pause(id) }
    package func onHoldRefused(_ handler: @escaping @Sendable (TransferID) -> Void) { engine.onHoldRefused(handler) }
    package func isHoldable(_ id: TransferID) -> Bool { !engine.isMultiplexed(id) }
    package func resume(_ id: TransferID) { engine.resume(id) }
    package func partialLength(of url: String) -> Int64 { partials.length(for: url) }
    package func discardPartial(of url: String) {
        // Shared, the name may be another worker's partial by now (its claim taken over): the
        // budget for suspended downloads gives way.
        guard downloader.mayTouchPartial == nil else { return }
        partials.remove(url)
    }
    package func concurrencyLimit(forHost host: String) -> Int? { health?.concurrencyLimit(forHost: host) }
    package func onLimitRaised(_ handler: @escaping @Sendable () -> Void) { health?.onLimitRaised(handler) }
}
