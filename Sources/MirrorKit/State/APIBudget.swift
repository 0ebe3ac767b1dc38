import FoundationEssentials

/// The API budget as the last answer stated it, kept between runs so that `mirror status` can show
/// it and the next run can plan from it.
package struct APIBudget: Sendable, Equatable, Codable {
    /// Calls left this hour for this IP (`X-RateLimit-UserRemaining`).
    package var userRemaining: Int?
    package var userLimit: Int?
    /// When the hourly budget refills.
    package var userResetAt: Date?
    /// Calls left today for the application (`X-RateLimit-ClientRemaining`).
    package var clientRemaining: Int?
    /// When the daily budget refills, if the API said.
    var clientResetAt: Date?
    /// Which application the daily figures are of: a fingerprint of its Client-ID (see
    /// ``APIRateLimiter/fingerprint(ofClientID:)``), never the id itself; nil when saved before
    /// mirror kept one. Another Client-ID has a daily budget of its own.
    var application: String?
    /// Until when the API asked for no calls at all (a 429 or "over capacity" that outlasted a
    /// run's retries): later sources of the run, and later runs, ask nothing before then.
    var pausedUntil: Date?
    /// When these figures were read.
    package var observedAt: Date

    init(
        userRemaining: Int? = nil, userLimit: Int? = nil, userResetAt: Date? = nil, clientRemaining: Int? = nil,
        clientResetAt: Date? = nil, observedAt: Date = Date()
    ) {
        self.userRemaining = userRemaining
        self.userLimit = userLimit
        self.userResetAt = userResetAt
        self.clientRemaining = clientRemaining
        self.clientResetAt = clientResetAt
        self.observedAt = observedAt
    }

    /// The figures that still hold at `now`: a budget whose reset has passed is full again, so
    /// what was left before says nothing. The daily budget's reset is not always sent
    /// (`X-RateLimit-ClientReset` is undocumented): without it, the figure holds for a day, so
    /// that the application is never run into its daily limit (five times a month blocks it).
    func stillValid(at now: Date = Date()) -> APIBudget {
        var budget = self
        if pausedUntil.map({ $0 <= now }) ?? false { budget.pausedUntil = nil }
        if userResetAt.map({ $0 <= now }) ?? true {
            budget.userRemaining = nil
            budget.userResetAt = nil
        }
        let clientValid = clientResetAt.map { $0 > now } ?? (now.timeIntervalSince(observedAt) < 24 * 3600)
        if !clientValid {
            budget.clientRemaining = nil
            budget.clientResetAt = nil
        }
        return budget
    }

    /// These figures for the application `fingerprint` names: another application's daily
    /// figures say nothing of its budget.
    func forApplication(_ fingerprint: String?) -> APIBudget {
        guard let fingerprint, let application, application != fingerprint else { return self }
        var budget = self
        budget.clientRemaining = nil
        budget.clientResetAt = nil
        budget.application = nil
        return budget
    }

    /// The same figures with every time moved by `seconds`: from one host's clock to another's
    /// (workers of a budget group keep them on the database's).
    package func shifted(by seconds: Double) -> APIBudget {
        var budget = self
        budget.userResetAt = userResetAt?.addingTimeInterval(seconds)
        budget.clientResetAt = clientResetAt?.addingTimeInterval(seconds)
        budget.pausedUntil = pausedUntil?.addingTimeInterval(seconds)
        budget.observedAt = observedAt.addingTimeInterval(seconds)
        return budget
    }
}
