import FoundationEssentials

/// How often and how long to try again after a failure that may pass: exponential backoff with
/// jitter, bounded both in attempts and in total time spent waiting.
///
/// It is the one retry loop of the tool: file downloads, Imgur API calls and feed fetches all go
/// through ``run(maxSingleWait:giveUp:onRetry:_:)``, so they agree on which statuses are worth
/// another try, on how `Retry-After` is read, and on when to give up.
package struct RetryPolicy: Sendable, Equatable {
    /// Attempts per file, the first included, unless told otherwise.
    static let defaultAttempts = 6

    /// Attempts in all, the first included.
    var maxAttempts: Int
    var baseDelay: Duration
    var maxDelay: Duration
    /// Waiting beyond this in total gives up, whatever attempts remain.
    var maxTotalWait: Duration

    init(
        maxAttempts: Int = RetryPolicy.defaultAttempts, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60),
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
    /// `jitter` draws the fraction of the backoff to wait, from 0.5...1.0 (random, unless a test says).
    func delay(
        afterAttempt attempt: Int, retryAfter: Duration? = nil,
        jitter: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let backoff = min(baseDelay * (1 << exponent), maxDelay)
        let jittered = backoff * min(max(jitter(0.5...1.0), 0.5), 1.0)
        guard let retryAfter else { return jittered }
        return max(jittered, retryAfter)
    }

    // MARK: - What is worth another try

    /// Statuses that say "not now" rather than "never": 408, 429 and every 5xx.
    static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || (500...599).contains(status)
    }

    /// Statuses by which a server says it is overloaded or limiting this client.
    static func isThrottling(status: Int) -> Bool {
        status == 429 || status == 503
    }

    /// The longest `Retry-After` taken at its word; a larger one is read as this.
    static let longestRetryAfter: Duration = .seconds(24 * 3600)

    /// Reads `Retry-After` in both of its forms (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date
    /// (a date in the past means "now"). Nil when absent or unreadable.
    static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let text = value?.trimming(.spaces), !text.isEmpty else { return nil }
        if text.allSatisfy(\.isASCIIDigit) {
            // Digits only, but possibly more than fit in an Int: anything that long is "very long".
            guard let seconds = Int(text) else { return longestRetryAfter }
            return min(.seconds(seconds), longestRetryAfter)
        }
        guard let date = HTTPDate.parse(text) else { return nil }
        let seconds = max(date.timeIntervalSince(now), 0)
        return min(.milliseconds(Int64((seconds * 1000).rounded(.up))), longestRetryAfter)
    }

    // MARK: - The loop

    /// What one attempt came to.
    enum Step<Value: Sendable, Failure: Error>: Sendable {
        case success(Value)
        /// A failure that may pass, with the wait the server asked for, if it asked.
        case retry(Failure, retryAfter: Duration?)
    }

    /// Why ``run(maxSingleWait:giveUp:onRetry:_:)`` stopped trying.
    enum GiveUp: Sendable, Equatable {
        /// Every attempt was used.
        case attemptsExhausted
        /// The next wait is longer than the caller allows for one wait.
        case waitTooLong(Duration)
        /// The next wait would take the waiting past ``maxTotalWait``.
        case totalWaitExceeded(Duration)
        /// The task was cancelled while waiting.
        case cancelled
    }

    /// Runs `attempt` (given its number, from 1) until it succeeds, throws, or the policy gives up.
    ///
    /// - Parameters:
    ///   - maxSingleWait: the longest wait a server may ask for (`Retry-After`, a budget reset); a
    ///     longer one gives up at once with ``GiveUp/waitTooLong(_:)`` instead of sleeping. The
    ///     policy's own backoff is not held to it.
    ///   - giveUp: turns the last failure and the reason into the error thrown.
    ///   - onRetry: hears each failure and the wait before the next attempt.
    ///   - clock: what waits between attempts; `jitter` draws each wait's fraction (see ``delay(afterAttempt:retryAfter:jitter:)``).
    func run<Value: Sendable, Failure: Error>(
        maxSingleWait: Duration? = nil, clock: any RunClock = SystemClock(),
        jitter: (ClosedRange<Double>) -> Double = { Double.random(in: $0) },
        giveUp: (Failure, GiveUp) -> Failure = { failure, _ in failure },
        onRetry: (Failure, Duration) -> Void = { _, _ in },
        _ attempt: (Int) async throws(Failure) -> Step<Value, Failure>
    ) async throws(Failure) -> Value {
        var number = 0
        var waited = Duration.zero
        while true {
            number += 1
            let failure: Failure
            let retryAfter: Duration?
            switch try await attempt(number) {
            case .success(let value): return value
            case .retry(let error, let wait): (failure, retryAfter) = (error, wait)
            }
            let delay = delay(afterAttempt: number, retryAfter: retryAfter, jitter: jitter)
            if let maxSingleWait, let retryAfter, retryAfter > maxSingleWait {
                throw giveUp(failure, .waitTooLong(delay))
            }
            guard number < maxAttempts else { throw giveUp(failure, .attemptsExhausted) }
            guard waited + delay <= maxTotalWait else { throw giveUp(failure, .totalWaitExceeded(delay)) }
            onRetry(failure, delay)
            do {
                try await clock.sleep(for: delay)
            } catch {
                throw giveUp(failure, .cancelled)
            }
            waited += delay
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
