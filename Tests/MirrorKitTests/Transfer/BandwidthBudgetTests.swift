import Testing
@testable import MirrorKit

/// The engine's token bucket, on a clock the test moves.
@Suite("Bandwidth budget")
struct BandwidthBudgetTests {
    /// A monotonic time that stands still until moved.
    private final class Time {
        var now = ContinuousClock.now
    }

    @Test func aBurstGoesThroughThenTheRateHoldsAndTheDebtIsPaidFirst() {
        let time = Time()
        // 1 MB/s: a burst of an eighth of a second's worth.
        let budget = BandwidthBudget(bytesPerSecond: 1_000_000, now: { time.now })
        #expect(budget.take(100_000))
        #expect(budget.take(50_000), "a take may overdraw: chunks come as libcurl hands them")
        #expect(!budget.take(1), "overdrawn: nothing goes through until the debt is paid")
        // 25,000 bytes of debt at 1 MB/s: 25 ms.
        #expect(budget.waitUntilAvailable == .milliseconds(25))
        time.now += .milliseconds(20)
        #expect(!budget.take(1))
        time.now += .milliseconds(10)
        #expect(budget.waitUntilAvailable == .zero)
        #expect(budget.take(1))
    }

    @Test func anIdleBucketRefillsOnlyToItsBurst() {
        let time = Time()
        let budget = BandwidthBudget(bytesPerSecond: 1_000_000, now: { time.now })
        time.now += .seconds(60)
        // A minute idle buys an eighth of a second's worth, not a minute's.
        #expect(budget.take(125_000))
        #expect(!budget.take(1))
    }
}
