import FoundationEssentials

/// Where the tool's time comes from: the wall clock for the dates servers speak in
/// (`Retry-After`, rate-limit resets) and the waits between attempts. Passed in, so that tests
/// move it forward rather than sleep.
package protocol RunClock: Sendable {
    /// Now, on the wall clock: for the dates servers speak in.
    var now: Date { get }
    /// Time since the clock began, on a clock that never jumps: for how long something took or
    /// has gone on (a wall clock may be stepped back or forward).
    var elapsed: Duration { get }
    /// Waits `duration`; throws `CancellationError` when the task is cancelled meanwhile.
    func sleep(for duration: Duration) async throws
}

/// The system's clock: `Date()` and `Task.sleep`.
package struct SystemClock: RunClock {
    private let origin = ContinuousClock.now

    package init() {}

    package var now: Date { Date() }

    package var elapsed: Duration { ContinuousClock.now - origin }

    package func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
