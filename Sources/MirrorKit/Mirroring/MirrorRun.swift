/// A mirror a command runs: a tag's or a feed's. The command's lifecycle (lock, signals, report,
/// metrics) is the same for both.
package protocol MirrorRun: Sendable {
    /// What is mirrored, as `mirror status` names it: `tag cats`, `feed https://…`.
    var source: String { get }
    /// What the run has done so far.
    var progress: RunProgress { get }
    /// Where the mirror's records, cursor and runs are kept.
    var state: any MirrorState { get }
    /// Mirrors what this run can; cancelling stops it, keeping partial downloads.
    func run() async -> MirrorSummary
}

extension TagMirror: MirrorRun {}
extension FeedMirror: MirrorRun {}
