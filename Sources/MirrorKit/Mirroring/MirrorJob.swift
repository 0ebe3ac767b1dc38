/// One file to put into the mirror.
struct MirrorJob: Sendable {
    var url: String
    /// Where the file goes; a new version of it goes beside it (`name(1).ext`).
    var relativePath: String
    var expectedSize: Int64?
    /// The size a feed declares for the file: what it must have when the server states none.
    var declaredSize: Int64?
    /// Other URLs of the same file, tried in turn when `url` fails.
    var mirrors: [String] = []
    /// What the file is a version of (see ``MirroredFile/item``): the URL, unless a feed entry.
    var item: String
    /// The feed entry's release, recorded with the file.
    var release: FeedRelease?
    /// Every URL of the file: the first `url`, then its mirrors.
    let sources: [String]
    /// Asked after by a `new-file` run's sweep, not listed by its source this run.
    var isSweep = false
    /// The claim the file is committed under, when workers share the mirror.
    var fence: CommitFence?

    /// A tag's media: the item is its URL, and a URL the host removed stays removed. A feed's
    /// entry is what the feed lists now, whatever its URL once answered.
    var isMedia: Bool { item == url && mirrors.isEmpty }

    init(
        url: String, relativePath: String, expectedSize: Int64? = nil, mirrors: [String] = [], item: String? = nil,
        release: FeedRelease? = nil
    ) {
        self.url = url
        self.relativePath = relativePath
        self.expectedSize = expectedSize
        self.mirrors = mirrors
        self.item = item ?? url
        self.release = release
        sources = [url] + mirrors
    }
}

/// A mirror several workers share: the state they keep together, how they divide the work, and
/// the connections to one media host all of them may have at once.
package struct Sharing: Sendable {
    var state: any MirrorStore
    var coordinator: any WorkCoordinator
    var maxPerHost: Int
    /// Whether this worker's leases are known to hold: partials are touched only then.
    let leases: LeaseFreshness

    init(state: any MirrorStore, coordinator: any WorkCoordinator, maxPerHost: Int, clock: any RunClock = SystemClock()) {
        self.state = state
        self.coordinator = coordinator
        self.maxPerHost = maxPerHost
        leases = LeaseFreshness(leaseDuration: coordinator.leaseDuration, clock: clock)
    }

    /// Workers sharing the mirror through `database`.
    package init(_ database: SharedDatabase, maxPerHost: Int) {
        self.init(state: database.state, coordinator: database.coordinator, maxPerHost: maxPerHost)
    }
}
