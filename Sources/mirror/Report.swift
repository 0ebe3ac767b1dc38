import ArgumentParser
import Logging
import MirrorKit

/// How a run ends on the terminal: the one-line summary, the problems, the exit status.
enum Report {
    /// Prints the summary (unless quiet and all went well) and throws the exit status for
    /// anything that did not.
    static func finish(_ summary: MirrorSummary, label: String, quiet: Bool, logger: Logger) throws {
        if summary.interrupted {
            if !quiet { print("\(label): \(summary.line)") }
            logger.warning("interrupted: partial downloads are kept and the next run resumes them")
            return
        }
        for problem in summary.problems { logger.error("\(problem)") }
        if let stopped = summary.stoppedBy {
            logger.error(summary.wanted > 0 ? "listing stopped early: \(stopped)" : "\(stopped)")
        }
        if !quiet || !summary.isComplete {
            print("\(label): \(summary.line)")
        }
        switch summary.stoppedBy {
        case let error as ImgurError: throw ExitCode(ExitStatus.of(error))
        case let error as FeedError: throw ExitCode(error.isFetchFailure ? ExitStatus.unavailable : ExitStatus.dataError)
        default: break
        }
        if !summary.isComplete { throw ExitCode(ExitStatus.someFilesFailed) }
    }
}
