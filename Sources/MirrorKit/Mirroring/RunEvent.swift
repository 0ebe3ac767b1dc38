/// What a run reports as it goes. The driver, its job sessions and the sources publish these to
/// the run's ``RunObserver``; what shows progress (the terminal, `status.json`, the metrics file)
/// folds them into what it shows, and nothing else reaches it.
package enum RunEvent: Sendable, Equatable {
    /// The driver started on a source (`tag cats`).
    case source(String)
    case phase(RunPhase)
    /// A file was submitted: the run set out to have it.
    case fileKnown
    /// A file settled, one way or another.
    case fileSettled(FileSettlement)
    /// A paged listing is reading `page`, of about `estimatedPages`.
    case crawlPage(Int, estimatedPages: Int?)
    /// Pages of the listing read this run.
    case pagesRead(Int)
    /// API calls made this run, and how many the API says are left this hour.
    case apiCalls(made: Int, left: Int?)
}

/// How a file settled, as progress counts it.
package enum FileSettlement: Sendable, Equatable {
    case downloaded
    case failed
    case removed
    /// Present, unchanged, left for a later run or interrupted.
    case other
}

/// The stage a run is at.
package enum RunPhase: String, Sendable, Codable {
    case starting
    /// Reading a tag's listing, or asking the API for an album or post (downloads run meanwhile).
    case crawling
    /// Reading the feed.
    case readingFeed = "reading feed"
    /// The listing is read: what is left is downloads.
    case downloading
    /// `new-file`: asking after files mirrored before.
    case revalidating
    case finished
}

/// Hears a run's events. Called from any task, often: keep it cheap and never block.
package protocol RunObserver: Sendable {
    func observe(_ event: RunEvent)
}

/// An observer that hears nothing: a run nobody watches.
package struct UnobservedRun: RunObserver {
    package init() {}
    package func observe(_ event: RunEvent) {}
}
