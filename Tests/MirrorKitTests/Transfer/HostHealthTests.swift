import FixtureServer
import Foundation
import Synchronization
import Testing
@testable import MirrorKit

@Suite("Host health: down hosts, throttling hosts, Retry-After from the CDN", .timeLimit(.minutes(1)))
struct HostHealthTests {
    let engine = TransferEngine()

    @Test func attemptsThatCannotConnectMakeAHostDownWhateverTheFile() {
        let health = HostHealth()
        health.recordUnanswered(url: "https://cdn.test/a.jpg", .notConnected, message: "refused")
        health.recordUnanswered(url: "https://cdn.test/a.jpg", .notConnected, message: "refused")
        #expect(health.verdict(forHost: "cdn.test") == nil)
        health.recordUnanswered(url: "https://cdn.test/a.jpg", .notConnected, message: "Couldn't connect to server")
        #expect(health.verdict(forURL: "https://cdn.test/anything.jpg")
            == .down(host: "cdn.test", failures: 3, lastError: "Couldn't connect to server"))
        // Another host, or the same host on another port, is judged apart.
        #expect(health.verdict(forHost: "cdn.test:8443") == nil)
    }

    @Test func aHostIsUnresolvedOnlyWhenItsNameNeverResolvedThisRun() {
        let never = HostHealth()
        for _ in 0..<3 { never.recordUnanswered(url: "https://typo.test/a.jpg", .notResolved, message: "Could not resolve host: typo.test") }
        #expect(never.verdict(forHost: "typo.test")?.isUnresolved == true)
        #expect(never.verdict(forHost: "typo.test")?.description == "cannot resolve typo.test (3 attempts)")

        // A host that answered once, then stopped resolving, is down (a DNS outage), not a typo.
        let once = HostHealth()
        once.recordAnswer(url: "https://cdn.test/a.jpg")
        for _ in 0..<3 { once.recordUnanswered(url: "https://cdn.test/b.jpg", .notResolved, message: "Could not resolve host: cdn.test") }
        #expect(once.verdict(forHost: "cdn.test")?.isUnresolved == false)
    }

    @Test func aResolveFailureIsTheRequestsHostsOnlyWhenCurlNamesIt() {
        func kind(_ url: String, _ message: String) -> HostHealth.Unanswered? {
            TransferError(url: url, reason: .transport(code: 6, message: message)).unanswered
        }
        #expect(kind("https://typo.test/a.jpg", "Could not resolve host: typo.test") == .notResolved)
        // A redirect to a name that does not resolve is not the redirector's typo.
        #expect(kind("https://dts.podtrac.test/x.mp3", "Could not resolve host: cdn.gone.test") == .notConnected)
    }

    @Test func connectionsThatDieBeforeAnAnswerNeedThreeFilesOneBrokenImageIsNotEnough() {
        let health = HostHealth()
        // One image: its thumbnail and its full-size file, retried over and over.
        for _ in 0..<10 {
            health.recordUnanswered(url: "https://cdn.test/Xm.jpg", .droppedBeforeAnswer, message: "reset")
            health.recordUnanswered(url: "https://cdn.test/X.jpg", .droppedBeforeAnswer, message: "reset")
        }
        #expect(health.verdicts.isEmpty)
        health.recordUnanswered(url: "https://cdn.test/Y.jpg", .droppedBeforeAnswer, message: "reset")
        #expect(health.verdict(forHost: "cdn.test") != nil)
    }

    @Test func aHostThatFailsSomeFilesButServesOthersIsNotDown() {
        let health = HostHealth()
        for index in 0..<50 {
            // Two files in a row fail (one could not connect, one was reset), then one is served.
            health.recordUnanswered(url: "https://flaky.test/\(index)a.jpg", .notConnected, message: "refused")
            health.recordUnanswered(url: "https://flaky.test/\(index)b.jpg", .droppedBeforeAnswer, message: "reset")
            health.recordAnswer(url: "https://flaky.test/\(index)d.jpg")
        }
        #expect(health.verdicts.isEmpty)
    }

    @Test func oneImageWhoseFilesKeepAnswering503NeverGivesUpItsHost() {
        let health = HostHealth(settings: .init(maxPerHost: 6, throttledOutAfter: 12))
        for _ in 0..<30 {
            health.recordThrottle(url: "https://cdn.test/brokenm.jpg", status: 503)
            health.recordThrottle(url: "https://cdn.test/broken.jpg", status: 503)
        }
        #expect(!health.giveUpThrottled(url: "https://cdn.test/broken.jpg", status: 503))
        #expect(health.verdicts.isEmpty)
        // Halved once per file, not once per attempt.
        #expect(health.concurrencyLimit(forHost: "cdn.test") == 1)
    }

    @Test func throttlingHalvesAHostsConcurrencyAndSuccessGrowsItBack() {
        let health = HostHealth(settings: .init(maxPerHost: 8, throttledOutAfter: 100))
        #expect(health.concurrencyLimit(forHost: "cdn.test") == 8)
        health.recordThrottle(url: "https://cdn.test/a.mp4", status: 429)
        #expect(health.concurrencyLimit(forHost: "cdn.test") == 4)
        health.recordThrottle(url: "https://cdn.test/b.mp4", status: 429)
        health.recordThrottle(url: "https://cdn.test/c.mp4", status: 503)
        health.recordThrottle(url: "https://cdn.test/d.mp4", status: 429)
        #expect(health.concurrencyLimit(forHost: "cdn.test") == 1)
        var answers = 0
        while health.concurrencyLimit(forHost: "cdn.test") < 8, answers < 1000 {
            health.recordAnswer(url: "https://cdn.test/ok.jpg")
            answers += 1
        }
        // Additive: back to 8 in tens of answers, not at once.
        #expect((20...60).contains(answers), "\(answers) answers")
        #expect(health.verdicts.isEmpty)
    }

    /// A scheduler holding transfers back for a host hears when its limit goes up, and only
    /// then: not for every answer (an answer at the full limit raises nothing).
    @Test func aRaisedLimitIsToldOnceForEachStepUp() {
        let health = HostHealth(settings: .init(maxPerHost: 4, throttledOutAfter: 100))
        let raises = Mutex<[Int]>([])
        health.onLimitRaised { raises.withLock { $0.append(health.concurrencyLimit(forHost: "cdn.test")) } }
        for _ in 0..<5 { health.recordAnswer(url: "https://cdn.test/ok.jpg") }
        #expect(raises.withLock { $0 }.isEmpty)
        health.recordThrottle(url: "https://cdn.test/a.mp4", status: 429)
        health.recordThrottle(url: "https://cdn.test/b.mp4", status: 429)
        #expect(health.concurrencyLimit(forHost: "cdn.test") == 1)
        for _ in 0..<100 { health.recordAnswer(url: "https://cdn.test/ok.jpg") }
        #expect(raises.withLock { $0 } == [2, 3, 4])
    }

    @Test func aHostThatAnswersNothingButThrottlingIsGivenUp() {
        let health = HostHealth(settings: .init(maxPerHost: 4, throttledOutAfter: 5))
        for index in 0..<5 { health.recordThrottle(url: "https://cdn.test/\(index % 3).mp4", status: 429) }
        #expect(health.verdict(forHost: "cdn.test") == .throttled(host: "cdn.test", status: 429, answers: 5))
    }

    @Test func aCDN429WithAnHTTPDateRetryAfterIsWaitedOutThenServed() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
                let downloader = Downloader(
                    engine: engine, partials: partials,
                    retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5)), health: HostHealth(),
                    logger: TestSupport.logger)
                let path = "/aB3dE5f.jpg"
                let retryAt = HTTPDate.format(Date().addingTimeInterval(2))
                server.inject(.respond(status: 429, headers: ["Retry-After": retryAt], body: "slow down"), path: path)
                let started = ContinuousClock.now
                let file = try await downloader.fetch(server.baseURL + path)
                #expect(ContinuousClock.now - started >= .milliseconds(900))
                #expect(server.requestCount(path: path) == 2)
                #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: path)))
            }
        }
    }

    @Test func aCDNThatKeepsAnswering429LeavesFilesForTheNextRunInsteadOfFailingThem() async throws {
        try await TestSupport.withServer { server in
            for path in server.mediaPaths where !path.hasPrefix("/removed") {
                server.inject(.respond(status: 429, headers: ["Retry-After": "0"]), path: path, times: 10)
            }
            try await TestSupport.withTemporaryDirectory { dir in
                let client = ImgurClient(apiBase: server.baseURL, clientID: "fixture", engine: engine, logger: TestSupport.logger)
                let settings = TagRun.Settings(
                    crawl: TagCrawler.Options(tag: "cats"),
                    urls: MediaURLBuilder(mediaBase: server.baseURL),
                    retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5)))
                func mirror() throws -> TagRun {
                    try TagRun(
                        directory: try MirrorDirectory(root: dir), client: client, engine: engine, settings: settings,
                        logger: TestSupport.logger)
                }
                let summary = try await mirror().run()
                #expect(summary.failures.isEmpty, "\(summary.failures.prefix(3))")
                #expect(summary.deferred > 0)
                #expect(summary.downloaded == 0)
                let host = URLAuthority.of(server.baseURL)
                #expect(summary.unavailableHosts.map(\.host) == [host])
                // Giving the host up stops the asking: far fewer requests than files × attempts.
                let mediaRequests = server.requests.count { !$0.path.hasPrefix("/3/") }
                #expect(mediaRequests < summary.wanted * 3)

                // The CDN recovers: the next run mirrors everything left.
                server.clearFaults()
                let next = try await mirror().run()
                #expect(next.isComplete)
                // What was left, and what the listing had not reached when the host was given up.
                #expect(next.wanted >= summary.deferred)
                #expect(next.downloaded + next.removed.count == next.wanted)
                for id in TestSupport.catsImageIDs {
                    #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("preview/\(id)m.jpg").path))
                }
            }
        }
    }
}
