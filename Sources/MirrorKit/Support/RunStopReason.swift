/// Why a run stopped short of reading a source's whole listing: the listing's fault, or the
/// mirror's. Whatever turns it into an exit status covers every case.
package enum RunStopReason: Error, Sendable, CustomStringConvertible {
    /// The source's API or feed: its budget spent, a refusal, no answer, data of the wrong shape.
    case listing(ListingFailure)
    /// The mirror as a whole: its directory, its state database, the disk.
    case mirror(MirrorError)

    var listingFailure: ListingFailure? {
        if case .listing(let failure) = self { failure } else { nil }
    }

    var mirrorError: MirrorError? {
        if case .mirror(let error) = self { error } else { nil }
    }

    /// The source does not exist: nothing was or will be mirrored from it.
    package var namesNoSource: Bool {
        listingFailure?.kind == .notFound
    }

    package var description: String {
        switch self {
        case .listing(let failure): failure.description
        case .mirror(let error): error.description
        }
    }
}

/// A source's listing could not be read (all of it), told apart as the exit status needs it; the
/// source's own error stays inside, for its words and for tests.
package struct ListingFailure: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// The API budget is spent, or the API limits every call: the plan on a large listing,
        /// not a fault; a later run carries on.
        case budget
        /// Not now (one call kept failing with a status worth waiting out): a later run carries on.
        case tryLater
        /// Not reachable, or it refused (a status that waiting will not change).
        case unavailable
        /// It answered with data of the wrong shape.
        case badData
        /// There is no such source (a tag the API does not know): a typo, most likely.
        case notFound
    }

    package var kind: Kind
    /// The source's own error (an ``ImgurError``, a ``FeedError``).
    let underlying: any Error & Sendable & CustomStringConvertible

    init(_ kind: Kind, _ underlying: any Error & Sendable & CustomStringConvertible) {
        self.kind = kind
        self.underlying = underlying
    }

    package var description: String { underlying.description }
}
