/// What a run did, for the one-line report and the exit status.
public struct MirrorSummary: Sendable {
    /// Files the run set out to have (previews and full-size files).
    public var wanted = 0
    public var downloaded = 0
    public var alreadyPresent = 0
    public var bytesDownloaded: Int64 = 0
    /// Media the host has removed; reported, not counted as failures.
    public var removed: [String] = []
    public var failures: [DownloadError] = []
    /// Parts of the listing that could not be read (an album, an item with a bad id).
    public var problems: [String] = []
    /// The error that ended the listing early, if any.
    public var stoppedBy: (any Error & Sendable)?
    /// The run was cancelled (a signal) before it finished; partial downloads are kept.
    public var interrupted = false

    public init() {}

    /// True when every wanted file is in the mirror and the whole listing was read.
    public var isComplete: Bool {
        failures.isEmpty && problems.isEmpty && stoppedBy == nil && !interrupted
    }

    /// `12 files: 10 downloaded (1.2 MB), 2 already present, 0 failed`.
    public var line: String {
        var parts = ["\(wanted) files: \(downloaded) downloaded (\(Self.formatBytes(bytesDownloaded)))"]
        parts.append("\(alreadyPresent) already present")
        if !removed.isEmpty { parts.append("\(removed.count) removed upstream") }
        parts.append("\(failures.count) failed")
        if interrupted { parts.append("interrupted (partial downloads kept)") }
        return parts.joined(separator: ", ")
    }

    /// `1.2 MB`: decimal units, one decimal.
    public static func formatBytes(_ bytes: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}
