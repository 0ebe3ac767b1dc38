extension RunStopReason {
    /// The Imgur API stopped the listing.
    static func api(_ error: ImgurError) -> RunStopReason {
        .listing(ListingFailure(error.listingKind, error))
    }

    /// The API's error, when the API stopped the listing.
    var imgurError: ImgurError? {
        listingFailure?.underlying as? ImgurError
    }
}

extension ImgurError {
    /// How a run that this stopped ends: a spent budget is the plan, a refusal a fault.
    var listingKind: ListingFailure.Kind {
        switch kind {
        case .malformedResponse: .badData
        case .status, .unreachable: .unavailable
        case .rateLimited: isAPIWide ? .budget : .tryLater
        }
    }
}
