/// A snapshot of the scheduler, for `mirror status` and verbose logs.
public struct SchedulerStatus: Sendable, Codable, Equatable {
    public struct Item: Sendable, Codable, Equatable {
        public var url: String
        public var state: DownloadState
        public var isForced: Bool
        public var completedBytes: Int64
        public var totalBytes: Int64?

        /// 0–100, when the size is known.
        public var percent: Double? {
            guard let totalBytes, totalBytes > 0 else { return nil }
            return min(100, Double(completedBytes) * 100 / Double(totalBytes))
        }
    }

    /// Items per state, finished ones included.
    public var counts: [DownloadState: Int]
    /// The items with a transfer (downloading, paused, or stopping), forced first, then by state;
    /// waiting and suspended ones are in ``counts`` only.
    public var items: [Item]

    /// `downloading 3, waiting 120, paused 2, completed 40`: the non-zero counts.
    public var summaryLine: String {
        DownloadState.allCases.compactMap { state in
            counts[state].flatMap { $0 > 0 ? "\(state.rawValue) \($0)" : nil }
        }.joined(separator: ", ")
    }
}
