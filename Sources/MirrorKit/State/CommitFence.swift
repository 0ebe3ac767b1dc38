import Synchronization

/// What a file's commit must still hold for the file to be named, when workers share a mirror:
/// the claim its worker took on the work (an image) and the fencing token of that take.
///
/// Every take of a claim gets a new token from the shared state, so a worker that was stopped for
/// longer than its lease (SIGSTOP, a paused VM) and then let go finds its token outdated when it
/// comes to commit, even if the claim has come back to it since, and names nothing. The check
/// and the file's record are one transaction that holds the claim's row meanwhile (see
/// ``MirrorStore/recordNamed(fencedBy:_:)``): no worker takes the claim over between them.
package final class CommitFence: Sendable {
    /// What is claimed: an image's id.
    package let claim: String
    package let token: Int64
    /// The worker that took it.
    package let holder: String
    /// The claim was taken from a worker whose lease ran out, and which may still be alive (only
    /// stopped) with a partial of the image open: the partial is resumed from a copy of its own.
    package let takenOver: Bool
    private let lost = Atomic<Bool>(false)

    package init(claim: String, token: Int64, holder: String, takenOver: Bool) {
        self.claim = claim
        self.token = token
        self.holder = holder
        self.takenOver = takenOver
    }

    /// Says another worker holds the claim now: the jobs under it end as handed over, not as
    /// interrupted or failed.
    func markLost() {
        lost.store(true, ordering: .relaxed)
    }

    var isLost: Bool { lost.load(ordering: .relaxed) }
}

/// An image a worker claimed from the shared queue, and the fence its files commit under.
package struct ClaimedImage: Sendable {
    package var image: FoundImage
    package var fence: CommitFence

    package init(image: FoundImage, fence: CommitFence) {
        self.image = image
        self.fence = fence
    }
}
