import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Turns SIGINT and SIGTERM, and the `--max-duration` deadline, into cancellation, so a run
/// stopped by Ctrl-C, `kill`, a cron timeout or its own deadline writes out what it has received
/// (the next run resumes from there) instead of dying mid-write.
enum Interruption {
    /// What stopped a run before it finished.
    enum Stop: Equatable {
        case signal(Int32)
        case deadline
    }

    /// Runs `work`, cancelling it on the first SIGINT or SIGTERM or when `deadline` has passed;
    /// returns its result and what stopped it, if anything did. A second signal ends the process
    /// at once. `work` starts once the signals are handled: a signal in its first instant is not
    /// lost.
    static func cancelOnSignal<T: Sendable>(
        deadline: Duration? = nil, _ work: @escaping @Sendable () async -> T
    ) async -> (T, Stop?) {
        let started = Mutex<Task<T, Never>?>(nil)
        let received = StopBox()
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if received.take(.signal(number)) {
                    started.withLock { $0 }?.cancel()
                } else if received.value != .deadline {
                    // Straight out: exit() would run teardown while curl's and SQLite's threads run.
                    Console.exitNow(128 + number)
                } else {
                    // The deadline is already winding the run down: a signal now is the first one.
                    received.replace(with: .signal(number))
                }
            }
            source.resume()
            return source
        }
        let task = Task { await work() }
        started.withLock { $0 = task }
        if received.value != nil { task.cancel() }
        let timer = deadline.map { deadline in
            Task {
                do { try await Task.sleep(for: deadline) } catch { return }
                if received.take(.deadline) { task.cancel() }
            }
        }
        let result = await task.value
        timer?.cancel()
        sources.forEach { $0.cancel() }
        return (result, received.value)
    }
}

/// What stopped the run first.
private final class StopBox: Sendable {
    private let state = Mutex<Interruption.Stop?>(nil)

    /// Records `stop`; false if something had stopped the run already.
    func take(_ stop: Interruption.Stop) -> Bool {
        state.withLock { value in
            guard value == nil else { return false }
            value = stop
            return true
        }
    }

    func replace(with stop: Interruption.Stop) {
        state.withLock { $0 = stop }
    }

    var value: Interruption.Stop? { state.withLock { $0 } }
}
