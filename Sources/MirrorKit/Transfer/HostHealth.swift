import Synchronization

/// What this run's downloads have learned about each host: whether it answers at all, whether it
/// is limiting us, and how many transfers it should get at once.
///
/// - A host is **down** when it cannot be reached: ``Settings/downAfterFailures`` attempts in a row
///   fail before any connection exists (DNS, refused, TLS, a connect timeout: such failures cannot
///   be one file's fault), or transfers to ``Settings/downAfterFiles`` different files in a row die
///   before any answer (a reset, an empty reply, a timeout once connected), with nothing served in
///   between. A host that fails some files but serves others is not down, and one file (or one
///   image's two files) that keeps failing never makes its host down.
/// - A host is **throttling** while it answers 429 or 503: the first such answer for a file halves
///   the host's concurrency, each file served adds back a little (AIMD, as TCP does), and a host
///   that answers nothing but that, for ``Settings/throttledOutAfter`` requests across
///   ``Settings/downAfterFiles`` files, has **throttled us out** for this run.
///
/// Once a host has a ``Verdict``, downloads from it stop being tried: the run ends with "try
/// later" (exit 75) rather than a failure per file, and keeps every partial for the next run.
package final class HostHealth: Sendable {
    struct Settings: Sendable, Equatable {
        /// The most transfers a host gets at once, and the level its concurrency grows back to.
        var maxPerHost: Int
        /// Attempts in a row that could not connect at all before the host is down.
        var downAfterFailures: Int
        /// Different files in a row that died before an answer, or that were throttled, before the
        /// host is down or throttled out.
        var downAfterFiles: Int
        /// 429/503 answers in a row (nothing served between) after which the host is given up for
        /// this run, once they span ``downAfterFiles`` files.
        var throttledOutAfter: Int

        init(maxPerHost: Int = 6, downAfterFailures: Int = 3, downAfterFiles: Int = 3, throttledOutAfter: Int = 12) {
            self.maxPerHost = max(maxPerHost, 1)
            self.downAfterFailures = max(downAfterFailures, 1)
            self.downAfterFiles = max(downAfterFiles, 1)
            self.throttledOutAfter = max(throttledOutAfter, 1)
        }
    }

    /// Why a host is no longer asked for anything this run.
    package enum Verdict: Sendable, Equatable, CustomStringConvertible {
        /// Nothing answered: `failures` failures in a row, the last one `lastError`;
        /// `unresolved` when its name never resolved this run.
        case down(host: String, failures: Int, lastError: String, unresolved: Bool = false)
        /// It kept answering `status` (429 or 503): `answers` in a row, or a wait longer than allowed.
        case throttled(host: String, status: Int, answers: Int)

        /// The host's name never resolved this run.
        package var isUnresolved: Bool {
            if case .down(_, _, _, true) = self { true } else { false }
        }

        package var host: String {
            switch self {
            case .down(let host, _, _, _), .throttled(let host, _, _): host
            }
        }

        package var description: String {
            switch self {
            case .down(let host, let failures, _, true):
                "cannot resolve \(host) (\(failures) attempts)"
            case .down(let host, let failures, let lastError, false):
                "\(host) is down (\(failures) connection failures in a row, last: \(lastError))"
            case .throttled(let host, let status, let answers):
                "\(host) keeps answering HTTP \(status) (\(answers) in a row)"
            }
        }
    }

    /// How a request to a host failed before any answer.
    enum Unanswered: Sendable {
        /// No connection was made: the host cannot be reached, whatever the file.
        case notConnected
        /// Its name did not resolve (no connection was made either).
        case notResolved
        /// Connected, then nothing (a reset, an empty reply, a timeout): maybe that file's trouble.
        case droppedBeforeAnswer
    }

    private struct Host {
        var failuresInARow = 0
        var unconnectedInARow = 0
        var failingURLs: Set<String> = []
        var throttlesInARow = 0
        var throttledURLs: Set<String> = []
        /// Its name resolved this run (anything but a resolve failure happened).
        var resolved = false
        /// The AIMD concurrency, fractional so that additive increase can be gradual.
        var limit: Double
        var verdict: Verdict?
    }

    let settings: Settings
    private let hosts = Mutex<[String: Host]>([:])
    private let limitRaised = Mutex<(@Sendable () -> Void)?>(nil)

    init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// The verdict on the host of `url`, if it has one.
    func verdict(forURL url: String) -> Verdict? {
        verdict(forHost: URLAuthority.of(url))
    }

    func verdict(forHost host: String) -> Verdict? {
        hosts.withLock { $0[host]?.verdict }
    }

    /// Every host given up this run.
    var verdicts: [Verdict] {
        hosts.withLock { $0.values.compactMap(\.verdict) }.sorted { $0.host < $1.host }
    }

    /// Tells `handler` whenever a host's ``concurrencyLimit(forHost:)`` goes up: a scheduler holding
    /// transfers back for it may start them (nothing else need happen meanwhile to make it look).
    /// One handler, replaced by the next: a run has one scheduler per health.
    func onLimitRaised(_ handler: @escaping @Sendable () -> Void) {
        limitRaised.withLock { $0 = handler }
    }

    /// How many transfers `host` should have running now.
    func concurrencyLimit(forHost host: String) -> Int {
        hosts.withLock { hosts in hosts[host].map { max(Int($0.limit), 1) } ?? settings.maxPerHost }
    }

    /// A response came (any status but a throttling one): the host answers and serves.
    func recordAnswer(url: String) {
        var raised = false
        update(url) { host in
            let before = max(Int(host.limit), 1)
            defer { raised = max(Int(host.limit), 1) > before }
            host.resolved = true
            host.failuresInARow = 0
            host.unconnectedInARow = 0
            host.failingURLs = []
            host.throttlesInARow = 0
            host.throttledURLs = []
            host.limit = min(host.limit + 1 / host.limit, Double(settings.maxPerHost))
        }
        if raised { limitRaised.withLock { $0 }?() }
    }

    /// Nothing was answered.
    func recordUnanswered(url: String, _ kind: Unanswered, message: String) {
        update(url) { host in
            host.failuresInARow += 1
            if kind != .notResolved { host.resolved = true }
            if kind != .droppedBeforeAnswer { host.unconnectedInARow += 1 }
            if host.failingURLs.count < settings.downAfterFiles { host.failingURLs.insert(url) }
            let down = host.unconnectedInARow >= settings.downAfterFailures
                || host.failingURLs.count >= settings.downAfterFiles
            if host.verdict == nil, down {
                host.verdict = .down(
                    host: URLAuthority.of(url), failures: host.failuresInARow, lastError: message, unresolved: !host.resolved)
            }
        }
    }

    /// The host answered 429 or 503: halve its concurrency (once per file); give it up after too
    /// many in a row across enough files.
    func recordThrottle(url: String, status: Int) {
        update(url) { host in
            host.resolved = true
            host.throttlesInARow += 1
            // A file retrying is one signal, not one per attempt.
            if host.throttledURLs.count < settings.downAfterFiles, host.throttledURLs.insert(url).inserted {
                host.limit = max(host.limit / 2, 1)
            }
            if host.verdict == nil, host.throttlesInARow >= settings.throttledOutAfter,
               host.throttledURLs.count >= settings.downAfterFiles {
                host.verdict = .throttled(host: URLAuthority.of(url), status: status, answers: host.throttlesInARow)
            }
        }
    }

    /// A file's 429s or 503s outlasted its retries: the host is given up for this run when it has
    /// served nothing through at least half of ``Settings/throttledOutAfter`` such answers, across
    /// ``Settings/downAfterFiles`` files (it is limiting us, not failing that file); returns whether
    /// it was.
    @discardableResult
    func giveUpThrottled(url: String, status: Int) -> Bool {
        var givenUp = false
        update(url) { host in
            if host.verdict == nil, host.throttlesInARow * 2 >= settings.throttledOutAfter,
               host.throttledURLs.count >= settings.downAfterFiles {
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
