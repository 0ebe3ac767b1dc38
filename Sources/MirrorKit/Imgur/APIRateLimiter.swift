import Foundation

/// Keeps the crawler inside Imgur's API budget.
///
/// Imgur allows about 500 requests an hour per user (IP) and 12,500 a day per application, and
/// blocks an application that hits the daily limit five times in a month. So the limiter reads the
/// `X-RateLimit-*` headers of every answer and stops issuing calls while `reserve` calls are still
/// left, waiting for the reset when that is near enough and giving up otherwise, so that a later
/// run can carry on. It also spaces calls to an optional maximum rate.
actor APIRateLimiter {
    struct Settings: Sendable, Equatable {
        /// Most API calls per second; nil for no spacing.
        var maxRequestsPerSecond: Double?
        /// Calls kept in hand: the limiter stops before the budget falls below this.
        var reserve: Int = 5
        /// The longest the crawler may wait for a budget to reset or a server to recover.
        var maxWait: Duration = .seconds(300)
    }

    let settings: Settings
    private var userRemaining: Int?
    private var clientRemaining: Int?
    private var userResetAt: ContinuousClock.Instant?
    private var lastRequest: ContinuousClock.Instant?

    init(settings: Settings) {
        self.settings = settings
    }

    /// Waits until another call may go out.
    ///
    /// - Throws: ``ImgurError/Kind/rateLimited`` when the budget is spent and will not come back
    ///   within ``Settings/maxWait``.
    func acquire(url: String) async throws(ImgurError) {
        if let clientRemaining, clientRemaining <= settings.reserve {
            throw ImgurError(
                kind: .rateLimited, url: url,
                message: "the application's daily budget is down to \(clientRemaining) calls", retryAfter: nil)
        }
        if let userRemaining, userRemaining <= settings.reserve {
            let wait = userResetAt.map { max($0 - .now, .zero) }
            guard let wait, wait <= settings.maxWait else {
                throw ImgurError(
                    kind: .rateLimited, url: url,
                    message: "the hourly budget is down to \(userRemaining) calls",
                    retryAfter: wait.map { Int($0.components.seconds) })
            }
            try await pause(for: wait, url: url)
            self.userRemaining = nil
        }
        if let rate = settings.maxRequestsPerSecond, rate > 0, let lastRequest {
            let next = lastRequest + .seconds(1 / rate)
            if next > .now { try await pause(for: next - .now, url: url) }
        }
        lastRequest = .now
    }

    /// Takes in the budget an answer reports. Header names vary in case between captures;
    /// `UserReset` is documented as an epoch time but sent as seconds until the reset.
    func record(_ headers: HTTPHeaders) {
        if let value = headers["X-RateLimit-UserRemaining"].flatMap({ Int($0) }) { userRemaining = value }
        if let value = headers["X-RateLimit-ClientRemaining"].flatMap({ Int($0) }) { clientRemaining = value }
        if let reset = headers["X-RateLimit-UserReset"].flatMap({ Int64($0) }) {
            userResetAt = .now + Self.secondsUntilReset(reset, now: Date())
        }
    }

    /// The wait until the user budget resets, when one is known and the budget is spent.
    func waitForUserReset() -> Duration? {
        guard let userRemaining, userRemaining <= 0, let userResetAt else { return nil }
        return max(userResetAt - .now, .zero)
    }

    /// Values below 10⁹ are seconds from now; larger ones are a Unix time.
    static func secondsUntilReset(_ value: Int64, now: Date) -> Duration {
        guard value >= 1_000_000_000 else { return .seconds(max(value, 0)) }
        return .seconds(max(value - Int64(now.timeIntervalSince1970), 0))
    }

    private func pause(for duration: Duration, url: String) async throws(ImgurError) {
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw ImgurError(kind: .unreachable, url: url, message: "cancelled")
        }
    }
}
