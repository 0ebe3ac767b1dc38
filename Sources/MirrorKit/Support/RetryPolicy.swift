/// How often and how long to try again after a failure that may pass: exponential backoff with
/// jitter, bounded both in attempts and in total time spent waiting.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration
    /// Waiting beyond this in total gives up, whatever attempts remain.
    public var maxTotalWait: Duration

    public init(
        maxAttempts: Int = 6, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60),
        maxTotalWait: Duration = .seconds(300)
    ) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxTotalWait = maxTotalWait
    }

    /// The wait before attempt `attempt + 1` (attempts count from 1): `base × 2^(attempt−1)`,
    /// capped, then jittered to 50–100 % so that many clients do not retry in step. A server's
    /// `Retry-After` is honoured when it asks for longer.
    public func delay(afterAttempt attempt: Int, retryAfter: Duration? = nil) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let backoff = min(baseDelay * (1 << exponent), maxDelay)
        let jittered = backoff * Double.random(in: 0.5...1.0)
        guard let retryAfter else { return jittered }
        return max(jittered, retryAfter)
    }
}
