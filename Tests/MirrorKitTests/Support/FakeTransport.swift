import Foundation
import Synchronization
@testable import MirrorKit

/// A scripted transport: every fetch waits until the test completes, fails or cancels it, and
/// every call is recorded. Partial data is a number of bytes per URL. A fetch says it is receiving
/// as soon as it starts, unless the transport was made with `receivesAtOnce: false`.
final class FakeTransport: DownloadTransport {
    struct Call: Equatable {
        var url: String
        var offset: Int64
    }

    private struct State {
        var calls: [Call] = []
        var pending: [String: CheckedContinuation<FetchedFile, any Error>] = [:]
        var cancelledEarly: Set<String> = []
        var ids: [String: TransferID] = [:]
        var partials: [String: Int64] = [:]
        var pauses: [String] = []
        var resumes: [String] = []
        var discarded: [String] = []
        var receiving: [String: @Sendable (Bool) -> Void] = [:]
    }

    private let state = Mutex(State())
    private let receivesAtOnce: Bool

    init(receivesAtOnce: Bool = true) {
        self.receivesAtOnce = receivesAtOnce
    }

    func fetch(
        _ url: String, id: TransferID, expectedSize: Int64?, held: HeldVersion?,
        progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void
    ) async throws(DownloadError) -> FetchedFile {
        state.withLock {
            $0.calls.append(Call(url: url, offset: $0.partials[url, default: 0]))
            $0.ids[url] = id
            $0.receiving[url] = receiving
        }
        if receivesAtOnce { receiving(true) }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let early = state.withLock { state in
                        if state.cancelledEarly.remove(url) != nil { return true }
                        state.pending[url] = continuation
                        return false
                    }
                    if early { continuation.resume(throwing: DownloadError(url: url, reason: .transfer(.cancelled))) }
                }
            } onCancel: {
                let continuation = state.withLock { state in
                    let continuation = state.pending.removeValue(forKey: url)
                    if continuation == nil { state.cancelledEarly.insert(url) }
                    return continuation
                }
                continuation?.resume(throwing: DownloadError(url: url, reason: .transfer(.cancelled)))
            }
        } catch let error as DownloadError {
            throw error
        } catch {
            throw DownloadError(url: url, reason: .storage("\(error)"))
        }
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

    func discardPartial(of url: String) {
        state.withLock {
            $0.partials[url] = nil
            $0.discarded.append(url)
        }
    }

    // MARK: - Script

    /// Bytes arrive for `url`'s partial.
    func receive(_ url: String, bytes: Int64) {
        state.withLock { $0.partials[url, default: 0] += bytes }
    }

    /// The running fetch of `url` starts (true) or stops (false) receiving its body.
    func setReceiving(_ url: String, _ receiving: Bool) {
        state.withLock { $0.receiving[url] }?(receiving)
    }

    /// The running fetch of `url` succeeds.
    func complete(_ url: String) {
        let (continuation, length) = state.withLock { ($0.pending.removeValue(forKey: url), $0.partials[url, default: 0]) }
        continuation?.resume(returning: FetchedFile(url: url, path: "/fake/\(url)", length: length, bytesReceived: length))
    }

    /// The running fetch of `url` fails.
    func fail(_ url: String, _ reason: DownloadError.Reason) {
        let continuation = state.withLock { $0.pending.removeValue(forKey: url) }
        continuation?.resume(throwing: DownloadError(url: url, reason: reason))
    }

    var calls: [Call] { state.withLock { $0.calls } }
    var running: Set<String> { state.withLock { Set($0.pending.keys) } }
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

/// Sleeps that end only when the test fires them, in the order they began.
final class ManualTimers: Sendable {
    private struct State {
        var waiting: [Int: CheckedContinuation<Void, any Error>] = [:]
        var started = 0
    }

    private let state = Mutex(State())

    /// Timers started so far.
    var count: Int { state.withLock { $0.started } }

    /// Like `Task.sleep`: a cancelled timer throws `CancellationError` at once.
    func wait() async throws {
        let index = state.withLock { state in
            defer { state.started += 1 }
            return state.started
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelled = state.withLock { state in
                    state.waiting[index] = continuation
                    return Task.isCancelled
                }
                if cancelled { cancel(index) }
            }
        } onCancel: {
            cancel(index)
        }
    }

    private func cancel(_ index: Int) {
        state.withLock { $0.waiting.removeValue(forKey: index) }?.resume(throwing: CancellationError())
    }

    /// Ends the timer started `index`-th (from 0), if it is still waiting; false when it is not
    /// (never started, fired already, or cancelled).
    @discardableResult
    func fire(_ index: Int) -> Bool {
        guard let timer = state.withLock({ $0.waiting.removeValue(forKey: index) }) else { return false }
        timer.resume()
        return true
    }
}
