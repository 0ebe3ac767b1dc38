/// A snapshot of the scheduler, for `mirror status` and verbose logs.
package struct SchedulerStatus: Sendable, Codable, Equatable {
    package struct Item: Sendable, Codable, Equatable {
        package var url: String
        package var state: DownloadState
        package var isForced: Bool
        /// Bytes of the file held: what its partial held when the transfer started, and since.
        var completedBytes: Int64
        var totalBytes: Int64?
        /// Bytes this transfer has received.
        var receivedBytes: Int64 = 0

        /// 0–100, when the size is known.
        package var percent: Double? {
            guard let totalBytes, totalBytes > 0 else { return nil }
            return min(100, Double(completedBytes) * 100 / Double(totalBytes))
        }
    }

    /// Items per state, finished ones included.
    package var counts: [DownloadState: Int]
    /// Bytes received this run, by every transfer so far (ended or under way).
    package var receivedBytes: Int64 = 0
    /// Which snapshot this is, counting from 1: a later one is newer.
    var sequence = 0
    /// The items with a transfer (downloading, paused, or stopping), forced first, then by state;
    /// waiting and suspended ones are in ``counts`` only.
    package var items: [Item]

    /// `downloading 3, waiting 120, paused 2, completed 40`: the non-zero counts.
    package var summaryLine: String {
        DownloadState.allCases.compactMap { state in
            counts[state].flatMap { $0 > 0 ? "\(state.rawValue) \($0)" : nil }
        }.joined(separator: ", ")
    }
}
