/// Where a scheduled download stands, as the status shows it. The scheduler's own phases
/// (``SchedulerCore/Phase``) carry more: this is what they look like from outside.
///
/// ```
/// waiting ◀──▶ downloading ◀──▶ paused
///    │  ▲          │  │            │
///    │  │          │  └──▶ completed, failed
///    ▼  │          ▼               │
///   suspended ◀────────────────────┘
///       └──▶ cancelled (purged: partial deleted)
/// ```
package enum DownloadState: String, Sendable, CaseIterable, Codable {
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
}
