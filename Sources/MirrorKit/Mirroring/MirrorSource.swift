import Synchronization

/// Where a run's files come from: a tag, an album, a post, a feed. A source reads its listing and
/// hands each find to the driver through a ``SourceSink``; it never touches the mirror's files.
/// Adding a kind of source is one new type conforming to this.
package protocol MirrorSource: Sendable {
    /// How the summary line, `mirror status` and the run records name it: `tag cats`,
    /// `album Ef1gH`, `feed https://…`.
    var name: String { get }
    /// Reads what this run may of the listing and submits its files to `sink` as they are found;
    /// returns what the listing came to. Cancelling stops it.
    func list(into sink: SourceSink) async -> SourceListing
}

/// What a source's listing came to, besides the files it submitted.
package struct SourceListing: Sendable {
    /// Parts of the listing that could not be read; the source went on without them.
    var problems: [String] = []
    /// Albums the API no longer has: reported once.
    var removedAlbums: [String] = []
    /// New releases that `skip-if-exists` left alone, one line each.
    var skippedReleases: [String] = []
    /// What stopped the listing early, if anything did.
    var stoppedBy: RunStopReason?
    /// Where a paged listing's crawl stands after this run.
    var listing: ListingProgress?
    /// The source's groups of files, marked done in batches: flushed once every file has settled.
    var groups: ImageCompletion?

    init() {}
}

/// The driver's side of a source's run: where the source submits jobs, learns whether to stop, and
/// reports problems. One per source per run.
package final class SourceSink: Sendable {
    let name: String
    let runner: JobRunner
    let session: JobSession
    /// Writes what the API or feed says of each file, when the run keeps metadata.
    let sidecars: MetadataSidecars?
    private let problems = Mutex<[String]>([])
    private let leftOut = Atomic<Int>(0)

    init(name: String, runner: JobRunner, session: JobSession, sidecars: MetadataSidecars?) {
        self.name = name
        self.runner = runner
        self.session = session
        self.sidecars = sidecars
    }

    /// Where the mirror's records, cursors and crawl are kept.
    var store: any MirrorStore { runner.state }
    /// Tells the run's observer (the terminal, `status.json`) what the source is doing.
    func publish(_ event: RunEvent) {
        runner.observer.observe(event)
    }
    /// How this worker shares the mirror; nil when it has the directory to itself.
    var coordinator: (any WorkCoordinator)? { runner.coordinator }

    /// A job's outcome stopped the run (a full disk): submit nothing more.
    var isHalted: Bool { session.isHalted }

    /// The listing should stop: the run halted, or a media host was given up for the run (what
    /// the listing would find could not be fetched).
    var shouldStop: Bool { session.isHalted || !runner.health.verdicts.isEmpty }

    /// Stops the run for an error of the mirror's or the disk's (see ``JobSession/halt(_:)``).
    func halt(_ error: MirrorError) {
        session.halt(error)
    }

    /// Whether the mirror holds a file at `path` (a name relative to the mirror's root).
    func holds(_ path: String) throws(MirrorError) -> Bool {
        try runner.directory.fileExists(path)
    }

    /// Something of the listing that could not be used; reported at the end, and the run exits 1.
    func report(_ problem: String) {
        problems.withLock { $0.append(problem) }
    }

    var reportedProblems: [String] { problems.withLock { $0 } }

    /// `files` found this run that the filters (`--filter`, `--since`, `--until`) leave out.
    func leaveOut(_ files: Int) {
        leftOut.add(files, ordering: .relaxed)
    }

    var filesLeftOut: Int { leftOut.load(ordering: .relaxed) }

    /// Mirrors `job` once the session's window has room; `then` hears its outcome.
    func submit(_ job: MirrorJob, forced: Bool, then: (@Sendable (JobRunner.Outcome) async -> Void)? = nil) async {
        await session.submit(job, forced: forced, then: then)
    }

    /// A group of files to mark done together once all have settled (an image's thumbnail and
    /// full-size file), in batches, after their names are durable.
    func groups(
        batchSize: Int = 64, marked: @escaping @Sendable ([String]) -> Void = { _ in },
        unsettled: @escaping @Sendable (String, JobRunner.Outcome) async -> Void = { _, _ in }
    ) -> ImageCompletion {
        let runner = runner
        return ImageCompletion(
            store: runner.state, session: session, batchSize: batchSize,
            beforeMarking: { () throws(MirrorError) in
                // A group marked done is not looked at again: its files' names must be on disk first.
                try await runner.syncDirectories()
            },
            marked: marked, unsettled: unsettled)
    }

    /// Asks after the files this source mirrored before and has not listed this run: in
    /// `new-file` mode every one, in `skip-if-exists` mode those gone from the disk that
    /// `restoring` says the source still makes (a thumbnail deleted after `--no-previews` stays
    /// deleted). Files recorded before sources were, in `folders`, are taken for this source's.
    func revalidateTheRest(claiming folders: [String], restoring: @escaping @Sendable (String) -> Bool = { _ in true }) async {
        if runner.mode == .newFile { publish(.phase(.revalidating)) }
        await runner.revalidateTheRest(in: session, claiming: folders, restoring: restoring)
    }
}
