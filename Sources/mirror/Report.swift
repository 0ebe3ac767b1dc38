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
        if !quiet {
            for release in summary.skippedReleases { Console.print("\(label): \(release)") }
        }
        for album in summary.removedAlbums { logger.warning("album \(album) is gone from Imgur; it will not be asked for again") }
        if summary.deferred > 0 {
            // One line per host, not one per file: the files are left for the next run.
            for verdict in summary.unavailableHosts {
                logger.error("\(verdict): stopping; \(summary.deferred) files left for the next run")
            }
        }
        // A spent budget is the plan on a large tag; anything else that stopped the listing is a fault.
        let budgetStop = summary.stoppedByTheBudget
        if let stopped = summary.stoppedBy {
            if budgetStop {
                logger.warning("\(stopped)")
            } else if stopped is MirrorError {
                // The disk's or the mirror's failure, not the listing's: every file would meet it.
                logger.error("run stopped: \(stopped)")
            } else {
                logger.error(summary.wanted > 0 ? "listing stopped early: \(stopped)" : "\(stopped)")
            }
        }
        if case .signal(let number) = stop {
            if !quiet || !summary.failures.isEmpty { Console.print("\(label): \(summary.line)") }
            logger.warning("interrupted: partial downloads are kept and the next run resumes them")
            throw ExitCode(128 + number)
        }
        let faultFree = summary.failures.isEmpty && summary.problems.isEmpty && summary.deferred == 0
            && summary.stoppedOnlyByTheBudget
        let wellEnough = summary.isComplete || (faultFree && (stop == .deadline || budgetStop))
        if !quiet || !wellEnough {
            let deadline = stop == .deadline ? "; stopped at the --max-duration deadline" : ""
            Console.print("\(label): \(summary.line)\(deadline)")
        }
        switch summary.stoppedBy {
        case let error as ImgurError where !(stop == .deadline && budgetStop):
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
