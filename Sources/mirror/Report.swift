import ArgumentParser
import Logging
import MirrorKit

/// How a run ends on the terminal: the one-line summary, the problems, the exit status.
enum Report {
    /// Prints the summary (unless quiet and all went well) and throws the exit status for
    /// anything that did not.
    static func finish(
        _ summary: MirrorSummary, label: String, quiet: Bool, stop: Interruption.Stop?, logger: Logger
    ) throws {
        for problem in summary.problems { logger.error("\(problem)") }
        for album in summary.removedAlbums { logger.warning("album \(album) is gone from Imgur; it will not be asked for again") }
        if case .signal(let number) = stop {
            if !quiet { print("\(label): \(summary.line)") }
            logger.warning("interrupted: partial downloads are kept and the next run resumes them")
            throw ExitCode(128 + number)
        }
        if summary.deferred > 0 {
            // One line per host, not one per file: the files are left for the next run.
            for verdict in summary.unavailableHosts {
                logger.error("\(verdict): stopping; \(summary.deferred) files left for the next run")
            }
        }
        let budgetStop = (summary.stoppedBy as? ImgurError)?.kind == .rateLimited
        if let stopped = summary.stoppedBy {
            if budgetStop {
                // Expected on a tag larger than the budget: the cursor is saved, a later run carries on.
                logger.warning("\(stopped)")
            } else {
                logger.error(summary.wanted > 0 ? "listing stopped early: \(stopped)" : "\(stopped)")
            }
        }
        // The deadline and the budget are the plan, not faults: the next run carries on.
        let planned = (stop == .deadline || (budgetStop && (summary.stoppedBy as? ImgurError)?.isAPIWide == true))
        let faultFree = summary.failures.isEmpty && summary.problems.isEmpty && summary.deferred == 0
            && (summary.stoppedBy == nil || budgetStop)
        if !quiet || !(summary.isComplete || (planned && faultFree)) {
            let deadline = stop == .deadline ? "; stopped at the --max-duration deadline" : ""
            print("\(label): \(summary.line)\(deadline)")
        }
        switch summary.stoppedBy {
        case let error as ImgurError where !(stop == .deadline && error.kind == .rateLimited):
            throw ExitCode(ExitStatus.of(error))
        case let error as FeedError: throw ExitCode(error.isFetchFailure ? ExitStatus.unavailable : ExitStatus.dataError)
        case let error as MirrorError: throw ExitCode(ExitStatus.of(error))
        default: break
        }
        if summary.deferred > 0 { throw ExitCode(ExitStatus.tryLater) }
        if !summary.failures.isEmpty || !summary.problems.isEmpty { throw ExitCode(ExitStatus.someFilesFailed) }
        if !summary.isComplete && stop != .deadline { throw ExitCode(ExitStatus.someFilesFailed) }
    }
}
