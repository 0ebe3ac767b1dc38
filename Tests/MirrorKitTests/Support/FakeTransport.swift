import Foundation
import Synchronization
import Testing
@testable import MirrorKit

/// A scripted transport: every transfer runs until the test completes or fails it (or the
/// scheduler stops it), and every call is recorded. It hands everything over synchronously: a
/// transfer is recorded when it is launched, and completing it tells the scheduler at once, so a
/// test steps the scheduler with `settled()`. Partial data is a number of bytes per URL. A
/// transfer says it is receiving as soon as it starts, unless the transport was made with
/// `receivesAtOnce: false`.
final class FakeTransport: DownloadTransport {
    typealias Finish = @Sendable (Result<FetchedFile, DownloadError>) -> Void

    struct Call: Equatable {
        var url: String
        var offset: Int64
        var held: HeldVersion? = nil
    }

    private struct State {
        var calls: [Call] = []
        var running: [String: Finish] = [:]
        var ids: [String: TransferID] = [:]
        var partials: [String: Int64] = [:]
        var pauses: [String] = []
        var resumes: [String] = []
        var discarded: [String] = []
        var receiving: [String: @Sendable (Bool) -> Void] = [:]
        var hostLimits: [String: Int] = [:]
        var limitRaised: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())
    private let receivesAtOnce: Bool

    init(receivesAtOnce: Bool = true) {
        self.receivesAtOnce = receivesAtOnce
    }

    func launch(
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void,
        finished: @escaping Finish
    ) -> Stopper {
        state.withLock {
            $0.calls.append(Call(url: url, offset: $0.partials[url, default: 0], held: held))
            $0.ids[url] = id
            $0.receiving[url] = receiving
            $0.running[url] = finished
        }
        if receivesAtOnce { receiving(true) }
        return Stopper { [self] in
            // Stopping one that has ended is no mistake: its result may be on its way.
            state.withLock { $0.running.removeValue(forKey: url) }?(.failure(DownloadError(url: url, reason: .transfer(.cancelled))))
        }
    }

    /// The scheduler launches; nothing calls this, but a transport must offer it.
    func fetch(
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void
    ) async throws(DownloadError) -> FetchedFile {
        throw DownloadError(url: url, reason: .storage("the fake transport is launched, not fetched"))
    }

    func pause(_ id: TransferID) {
        state.withLock { state in
            if let url = state.ids.first(where: { $0.value == id })?.key { state.pauses.append(url) }
        }
    }

    func resume(_ id: TransferID) {
        state.withLock { state in
            if let url = state.ids.first(where: { $0.value == id })?.key { state.resumes.append(url) }
        }
    }

    func partialLength(of url: String) -> Int64 { state.withLock { $0.partials[url, default: 0] } }

    func concurrencyLimit(forHost host: String) -> Int? { state.withLock { $0.hostLimits[host] } }

    func onLimitRaised(_ handler: @escaping @Sendable () -> Void) { state.withLock { $0.limitRaised = handler } }

    func discardPartial(of url: String) {
        state.withLock {
            $0.partials[url] = nil
            $0.discarded.append(url)
        }
    }

    /// Ends the transfer of `url`; a test that ends one that is not running has lost track.
    private func end(_ url: String, _ result: Result<FetchedFile, DownloadError>, sourceLocation: SourceLocation) {
        guard let finish = state.withLock({ $0.running.removeValue(forKey: url) }) else {
            Issue.record("\(url) is not running", sourceLocation: sourceLocation)
            return
        }
        finish(result)
    }

    // MARK: - Script

    /// Bytes arrive for `url`'s partial.
    func receive(_ url: String, bytes: Int64) {
        state.withLock { $0.partials[url, default: 0] += bytes }
    }

    /// `host` gets at most `limit` transfers at once from now on; a limit raised is told to the
    /// scheduler, as ``HostHealth`` tells it.
    func setLimit(_ limit: Int, forHost host: String) {
        let (raised, handler) = state.withLock { state in
            defer { state.hostLimits[host] = limit }
            return (state.hostLimits[host].map { limit > $0 } ?? false, state.limitRaised)
        }
        if raised { handler?() }
    }

    /// The running transfer of `url` starts (true) or stops (false) receiving its body.
    func setReceiving(_ url: String, _ receiving: Bool) {
        state.withLock { $0.receiving[url] }?(receiving)
    }

    /// The running transfer of `url` succeeds.
    func complete(_ url: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let length = partialLength(of: url)
        end(url, .success(FetchedFile(url: url, path: "/fake/\(url)", length: length, bytesReceived: length)), sourceLocation: sourceLocation)
    }

    /// The running transfer of `url` fails.
    func fail(_ url: String, _ reason: DownloadError.Reason, sourceLocation: SourceLocation = #_sourceLocation) {
        end(url, .failure(DownloadError(url: url, reason: reason)), sourceLocation: sourceLocation)
    }

    var calls: [Call] { state.withLock { $0.calls } }
    var running: Set<String> { state.withLock { Set($0.running.keys) } }
    var pauses: [String] { state.withLock { $0.pauses } }
    var resumes: [String] { state.withLock { $0.resumes } }
    var discarded: [String] { state.withLock { $0.discarded } }
    func fetchCount(_ url: String) -> Int { calls.count { $0.url == url } }
}

/// Polls `condition` until it holds, or throws once `limit` has passed.
func eventually(
    _ description: String = "condition", within limit: Duration = .seconds(10),
    _ condition: @Sendable () async -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while !(await condition()) {
        guard ContinuousClock.now < deadline else {
            throw EventuallyTimeout(description: description)
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}

struct EventuallyTimeout: Error, CustomStringConvertible {
    var description: String
}

/// Pause timers that fire only when the test fires them, synchronously.
final class ManualTimers: Sendable {
    private struct State {
        var waiting: [Int: @Sendable () -> Void] = [:]
        var started = 0
    }

    private let state = Mutex(State())

    /// Timers started so far.
    var count: Int { state.withLock { $0.started } }

    /// The scheduler's timer starter.
    var starter: DownloadScheduler.TimerStarter {
        { [self] _, fire in
            let index = state.withLock { state in
                defer { state.started += 1 }
                state.waiting[state.started] = fire
                return state.started
            }
            return Stopper { [self] in _ = state.withLock { $0.waiting.removeValue(forKey: index) } }
        }
    }

    /// Fires the timer started `index`-th (from 0), if it is still waiting; false when it is not
    /// (never started, fired already, or stopped).
    @discardableResult
    func fire(_ index: Int) -> Bool {
        guard let fire = state.withLock({ $0.waiting.removeValue(forKey: index) }) else { return false }
        fire()
        return true
    }
}
