/// A token bucket for the engine's bandwidth limit, shared by every transfer.
///
/// libcurl's own `CURLOPT_MAX_RECV_SPEED_LARGE` proved useless here: on loopback, 7.88.1 let a
/// 4 MiB body through a 256 KiB/s limit in one second (`curl --limit-rate` does the same). So the
/// engine meters bytes itself: a write callback that finds the bucket empty pauses its transfer
/// (libcurl delivers the same bytes again on unpause), and the engine loop unpauses throttled
/// transfers once tokens have come back. Engine thread only.
final class BandwidthBudget {
    private let bytesPerSecond: Double
    private let burst: Double
    private var tokens: Double
    private var refilledAt: ContinuousClock.Instant
    /// The engine thread's monotonic time; tests pass one they move.
    private let now: () -> ContinuousClock.Instant

    init(bytesPerSecond: Int64, now: @escaping () -> ContinuousClock.Instant = { .now }) {
        self.bytesPerSecond = Double(max(bytesPerSecond, 1))
        self.now = now
        burst = max(self.bytesPerSecond / 8, 16_384)
        tokens = burst
        refilledAt = now()
    }

    /// Takes `count` bytes unless the bucket is empty. A take may overdraw the bucket: chunks come
    /// as libcurl hands them, and the debt is paid back before anything else goes through.
    func take(_ count: Int) -> Bool {
        refill()
        guard tokens > 0 else { return false }
        tokens -= Double(count)
        return true
    }

    /// How long until a take can succeed.
    var waitUntilAvailable: Duration {
        refill()
        return tokens > 0 ? .zero : .seconds(-tokens / bytesPerSecond)
    }

    private func refill() {
        let now = now()
        let elapsed = now - refilledAt
        refilledAt = now
        tokens = min(burst, tokens + elapsed.inSeconds * bytesPerSecond)
    }
}
