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
        switch stop {
        case .signal(let number):
            if !quiet { print("\(label): \(summary.line)") }
            logger.warning("interrupted: partial downloads are kept and the next run resumes them")
            throw ExitCode(128 + number)
        case .deadline:
            // The deadline is the plan, not a fault: the next run carries on from the cursor.
            for problem in summary.problems { logger.error("\(problem)") }
            let failed = !summary.failures.isEmpty || !summary.problems.isEmpty
            if !quiet || failed { print("\(label): \(summary.line); stopped at the --max-duration deadline") }
            if failed { throw ExitCode(ExitStatus.someFilesFailed) }
            return
        case nil:
            break
        }
        for problem in summary.problems { logger.error("\(problem)") }
        for album in summary.removedAlbums { logger.warning("album \(album) is gone from Imgur; it will not be asked for again") }
        if summary.deferred > 0 {
            // One line per host, not one per file: the files are left for the next run.
            for verdict in summary.unavailableHosts {
                logger.error("\(verdict): stopping; \(summary.deferred) files left for the next run")
            }
        }
        if let stopped = summary.stoppedBy {
            if let error = stopped as? ImgurError, error.kind == .rateLimited {
                // Expected on a tag larger than the budget: the cursor is saved, a later run carries on.
                logger.warning("\(error)")
            } else {
                logger.error(summary.wanted > 0 ? "listing stopped early: \(stopped)" : "\(stopped)")
            }
        }
        let budgetStopOnly = (summary.stoppedBy as? ImgurError)?.kind == .rateLimited && summary.failures.isEmpty
            && summary.problems.isEmpty && summary.deferred == 0
        if !quiet || (!summary.isComplete && !budgetStopOnly) {
            print("\(label): \(summary.line)")
        }
        switch summary.stoppedBy {
        case let error as ImgurError: throw ExitCode(ExitStatus.of(error))
        case let error as FeedError: throw ExitCode(error.isFetchFailure ? ExitStatus.unavailable : ExitStatus.dataError)
        case let error as MirrorError: throw ExitCode(ExitStatus.of(error))
        default: break
        }
        if summary.deferred > 0 { throw ExitCode(ExitStatus.tryLater) }
        if !summary.isComplete { throw ExitCode(ExitStatus.someFilesFailed) }
    }
}
