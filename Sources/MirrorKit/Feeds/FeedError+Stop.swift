extension RunStopReason {
    /// The feed could not be fetched, or was not a feed.
    static func feed(_ error: FeedError) -> RunStopReason {
        .listing(ListingFailure(error.isFetchFailure ? .unavailable : .badData, error))
    }

    /// The feed's error, when the feed stopped the run.
    var feedError: FeedError? {
        listingFailure?.underlying as? FeedError
    }
}
