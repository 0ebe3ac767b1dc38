import Dispatch
import Foundation
import Synchronization

/// Turns SIGINT and SIGTERM into cancellation, so a run stopped by Ctrl-C, `kill` or a cron
/// timeout writes out what it has received (the next run resumes from there) instead of dying
/// mid-write.
enum Interruption {
    /// Runs `work`, cancelling it on the first SIGINT or SIGTERM; returns its result and the
    /// signal that stopped it, if one did. A second signal ends the process at once.
    static func cancelOnSignal<T: Sendable>(_ work: @escaping @Sendable () async -> T) async -> (T, Int32?) {
        let task = Task { await work() }
        let received = SignalBox()
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if received.take(number) {
                    task.cancel()
                } else {
                    // Straight out: exit() would run teardown while curl's and SQLite's threads run.
                    _exit(128 + number)
                }
            }
            source.resume()
            return source
        }
        let result = await task.value
        sources.forEach { $0.cancel() }
        return (result, received.value)
    }
}

/// The first signal received.
private final class SignalBox: Sendable {
    private let state = Mutex<Int32?>(nil)

    /// Records `number`; false if a signal had come already.
    func take(_ number: Int32) -> Bool {
        state.withLock { value in
            guard value == nil else { return false }
            value = number
            return true
        }
    }

    var value: Int32? { state.withLock { $0 } }
}
