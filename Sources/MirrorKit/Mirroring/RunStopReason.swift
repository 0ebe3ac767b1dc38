/// Why a run stopped short of reading its whole listing or feed: one of three kinds, so that
/// whatever turns it into an exit status covers every case.
package enum RunStopReason: Error, Sendable, CustomStringConvertible {
    /// The Imgur API: its budget spent, a status, no answer, or a body of the wrong shape.
    case api(ImgurError)
    /// The feed could not be fetched, or was not a feed.
    case feed(FeedError)
    /// The mirror as a whole: its directory, its state database, the disk.
    case mirror(MirrorError)

    var imgurError: ImgurError? {
        if case .api(let error) = self { error } else { nil }
    }

    var feedError: FeedError? {
        if case .feed(let error) = self { error } else { nil }
    }

    var mirrorError: MirrorError? {
        if case .mirror(let error) = self { error } else { nil }
    }

    package var description: String {
        switch self {
        case .api(let error): error.description
        case .feed(let error): error.description
        case .mirror(let error): error.description
        }
    }
}
