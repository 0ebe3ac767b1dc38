import Foundation

/// Where the tool's time comes from: the wall clock for the dates servers speak in
/// (`Retry-After`, rate-limit resets) and the waits between attempts. Passed in, so that tests
/// move it forward rather than sleep.
package protocol RunClock: Sendable {
    /// Now, on the wall clock.
    var now: Date { get }
    /// Waits `duration`; throws `CancellationError` when the task is cancelled meanwhile.
    func sleep(for duration: Duration) async throws
}

/// The system's clock: `Date()` and `Task.sleep`.
package struct SystemClock: RunClock {
    package init() {}

    package var now: Date { Date() }

    package func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
