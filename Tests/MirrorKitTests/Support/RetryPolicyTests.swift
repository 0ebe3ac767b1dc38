import Foundation
import Testing
@testable import MirrorKit

@Suite("One retry policy: statuses, Retry-After, giving up", .timeLimit(.minutes(1)))
struct RetryPolicyTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func retryAfterIsReadInBothForms() {
        #expect(RetryPolicy.retryAfter("120", now: now) == .seconds(120))
        #expect(RetryPolicy.retryAfter(" 0 ", now: now) == .zero)
        // RFC 9110 §10.2.3: an HTTP-date, in the preferred form and the two obsolete ones.
        let later = HTTPDate.format(now.addingTimeInterval(90))
        #expect(RetryPolicy.retryAfter(later, now: now) == .seconds(90))
        #expect(RetryPolicy.retryAfter("Tuesday, 14-Nov-23 22:14:50 GMT", now: now) == .seconds(90))
        #expect(RetryPolicy.retryAfter("Tue Nov 14 22:14:50 2023", now: now) == .seconds(90))
        // A date in the past means now; nonsense and negatives are no answer; huge is capped.
        #expect(RetryPolicy.retryAfter(HTTPDate.format(now.addingTimeInterval(-60)), now: now) == .zero)
        #expect(RetryPolicy.retryAfter("soon", now: now) == nil)
        #expect(RetryPolicy.retryAfter("-5", now: now) == nil)
        #expect(RetryPolicy.retryAfter(nil, now: now) == nil)
        #expect(RetryPolicy.retryAfter("99999999999999999999999", now: now) == RetryPolicy.longestRetryAfter)
    }

    @Test func theHandReadFixdateAgreesWithTheFormatter() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var seconds = -2_208_988_800.0  // 1900
        while seconds < 4_102_444_800 {  // 2100
            let text = formatter.string(from: Date(timeIntervalSince1970: seconds))
            #expect(HTTPDate.parseFixdate(text) == formatter.date(from: text), "\(text)")
            seconds += 7_777_777.7
        }
        #expect(HTTPDate.parseFixdate("Thu, 29 Feb 2024 23:59:59 GMT") == Date(timeIntervalSince1970: 1_709_251_199))
        for bad in ["Fri, 30 Feb 2024 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                    "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, +6 Nov 1994 08:49:37 GMT",
                    "Sun, 06 Nov -994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:60 GMT", "Sun, 06 Nov 1994 08:-9:37 GMT", "",
                    "Sun, 06 Nov 1994 08:49::37 GMT", "Sun, 06 Nov 1994 :08:49:37 GMT"] {
            #expect(HTTPDate.parseFixdate(bad) == nil, "\(bad)")
        }
    }

    /// Found by the fuzzer: corelibs Foundation's DateFormatter traps ("Incorrect range") on some
    /// text whose characters and UTF-16 units differ in number, and a server chooses what its
    /// Last-Modified and Retry-After hold. In a child process, so that a trap fails this test
    /// instead of ending the whole run.
    @Test func aDateWithNonASCIITextIsRefusedNotACrash() async {
        await #expect(processExitsWith: .success) {
            for text in ["Sun, 06 Nov 1994 0\u{A3F}8:49:37 GMT", "Sun Nov  6 08:49:37 1994\u{301}", "Sun, 06 Nov 1994 08:49:37 GMT\r\n"] {
                #expect(HTTPDate.parse(text) == nil, "\(text.debugDescription)")
                #expect(RetryPolicy.retryAfter(text) == nil, "\(text.debugDescription)")
            }
        }
    }

    @Test func theSameStatusesAreRetriedEverywhere() {
        for status in [408, 429, 500, 502, 503, 504, 599] { #expect(RetryPolicy.isRetryable(status: status)) }
        for status in [200, 301, 400, 401, 403, 404, 410, 416] { #expect(!RetryPolicy.isRetryable(status: status)) }
    }

    private struct Failure: Error, Equatable {
        var attempt: Int
        var gaveUp: RetryPolicy.GiveUp?
    }

    @Test func runStopsAtTheAttemptsAndSaysWhy() async {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(2))
        var attempts = 0
        let clock = TestClock()
        let error = await #expect(throws: Failure.self) {
            try await policy.run(clock: clock, giveUp: { failure, why in Failure(attempt: failure.attempt, gaveUp: why) }) { number throws(Failure) -> RetryPolicy.Step<Int, Failure> in
                attempts = number
                return .retry(Failure(attempt: number), retryAfter: nil)
            }
        }
        #expect(attempts == 3)
        #expect(error == Failure(attempt: 3, gaveUp: .attemptsExhausted))
        #expect(clock.waited.count == 2, "no wait after the last attempt")
    }

    @Test func aServerAskingForTooLongGivesUpAtOnceWithoutSleeping() async {
        let policy = RetryPolicy(maxAttempts: 10, baseDelay: .milliseconds(1))
        let clock = TestClock()
        let error = await #expect(throws: Failure.self) {
            try await policy.run(
                maxSingleWait: .seconds(5), clock: clock,
                giveUp: { failure, why in Failure(attempt: failure.attempt, gaveUp: why) }
            ) { number throws(Failure) -> RetryPolicy.Step<Int, Failure> in
                .retry(Failure(attempt: number), retryAfter: .seconds(3600))
            }
        }
        #expect(error?.attempt == 1)
        if case .waitTooLong(let wait)? = error?.gaveUp { #expect(wait == .seconds(3600)) } else { Issue.record("\(String(describing: error))") }
        #expect(clock.waited.isEmpty)
    }

    @Test(arguments: [(1.0, 3), (0.5, 6)])
    func theTotalWaitIsBounded(jitter: Double, attempts: Int) async {
        let policy = RetryPolicy(maxAttempts: 100, baseDelay: .seconds(20), maxDelay: .seconds(20), maxTotalWait: .seconds(50))
        let clock = TestClock()
        let error = await #expect(throws: Failure.self) {
            try await policy.run(clock: clock, jitter: { _ in jitter }, giveUp: { failure, why in Failure(attempt: failure.attempt, gaveUp: why) }) { number throws(Failure) -> RetryPolicy.Step<Int, Failure> in
                .retry(Failure(attempt: number), retryAfter: nil)
            }
        }
        // Waits of 20 s (no jitter) fit twice in 50 s; of 10 s (the most jitter), five times.
        #expect(error?.attempt == attempts)
        #expect(clock.waited == Array(repeating: .seconds(20 * jitter), count: attempts - 1))
        if case .totalWaitExceeded? = error?.gaveUp {} else { Issue.record("\(String(describing: error))") }
    }

    @Test func theBackoffDoublesToItsCapAndAServersWaitWins() {
        let policy = RetryPolicy(baseDelay: .seconds(1), maxDelay: .seconds(8))
        let waits = (1...6).map { policy.delay(afterAttempt: $0, jitter: { $0.upperBound }) }
        #expect(waits == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8)])
        #expect(policy.delay(afterAttempt: 1, jitter: { $0.lowerBound }) == .milliseconds(500))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(30), jitter: { $0.upperBound }) == .seconds(30))
    }

    @Test func aSuccessAfterFailuresIsReturned() async throws {
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(1))
        let value = try await policy.run { number throws(Failure) -> RetryPolicy.Step<String, Failure> in
            number < 3 ? .retry(Failure(attempt: number), retryAfter: nil) : .success("third")
        }
        #expect(value == "third")
    }

    @Test func durationsAreReadAsPeopleWriteThem() {
        #expect(DurationText.parse("50m") == .seconds(3000))
        #expect(DurationText.parse("90s") == .seconds(90))
        #expect(DurationText.parse("1h30m") == .seconds(5400))
        #expect(DurationText.parse("2H") == .seconds(7200))
        #expect(DurationText.parse("45") == .seconds(45))
        for bad in ["", "0", "0m", "m", "5x", "1.5h", "-3m", "10m5", "999999999999999999h"] {
            #expect(DurationText.parse(bad) == nil, "\(bad)")
        }
    }
}
