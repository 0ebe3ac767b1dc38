import FoundationEssentials

/// Keeps the crawler inside Imgur's API budget.
///
/// Imgur allows about 500 requests an hour per user (IP) and 12,500 a day per application, and
/// blocks an application that hits the daily limit five times in a month. So the limiter reads the
/// `X-RateLimit-*` headers of every answer and stops issuing calls while `reserve` calls are still
/// left, waiting for the reset when that is near enough and giving up otherwise, so that a later
/// run can carry on. A run starts from the budget the last run saw, while its reset has not
/// passed, so a spent budget costs no call to find out. It also spaces calls to an optional
/// maximum rate.
actor APIRateLimiter {
    struct Settings: Sendable, Equatable {
        /// Most API calls per second; nil for no spacing.
        var maxRequestsPerSecond: Double?
        /// Calls kept in hand: the limiter stops before the budget falls below this.
        var reserve: Int = 5
        /// The longest the crawler may wait for a budget to reset or a server to recover.
        var maxWait: Duration = ImgurClient.Politeness.defaultMaxWait
    }

    let settings: Settings
    private let clock: any RunClock
    private var budget: APIBudget
    /// When the last call went out, on the clock that never jumps.
    private var lastRequest: Duration?
    private(set) var callsMade = 0

    /// The fingerprint of the Client-ID the calls are made with (nil: none known).
    private let application: String?

    init(
        settings: Settings, startingFrom known: APIBudget? = nil, application: String? = nil, clock: any RunClock = SystemClock()
    ) {
        self.settings = settings
        self.clock = clock
        self.application = application
        budget = known?.forApplication(application).stillValid(at: clock.now) ?? APIBudget(observedAt: clock.now)
    }

    /// What tells one Client-ID's saved daily budget from another's: 32 bits of an MD5 of the
    /// id, too few to find the id from, enough that two ids of one user differ. Nil if no digest.
    static func fingerprint(ofClientID clientID: String) -> String? {
        (try? Digest.md5Hex(Array("mirror Client-ID \(clientID)".utf8))).map { String($0.prefix(8)) }
    }

    /// The budget as last reported.
    var current: APIBudget { budget }

    /// Starts from what an earlier run (or another worker on the same address) saw, unless this
    /// one has heard fresher figures.
    func adopt(_ known: APIBudget) {
        let unknown = budget.userRemaining == nil && budget.clientRemaining == nil
        guard unknown || known.observedAt > budget.observedAt else { return }
        budget = known.forApplication(application).stillValid(at: clock.now)
    }

    /// Calls that may still be made before the reset, keeping the reserve; nil when unknown.
    var callsLeft: Int? {
        let left = [budget.userRemaining, budget.clientRemaining].compactMap { $0 }.min()
        return left.map { max($0 - settings.reserve, 0) }
    }

    /// Waits until another call may go out.
    ///
    /// - Throws: ``ImgurError/Kind/rateLimited`` when the budget is spent and will not come back
    ///   within ``Settings/maxWait``.
    func acquire(url: String) async throws(ImgurError) {
        budget = budget.stillValid(at: clock.now)
        if let paused = budget.pausedUntil {
            let wait = Duration.seconds(seconds(until: paused))
            guard wait <= settings.maxWait else {
                throw ImgurError(
                    kind: .rateLimited, url: url, message: "the API asked for a pause of calls",
                    retryAfter: Int(wait.components.seconds))
            }
            try await pause(for: wait, url: url)
            budget.pausedUntil = nil
        }
        if let clientRemaining = budget.clientRemaining, clientRemaining <= settings.reserve {
            throw ImgurError(
                kind: .rateLimited, url: url,
                message: "the application's daily budget is down to \(clientRemaining) calls",
                retryAfter: budget.clientResetAt.map { seconds(until: $0) })
        }
        if let userRemaining = budget.userRemaining, userRemaining <= settings.reserve {
            let wait = budget.userResetAt.map { Duration.seconds(seconds(until: $0)) }
            guard let wait, wait <= settings.maxWait else {
                throw ImgurError(
                    kind: .rateLimited, url: url,
                    message: "the hourly budget is down to \(userRemaining) calls",
                    retryAfter: wait.map { Int($0.components.seconds) })
            }
            try await pause(for: wait, url: url)
            budget.userRemaining = nil
        }
        if let rate = settings.maxRequestsPerSecond, rate > 0, let lastRequest {
            let next = lastRequest + .seconds(1 / rate)
            let now = clock.elapsed
            if next > now { try await pause(for: next - now, url: url) }
        }
        lastRequest = clock.elapsed
        callsMade += 1
    }

    /// Takes in the budget an answer reports. Header names vary in case between captures;
    /// `UserReset` is documented as an epoch time but sent as seconds until the reset.
    func record(_ headers: HTTPHeaders) {
        let now = clock.now
        var seen = false
        if let value = headers["X-RateLimit-UserRemaining"].flatMap({ Int($0) }) { budget.userRemaining = value; seen = true }
        if let value = headers["X-RateLimit-UserLimit"].flatMap({ Int($0) }) { budget.userLimit = value }
        if let value = headers["X-RateLimit-ClientRemaining"].flatMap({ Int($0) }) {
            budget.clientRemaining = value
            budget.application = application
            seen = true
        }
        // The budgets are hourly and daily: a reset said to be further away is not believed, or
        // one lying answer would stop every later run, which would never ask again.
        if let reset = headers["X-RateLimit-UserReset"].flatMap({ Int64($0) }) {
            budget.userResetAt = now.addingTimeInterval(min(Self.secondsUntilReset(reset, now: now), 3600))
        }
        if let reset = headers["X-RateLimit-ClientReset"].flatMap({ Int64($0) }) {
            budget.clientResetAt = now.addingTimeInterval(min(Self.secondsUntilReset(reset, now: now), 86_400))
        }
        if seen { budget.observedAt = now }
    }

    /// Remembers that the API refused calls for `seconds` more (or, when it did not say how long,
    /// for ``pauseWhenUnsaid``): the rest of the run and later runs ask nothing until then.
    func pause(forSeconds seconds: Int?) {
        let seconds = TimeInterval(min(seconds ?? Self.pauseWhenUnsaid, 86_400))
        guard seconds > 0 else { return }
        let until = clock.now.addingTimeInterval(seconds)
        if budget.pausedUntil.map({ $0 < until }) ?? true { budget.pausedUntil = until }
        budget.observedAt = clock.now
    }

    /// A refusal that names no time: long enough that the run's other sources do not each spend
    /// their retries on it, short enough that an hourly run is not held back by it.
    static let pauseWhenUnsaid = 15 * 60

    /// The wait until the user budget resets, when one is known and the budget is spent.
    func waitForUserReset() -> Duration? {
        guard let userRemaining = budget.userRemaining, userRemaining <= 0, let reset = budget.userResetAt else { return nil }
        return .seconds(seconds(until: reset))
    }

    /// Values below 10⁹ are seconds from now; larger ones are a Unix time.
    static func secondsUntilReset(_ value: Int64, now: Date) -> TimeInterval {
        guard value >= 1_000_000_000 else { return TimeInterval(max(value, 0)) }
        return TimeInterval(max(value - Int64(now.timeIntervalSince1970), 0))
    }

    private func seconds(until date: Date) -> Int {
        max(Int(date.timeIntervalSince(clock.now).rounded(.up)), 0)
    }

    private func pause(for duration: Duration, url: String) async throws(ImgurError) {
        do {
            try await clock.sleep(for: duration)
        } catch {
            throw ImgurError(kind: .unreachable, url: url, message: "cancelled")
        }
    }
}
