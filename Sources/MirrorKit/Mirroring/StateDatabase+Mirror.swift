import FoundationEssentials

extension StateDatabase {
    /// Opens (or creates) the state database of `directory`, in its `.mirror`.
    init(directory: MirrorDirectory, onDamage: (String) -> Void = { _ in }) throws(MirrorError) {
        try self.init(folder: directory.stateFolder, onDamage: onDamage)
    }

    /// The state database of `directory`, for reading only (see ``forReading(in:)-(Directory)``).
    package static func forReading(in directory: MirrorDirectory) -> StateDatabase? {
        forReading(in: directory.stateFolder)
    }
}

extension RunRecord {
    /// The record of a source's run that ended with `summary`.
    package init(source: String, startedAt: Date, endedAt: Date, exitStatus: Int32, summary: MirrorSummary) {
        self.init(
            source: source, startedAt: startedAt, endedAt: endedAt, exitStatus: exitStatus, line: summary.line,
            filesWanted: summary.wanted, filesDownloaded: summary.downloaded, bytesDownloaded: summary.bytesDownloaded,
            filesPresent: summary.alreadyPresent, filesUnchanged: summary.unchanged, filesRemoved: summary.removed.count + summary.removedBefore,
            filesDeferred: summary.deferred, filesFailed: summary.failures.count,
            failures: summary.failures.prefix(Self.maxFailuresKept).map { FailedFile(url: $0.url, problem: $0.description) },
            stoppedBy: summary.stoppedBy?.description, interrupted: summary.interrupted,
            removed: summary.removed.isEmpty ? nil : Array(summary.removed.prefix(Self.maxFailuresKept)))
    }
}
