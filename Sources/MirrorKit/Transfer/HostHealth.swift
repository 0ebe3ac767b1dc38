import Synchronization

/// What this run's downloads have learned about each host: whether it answers at all, whether it
/// is limiting us, and how many transfers it should get at once.
///
/// - A host is **down** when connections to it fail at the connection level (DNS, refused, TLS,
///   a connect timeout: nothing was answered) several times in a row with no success in between,
///   across several files or for a while. A host that fails some files but serves others is not.
/// - A host is **throttling** while it answers 429 or 503: each such answer halves its
///   concurrency, each success adds back a little (AIMD, as TCP does), and a host that answers
///   nothing else for many requests in a row has **throttled us out** for this run.
///
/// Once a host has a ``Verdict``, downloads from it stop being tried: the run ends with "try
/// later" (exit 75) rather than a failure per file, and keeps every partial for the next run.
public final class HostHealth: Sendable {
    public struct Settings: Sendable, Equatable {
        /// The most transfers a host gets at once, and the level its concurrency grows back to.
        public var maxPerHost: Int
        /// Connection-level failures in a row that make a host down, once they span
        /// ``downAfterFiles`` files or ``downAfterTime``.
        public var downAfterFailures: Int
        public var downAfterFiles: Int
        public var downAfterTime: Duration
        /// 429/503 answers in a row (nothing served between) after which the host is given up for
        /// this run.
        public var throttledOutAfter: Int

        public init(
            maxPerHost: Int = 6, downAfterFailures: Int = 3, downAfterFiles: Int = 3,
            downAfterTime: Duration = .seconds(10), throttledOutAfter: Int = 12
        ) {
            self.maxPerHost = max(maxPerHost, 1)
            self.downAfterFailures = max(downAfterFailures, 1)
            self.downAfterFiles = max(downAfterFiles, 1)
            self.downAfterTime = downAfterTime
            self.throttledOutAfter = max(throttledOutAfter, 1)
        }
    }

    /// Why a host is no longer asked for anything this run.
    public enum Verdict: Sendable, Equatable, CustomStringConvertible {
        /// Nothing answered: `failures` connection-level failures in a row, the last one `lastError`.
        case down(host: String, failures: Int, lastError: String)
        /// It kept answering `status` (429 or 503): `answers` in a row, or a wait longer than allowed.
        case throttled(host: String, status: Int, answers: Int)

        public var host: String {
            switch self {
            case .down(let host, _, _), .throttled(let host, _, _): host
            }
        }

        public var description: String {
            switch self {
            case .down(let host, let failures, let lastError):
                "\(host) is down (\(failures) connection failures in a row, last: \(lastError))"
            case .throttled(let host, let status, let answers):
                "\(host) keeps answering HTTP \(status) (\(answers) in a row)"
            }
        }
    }

    private struct Host {
        var failuresInARow = 0
        var failingURLs: Set<String> = []
        var firstFailure: ContinuousClock.Instant?
        var throttlesInARow = 0
        var throttledURLs: Set<String> = []
        /// The AIMD concurrency, fractional so that additive increase can be gradual.
        var limit: Double
        var verdict: Verdict?
    }

    public let settings: Settings
    private let hosts = Mutex<[String: Host]>([:])

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// The verdict on the host of `url`, if it has one.
    public func verdict(forURL url: String) -> Verdict? {
        verdict(forHost: URLAuthority.of(url))
    }

    public func verdict(forHost host: String) -> Verdict? {
        hosts.withLock { $0[host]?.verdict }
    }

    /// Every host given up this run.
    public var verdicts: [Verdict] {
        hosts.withLock { $0.values.compactMap(\.verdict) }.sorted { $0.host < $1.host }
    }

    /// How many transfers `host` should have running now.
    public func concurrencyLimit(forHost host: String) -> Int {
        hosts.withLock { hosts in hosts[host].map { max(Int($0.limit), 1) } ?? settings.maxPerHost }
    }

    /// A response came (any status but a throttling one): the host answers and serves.
    public func recordAnswer(url: String) {
        update(url) { host in
            host.failuresInARow = 0
            host.failingURLs = []
            host.firstFailure = nil
            host.throttlesInARow = 0
            host.throttledURLs = []
            host.limit = min(host.limit + 1 / host.limit, Double(settings.maxPerHost))
        }
    }

    /// Nothing was answered: the connection could not be made or broke before a response.
    public func recordConnectionFailure(url: String, message: String) {
        update(url) { host in
            host.failuresInARow += 1
            if host.failingURLs.count < settings.downAfterFiles { host.failingURLs.insert(url) }
            let first = host.firstFailure ?? .now
            host.firstFailure = first
            // One file alone never condemns a host: it may be that file's own trouble.
            let spansEnough = host.failingURLs.count >= settings.downAfterFiles
                || (host.failingURLs.count >= 2 && .now - first >= settings.downAfterTime)
            if host.verdict == nil, host.failuresInARow >= settings.downAfterFailures, spansEnough {
                host.verdict = .down(host: URLAuthority.of(url), failures: host.failuresInARow, lastError: message)
            }
        }
    }

    /// The host answered 429 or 503: halve its concurrency; give it up after too many in a row.
    public func recordThrottle(url: String, status: Int) {
        update(url) { host in
            host.failuresInARow = 0
            host.failingURLs = []
            host.firstFailure = nil
            host.throttlesInARow += 1
            if host.throttledURLs.count < 2 { host.throttledURLs.insert(url) }
            host.limit = max(host.limit / 2, 1)
            if host.verdict == nil, host.throttlesInARow >= settings.throttledOutAfter, host.throttledURLs.count >= 2 {
                host.verdict = .throttled(host: URLAuthority.of(url), status: status, answers: host.throttlesInARow)
            }
        }
    }

    /// A file's 429s or 503s outlasted its retries: the host is given up for this run when it has
    /// served nothing through at least half of ``Settings/throttledOutAfter`` such answers, for more
    /// than this one file (it is limiting us, not failing that file); returns whether it was.
    @discardableResult
    public func giveUpThrottled(url: String, status: Int) -> Bool {
        var givenUp = false
        update(url) { host in
            if host.verdict == nil, host.throttlesInARow * 2 >= settings.throttledOutAfter, host.throttledURLs.count >= 2 {
                host.verdict = .throttled(host: URLAuthority.of(url), status: status, answers: host.throttlesInARow)
            }
            givenUp = host.verdict != nil
        }
        return givenUp
    }

    private func update(_ url: String, _ change: (inout Host) -> Void) {
        let key = URLAuthority.of(url)
        hosts.withLock { hosts in
            change(&hosts[key, default: Host(limit: Double(settings.maxPerHost))])
        }
    }
}
