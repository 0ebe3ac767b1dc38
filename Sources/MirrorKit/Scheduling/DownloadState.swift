/// Where a scheduled download stands.
///
/// ```
/// ready ──▶ waiting ◀──▶ downloading ◀──▶ paused
///   └──────────────────────▲   │  │           │
///                              │  ├──▶ completed, failed
///         suspended ◀──────────┴──┘ (from waiting, downloading, paused)
///             │  └──▶ waiting or downloading (revived)
///             └──▶ cancelled (purged: partial deleted)
/// ```
public enum DownloadState: String, Sendable, CaseIterable, Codable {
    /// Just created, not yet placed.
    case ready
    /// Queued for a free slot.
    case waiting
    /// Receiving.
    case downloading
    /// Held (`curl_easy_pause`) while a forced item runs; keeps its connection.
    case paused
    /// Soft-cancelled: its partial data is kept; it restarts only when scheduled again.
    case suspended
    /// Hard-cancelled: its partial data is gone.
    case cancelled
    case completed
    case failed

    /// Whether the scheduler may move an item from this state to `next`.
    public func canTransition(to next: DownloadState) -> Bool {
        switch (self, next) {
        case (.ready, .waiting), (.ready, .downloading):
            true
        case (.waiting, .downloading), (.waiting, .suspended), (.waiting, .completed), (.waiting, .failed):
            // Completed or failed from waiting: a transfer stopped for another finished before the
            // stop reached it.
            true
        case (.downloading, .paused), (.downloading, .waiting), (.downloading, .suspended),
             (.downloading, .completed), (.downloading, .failed):
            true
        case (.paused, .downloading), (.paused, .waiting), (.paused, .suspended),
             (.paused, .completed), (.paused, .failed):
            true
        case (.suspended, .waiting), (.suspended, .downloading), (.suspended, .cancelled):
            true
        default:
            false
        }
    }

    /// Traps on an illegal move: the scheduler's bookkeeping would be wrong from there on.
    static func checkTransition(from current: DownloadState, to next: DownloadState, url: String) {
        precondition(current.canTransition(to: next), "illegal transition \(current) → \(next) for \(url)")
    }

    /// No way out: the item is done with.
    public var isTerminal: Bool {
        self == .completed || self == .failed || self == .cancelled
    }
}
