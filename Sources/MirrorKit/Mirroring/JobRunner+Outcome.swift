import Logging

extension JobRunner {
    enum Outcome: Sendable {
        /// Saved; `newVersion` when an older version of the item stays beside it, `restored` when
        /// the mirror had it and it was deleted from the disk.
        case downloaded(bytes: Int64, newVersion: Bool, restored: Bool = false)
        case alreadyPresent
        /// Asked again (`new-file`): the server's file is the one the mirror holds.
        case unchanged
        /// Gone upstream; `known` when an earlier run found it so (it is not named again), `kept`
        /// when the mirror holds a copy from before (`new-file` asked after it).
        case removed(String, known: Bool = false, kept: Bool = false)
        case interrupted
        /// A dry run would fetch it (see ``DryRun``).
        case planned(PlannedFile)
        /// A dry run in `new-file` mode would ask after the copy the mirror holds.
        case plannedRecheck
        /// Not tried: its host is down or throttling this run; a later run tries it.
        case deferred(url: String)
        case failed(DownloadError)
        /// The mirror as a whole cannot go on (a full disk, a database that takes no writes, a
        /// folder that is a planted link): the run stops, keeping what it has.
        case halted(MirrorError)
        /// Another worker took the file's claim over while this one was stopped past its lease:
        /// the file is that worker's to mirror.
        case handedOver

        /// The mirror as a whole cannot go on: a lost claim does not excuse it.
        var haltsTheRun: Bool {
            if case .halted = self { true } else { false }
        }

        /// The file is in the mirror, or known gone: no later run needs to try it.
        var isSettled: Bool {
            switch self {
            case .downloaded, .alreadyPresent, .unchanged, .removed, .planned, .plannedRecheck: true
            case .interrupted, .deferred, .failed, .halted, .handedOver: false
            }
        }
    }

    func record(_ outcome: Outcome, in summary: inout MirrorSummary) {
        switch outcome {
        case .downloaded(let bytes, let newVersion, let restored):
            if restored { summary.missingFetchedAgain += 1 }
            summary.downloaded += 1
            summary.bytesDownloaded += bytes
            if newVersion { summary.newVersions += 1 }
        case .alreadyPresent:
            summary.alreadyPresent += 1
        case .unchanged:
            summary.unchanged += 1
        case .removed(_, known: true, _):
            summary.removedBefore += 1
        case .removed(let url, known: false, _):
            logger.info("removed upstream: \(url)", metadata: ["url": "\(url)"])
            summary.removed.append(url)
        case .interrupted:
            summary.interrupted = true
        case .handedOver:
            summary.handedOver += 1
        case .planned(let file):
            summary.plan.add(file)
        case .plannedRecheck:
            summary.plan.rechecks += 1
        case .deferred(let url):
            summary.defer(url)
        case .failed(let error) where isHostTrouble(error):
            // It failed before its host was given up, for the reason the host was: one line about
            // the host says it, and the next run tries the file again.
            summary.defer(error.url)
        case .failed(let error):
            // A host that does not answer may yet be given up this run, and then one line says
            // so for all its files: the driver says the others at the end.
            if !Self.isUnansweredOrThrottled(error) { logger.error("\(error)", metadata: error.logFields) }
            summary.failures.append(error)
        case .halted(let error):
            summary.interrupted = true
            if summary.stoppedBy == nil { summary.stoppedBy = .mirror(error) }
        }
    }

    /// The error that stops the whole run, when `error` is not one file's but the disk's or the
    /// mirror's: every other file would fail the same way.
    static func halting(_ error: DownloadError) -> MirrorError? {
        switch error.reason {
        case .transfer(.fileWrite(let failure)) where failure.stopsTheRun: .fileSystem(failure)
        case .transfer(.digest(let message)): .digest(message)
        default: nil
        }
    }

    /// `.halted` for an error that stops the run, `.failed` for one of this file's name alone.
    func halting(_ error: MirrorError, _ job: MirrorJob) -> Outcome {
        error.stopsTheRun ? .halted(error) : .failed(DownloadError(url: job.url, reason: .storage(error.description)))
    }

    /// A throttling answer or a connection failure from a host this run has given up.
    func isHostTrouble(_ error: DownloadError) -> Bool {
        health.verdict(forURL: error.url) != nil && Self.isUnansweredOrThrottled(error)
    }

    /// The host did not answer, or throttled: trouble of this worker's link or address, which
    /// another worker may not have.
    static func isUnansweredOrThrottled(_ error: DownloadError) -> Bool {
        switch error.reason {
        case .httpStatus(let status): return RetryPolicy.isThrottling(status: status)
        case .transfer(let reason): return TransferError(url: error.url, reason: reason).unanswered != nil
        default: return false
        }
    }
}
