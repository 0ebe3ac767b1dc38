import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

@Suite("Politeness towards the Imgur API", .timeLimit(.minutes(2)))
struct APIPolitenessTests {
    let engine = TransferEngine()

    private func client(
        _ server: FixtureServer, maxWait: Duration = .seconds(300), rate: Double? = nil
    ) -> ImgurClient {
        ImgurClient(
            apiBase: server.baseURL, clientID: "fixture", engine: engine,
            politeness: .init(
                maxRequestsPerSecond: rate, maxWait: maxWait,
                retry: RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(10))),
            logger: TestSupport.logger)
    }

    private let page0 = "/3/gallery/t/cats/time/all/0"

    @Test func stopsBeforeTheHourlyBudgetRunsOutWhenTheResetIsFarOff() async throws {
        try await TestSupport.withServer { server in
            server.setRateLimit(userRemaining: 7, userReset: 3600)
            let api = client(server)
            _ = try await api.tagPage("cats", sort: .time, window: .all, page: 0)
            _ = try await api.tagPage("cats", sort: .time, window: .all, page: 1)
            let error = await #expect(throws: ImgurError.self) {
                try await api.tagPage("cats", sort: .time, window: .all, page: 2)
            }
            #expect(error?.kind == .rateLimited)
            #expect((error?.retryAfter ?? 0) > 3000)
            // Two calls went out; the budget (5 left) was never spent to the last call.
            #expect(server.requests.count { $0.path.hasPrefix("/3/") } == 2)
        }
    }

    @Test func waitsForANearResetAndCarriesOn() async throws {
        try await TestSupport.withServer { server in
            server.setRateLimit(userRemaining: 6, userReset: 1)
            let api = client(server)
            let start = ContinuousClock.now
            _ = try await api.tagPage("cats", sort: .time, window: .all, page: 0)
            _ = try await api.tagPage("cats", sort: .time, window: .all, page: 1)
            #expect(ContinuousClock.now - start >= .milliseconds(900))
        }
    }

    @Test func a429WithAnHTTPDateRetryAfterIsWaitedOutUntilThatDate() async throws {
        try await TestSupport.withServer { server in
            let date = HTTPDate.format(Date().addingTimeInterval(2))
            server.inject(
                .imgurLegacyError(status: 429, message: "Too Many Requests", headers: ["Retry-After": date]), path: page0)
            let start = ContinuousClock.now
            let items = try await client(server).tagPage("cats", sort: .time, window: .all, page: 0)
            #expect(!items.isEmpty)
            // Seconds to the date, not the 10 ms backoff (nor a failure to read the header).
            #expect(ContinuousClock.now - start >= .milliseconds(900))
            #expect(server.requestCount(path: page0) == 2)
        }
    }

    @Test func anHTTPDateRetryAfterBeyondMaxWaitStopsWithTryLater() async throws {
        try await TestSupport.withServer { server in
            let date = HTTPDate.format(Date().addingTimeInterval(3600))
            server.inject(.respond(status: 503, headers: ["Retry-After": date], body: "{}"), path: page0)
            let error = await #expect(throws: ImgurError.self) {
                try await client(server, maxWait: .seconds(60)).tagPage("cats", sort: .time, window: .all, page: 0)
            }
            #expect(error?.kind == .rateLimited)
            #expect((3500...3600).contains(error?.retryAfter ?? 0))
            #expect(server.requestCount(path: page0) == 1)
        }
    }

    @Test func aResetFurtherAwayThanTheBudgetsWindowIsNotBelieved() async {
        let clock = TestClock()
        let limiter = APIRateLimiter(settings: .init(), clock: clock)
        let now = clock.now
        await limiter.record(HTTPHeaders([
            ("X-RateLimit-UserRemaining", "0"), ("X-RateLimit-UserReset", "4000000000"),
            ("X-RateLimit-ClientRemaining", "0"), ("X-RateLimit-ClientReset", "4000000000"),
        ]))
        let budget = await limiter.current
        #expect(budget.userResetAt.map { $0 <= now.addingTimeInterval(3600) } == true)
        #expect(budget.clientResetAt.map { $0 <= now.addingTimeInterval(86_400) } == true)
    }

    /// A worker of a budget group takes the group's figures when another worker saw them later
    /// than it saw its own, and keeps its own when they are fresher.
    @Test func aSavedBudgetIsTakenOnlyWhenFresherThanTheLimitersOwn() async {
        let clock = TestClock()
        let limiter = APIRateLimiter(settings: .init(), clock: clock)
        let now = clock.now
        await limiter.record(HTTPHeaders([("X-RateLimit-UserRemaining", "200"), ("X-RateLimit-UserReset", "1800")]))
        await limiter.adopt(APIBudget(userRemaining: 3, userResetAt: now.addingTimeInterval(1800), observedAt: now.addingTimeInterval(-60)))
        #expect(await limiter.current.userRemaining == 200)
        await limiter.adopt(APIBudget(userRemaining: 3, userResetAt: now.addingTimeInterval(1800), observedAt: now.addingTimeInterval(60)))
        #expect(await limiter.current.userRemaining == 3)
    }

    /// The daily budget is the application's: a run with another Client-ID is not stopped by what
    /// the last one's left, while the hourly one (the address's) still holds.
    @Test func aSavedDailyBudgetHoldsOnlyForTheClientIDThatSpentIt() async throws {
        let clock = TestClock()
        let spent = APIRateLimiter(settings: .init(), application: APIRateLimiter.fingerprint(ofClientID: "first-id"), clock: clock)
        await spent.record(HTTPHeaders([
            ("X-RateLimit-ClientRemaining", "2"), ("X-RateLimit-UserRemaining", "300"), ("X-RateLimit-UserReset", "1800"),
        ]))
        let saved = await spent.current
        #expect(saved.application != nil && saved.application != "first-id")
        let same = APIRateLimiter(settings: .init(), startingFrom: saved, application: APIRateLimiter.fingerprint(ofClientID: "first-id"), clock: clock)
        await #expect(throws: ImgurError.self) { try await same.acquire(url: "https://api.example/3/x") }
        let other = APIRateLimiter(settings: .init(), startingFrom: saved, application: APIRateLimiter.fingerprint(ofClientID: "second-id"), clock: clock)
        try await other.acquire(url: "https://api.example/3/x")
        #expect(await other.current.userRemaining == 300)
        // Taken from a budget group's row the same way.
        let adopting = APIRateLimiter(settings: .init(), application: APIRateLimiter.fingerprint(ofClientID: "second-id"), clock: clock)
        await adopting.adopt(saved)
        #expect(await adopting.current.clientRemaining == nil)
    }

    @Test func readsAUserResetGivenAsAnEpochTime() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(APIRateLimiter.secondsUntilReset(1_700_000_600, now: now) == 600)
        #expect(APIRateLimiter.secondsUntilReset(3047, now: now) == 3047)
        #expect(APIRateLimiter.secondsUntilReset(1_600_000_000, now: now) == 0)
    }

    @Test(arguments: [
        Fault.imgurGatewayTooManyRequests(retryAfter: 1),
        .imgurLegacyError(status: 429, message: "User request limit exceeded", headers: ["Retry-After": "1"]),
        .imgurLegacyError(status: 403, message: "Imgur is temporarily over capacity. Please try again later.", headers: ["Retry-After": "1"]),
        .respond(status: 200, body: #"{"data":{"error":"Imgur is over capacity. Please try again."},"success":false,"status":1203}"#),
        .respond(status: 503),
    ])
    func waitsOutRateLimitsAndOverCapacity(_ fault: Fault) async throws {
        try await TestSupport.withServer { server in
            server.inject(fault, path: page0)
            let items = try await client(server).tagPage("cats", sort: .time, window: .all, page: 0)
            #expect(!items.isEmpty)
            #expect(server.requestCount(path: page0) == 2)
        }
    }

    @Test func stopsWhenTheServerAsksForALongerPauseThanAllowed() async throws {
        try await TestSupport.withServer { server in
            server.inject(.imgurGatewayTooManyRequests(retryAfter: 900), path: page0)
            let error = await #expect(throws: ImgurError.self) {
                try await client(server, maxWait: .seconds(60)).tagPage("cats", sort: .time, window: .all, page: 0)
            }
            #expect(error?.kind == .rateLimited)
            #expect(error?.message == "Too Many Requests")
            #expect(server.requestCount(path: page0) == 1)
        }
    }

    @Test func a429ThatOutlastsEveryAttemptIsARateLimit() async throws {
        try await TestSupport.withServer { server in
            server.inject(.imgurGatewayTooManyRequests(), path: page0, times: 10)
            let refused = client(server)
            let error = await #expect(throws: ImgurError.self) {
                try await refused.tagPage("cats", sort: .time, window: .all, page: 0)
            }
            #expect(error?.kind == .rateLimited)
            #expect(server.requestCount(path: page0) == 4)
            // The refusal is remembered: the run's next source asks nothing, nor does the next
            // run that starts from the budget saved.
            let next = await #expect(throws: ImgurError.self) {
                try await refused.tagPage("dogs", sort: .time, window: .all, page: 0)
            }
            #expect(next?.kind == .rateLimited)
            #expect(server.requestCount(path: "/3/gallery/t/dogs/time/all/0") == 0)
            let saved = await refused.budget()
            let paused = try #require(saved.pausedUntil)
            #expect(paused.timeIntervalSinceNow > 14 * 60 && paused.timeIntervalSinceNow <= 15 * 60)
            let later = client(server, maxWait: .seconds(60))
            await later.adopt(saved)
            await #expect(throws: ImgurError.self) { try await later.tagPage("dogs", sort: .time, window: .all, page: 0) }
            #expect(server.requestCount(path: "/3/gallery/t/dogs/time/all/0") == 0)
        }
    }

    /// A 429 that names its time is remembered until then, and a pause within the longest wait
    /// is waited out rather than refused.
    @Test func aRefusalWithARetryAfterIsRememberedForThatLong() async throws {
        let clock = TestClock()
        let limiter = APIRateLimiter(settings: .init(maxWait: .seconds(60)), clock: clock)
        await limiter.pause(forSeconds: 30)
        try await limiter.acquire(url: "https://api.example/3/x")
        #expect(clock.waited == [.seconds(30)])
        await limiter.pause(forSeconds: 3600)
        let error = await #expect(throws: ImgurError.self) { try await limiter.acquire(url: "https://api.example/3/x") }
        #expect(error?.kind == .rateLimited && (3590...3600).contains(error?.retryAfter ?? 0))
    }

    @Test func otherClientErrorsAreNotRetried() async throws {
        try await TestSupport.withServer { server in
            server.inject(.imgurLegacyError(status: 400, message: "Bad tag"), path: page0)
            let error = await #expect(throws: ImgurError.self) {
                try await client(server).tagPage("cats", sort: .time, window: .all, page: 0)
            }
            #expect(error?.kind == .status(400))
            #expect(error?.message == "Bad tag")
            #expect(server.requestCount(path: page0) == 1)
        }
    }

    @Test func spacesCallsToTheMaximumRate() async throws {
        try await TestSupport.withServer { server in
            let api = client(server, rate: 5)
            let start = ContinuousClock.now
            for page in 0..<4 { _ = try await api.tagPage("cats", sort: .time, window: .all, page: page) }
            #expect(ContinuousClock.now - start >= .milliseconds(590))
        }
    }
}
