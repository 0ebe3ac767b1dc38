import ArgumentParser
import Logging
import MirrorKit

/// How a run ends on the terminal: the one-line summary, the problems, the exit status.
enum Report {
    /// The exit status of a run that ended with `summary`, stopped by `stop` if anything stopped it.
    static func exitStatus(_ summary: MirrorSummary, stop: Interruption.Stop?) -> Int32 {
        if case .signal(let number) = stop { return 128 + number }
        // Files that failed outrank "carry on later": a run that also lost files must not look
        // like the hourly budget stop of a big tag.
        let filesFailed = !summary.failures.isEmpty || !summary.problems.isEmpty
        switch summary.stoppedBy {
        case .listing(let failure):
            switch failure.kind {
            case .budget where filesFailed, .tryLater where filesFailed: return ExitStatus.someFilesFailed
            // A spent budget at the deadline is the plan on a large tag: the next run carries on.
            case .budget: if stop != .deadline { return ExitStatus.tryLater }
            case .tryLater: return ExitStatus.tryLater
            case .unavailable: return ExitStatus.unavailable
            case .badData: return ExitStatus.dataError
            case .notFound: return ExitStatus.unavailable
            }
        case .mirror(let error):
            return ExitStatus.of(error)
        case nil:
            break
        }
        if !summary.unresolvableHosts.isEmpty { return ExitStatus.unavailable }
        if filesFailed { return ExitStatus.someFilesFailed }
        if summary.deferred > 0 { return ExitStatus.tryLater }
        if !summary.isComplete && stop != .deadline { return ExitStatus.someFilesFailed }
        return 0
    }

    /// Prints the problems, and the summary unless quiet and all went well.
    /// Logs what went wrong and, unless `quiet` (or `toStandardOutput` is false: a dry run's
    /// standard output in JSON is its files alone), prints the summary line on standard output.
    static func print(
        _ summary: MirrorSummary, label: String, quiet: Bool, stop: Interruption.Stop?, logger: Logger, toStandardOutput: Bool = true
    ) {
        let quiet = quiet || !toStandardOutput
        // A source that does not exist is said in one line: there is nothing to sum up.
        if let reason = summary.stoppedBy, reason.namesNoSource {
            logger.error("\(reason)")
            return
        }
        for problem in summary.problems { logger.error("\(problem)") }
        if !quiet {
            for release in summary.skippedReleases { Console.print("\(label): \(release)") }
        }
        for album in summary.removedAlbums { logger.warning("album \(album) is gone from Imgur; it will not be asked for again") }

        if summary.deferred > 0 {
            // One line per host, not one per file: the files are left for the next run.
            for verdict in summary.unavailableHosts {
                let left = summary.deferredByHost[verdict.host, default: 0]
                let files = "\(left) \(left == 1 ? "file" : "files")"
                if summary.unresolvableHosts.contains(verdict.host) {
                    logger.error("cannot resolve \(verdict.host), and no file of this mirror ever came from it (a typo in --media-base or the URL?); \(files) not fetched")
                } else {
                    logger.error("\(verdict): stopping; \(files) left for the next run")
                }
            }
        }
        // A spent budget is the plan on a large tag; anything else that stopped the listing is a fault.
        switch summary.stoppedBy {
        case .listing where summary.stoppedByTheBudget: logger.warning("\(summary.stoppedBy!)")
        case .mirror(let error): logger.error("run stopped: \(error)")
        case .listing: logger.error(summary.wanted > 0 ? "listing stopped early: \(summary.stoppedBy!)" : "\(summary.stoppedBy!)")
        case nil: break
        }
        if case .signal = stop {
            if toStandardOutput, !quiet || !summary.failures.isEmpty { Console.print("\(label): \(summary.line)") }
            logger.warning("interrupted: partial downloads are kept and the next run resumes them")
            return
        }
        // A spent API budget is the plan on a large tag, not news for cron mail: its 75 says "later".
        let faultFree = summary.failures.isEmpty && summary.problems.isEmpty && summary.deferred == 0
            && summary.stoppedOnlyByTheBudget
        let wellEnough = summary.isComplete || (faultFree && (stop == .deadline || summary.stoppedByTheBudget))
        if toStandardOutput, !quiet || !wellEnough {
            let deadline = stop == .deadline ? "; stopped at the --max-duration deadline" : ""
            Console.print("\(label): \(summary.line)\(deadline)")
        }
        if !quiet, !summary.removed.isEmpty {
            // Named once, at the end, by the run that found them gone: later runs do not ask again.
            Console.print("\(label): removed upstream, not asked for again: \(summary.removed.joined(separator: ", "))")
        }
    }
}
