import Foundation
import Synchronization
@testable import MirrorKit

/// A clock a test moves: `now` stands still until ``advance(by:)``, and a wait returns at once,
/// moving `now` on by what it waited, so nothing a test runs ever sleeps on it, and what depends on
/// the time (a reset that has passed, a backoff) happens exactly when the test says.
final class TestClock: RunClock {
    private let current: Mutex<(now: Date, elapsed: Duration)>
    private let waits = Mutex<[Duration]>([])

    init(now: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = Mutex((now, .zero))
    }

    var now: Date { current.withLock { $0.now } }

    var elapsed: Duration { current.withLock { $0.elapsed } }

    /// Every wait asked for so far, in order.
    var waited: [Duration] { waits.withLock { $0 } }

    func advance(by duration: Duration) {
        current.withLock {
            $0.now = $0.now.addingTimeInterval(duration.inSeconds)
            $0.elapsed += duration
        }
    }

    func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        waits.withLock { $0.append(duration) }
        advance(by: max(duration, .zero))
    }
}
