import Testing
@testable import MirrorKit

/// The scheduler's decisions, event by event: no transport, no clock, no actor.
@Suite("Scheduler decisions", .timeLimit(.minutes(1)))
struct SchedulerCoreTests {
    /// A core with a recorder around it: the partials it reads, the transfers it started.
    struct Harness {
        var core: SchedulerCore
        var partials: [String: Int64] = [:]
        var started: [String: TransferID] = [:]
        var nextCaller: CallerID = 0

        init(maxConcurrent: Int = 3, maxPerHost: Int = 3, suspendedBytes: Int64 = 1 << 40, suspendedCount: Int = 100,
             partials: Box<[String: Int64]> = Box([:]), hostLimits: Box<[String: Int]> = Box([:]),
             unholdable: Box<Set<TransferID>> = Box([])) {
            core = SchedulerCore(
                limits: .init(maxConcurrent: maxConcurrent, maxPerHost: maxPerHost,
                              suspendedBytesBudget: suspendedBytes, suspendedCountBudget: suspendedCount),
                hostLimit: { hostLimits.value[$0] },
                partialLength: { partials.value[$0, default: 0] },
                holdable: { !unholdable.value.contains($0) })
        }

        @discardableResult
        mutating func send(_ event: SchedulerCore.Event) -> [SchedulerCore.Action] {
            let actions = core.handle(event)
            for case .start(let url, let id, _, _, _) in actions { started[url] = id }
            return actions
        }

        @discardableResult
        mutating func schedule(_ url: String, forced: Bool = false) -> [SchedulerCore.Action] {
            nextCaller += 1
            return send(.schedule(url: url, forced: forced, expectedSize: nil, caller: nextCaller))
        }

        @discardableResult
        mutating func finish(_ url: String, _ result: Result<FetchedFile, DownloadError>) -> [SchedulerCore.Action] {
            send(.finished(url: url, id: started[url]!, result))
        }

        @discardableResult
        mutating func complete(_ url: String) -> [SchedulerCore.Action] {
            finish(url, .success(FetchedFile(url: url, path: "/f", length: 1, bytesReceived: 1)))
        }

        @discardableResult
        mutating func receiving(_ url: String, _ receiving: Bool = true) -> [SchedulerCore.Action] {
            send(.receiving(url: url, id: started[url]!, receiving))
        }

        func state(_ url: String) -> DownloadState? {
            core.state(of: url)
        }
    }

    final class Box<Value> {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    static func starts(_ actions: [SchedulerCore.Action]) -> [String] {
        actions.compactMap { if case .start(let url, _, _, _, _) = $0 { url } else { nil } }
    }

    static func pauses(_ actions: [SchedulerCore.Action]) -> [String] {
        actions.compactMap { if case .pause(let url, _, _) = $0 { url } else { nil } }
    }

    static func pauseNumbers(_ actions: [SchedulerCore.Action]) -> [UInt64] {
        actions.compactMap { if case .pause(_, _, let number) = $0 { number } else { nil } }
    }

    static func resumes(_ actions: [SchedulerCore.Action]) -> [String] {
        actions.compactMap { if case .resume(let url, _) = $0 { url } else { nil } }
    }

    static func answers(_ actions: [SchedulerCore.Action]) -> [([CallerID], Result<FetchedFile, DownloadError>)] {
        actions.compactMap { if case .answer(let callers, let result) = $0 { (callers, result) } else { nil } }
    }

    static func url(_ name: String, host: String = "a.example") -> String { "http://\(host)/\(name)" }

    // MARK: - Slots

    @Test func unforcedItemsFillTheSlotsNewestFirst() {
        var harness = Harness(maxConcurrent: 2)
        #expect(Self.starts(harness.schedule(Self.url("1"))) == [Self.url("1")])
        #expect(Self.starts(harness.schedule(Self.url("2"))) == [Self.url("2")])
        for name in ["3", "4", "5"] { #expect(Self.starts(harness.schedule(Self.url(name))).isEmpty) }
        #expect(Self.starts(harness.complete(Self.url("1"))) == [Self.url("5")])
        #expect(Self.starts(harness.complete(Self.url("2"))) == [Self.url("4")])
        #expect(harness.core.status { _ in nil }.counts == [.downloading: 2, .waiting: 1, .completed: 2])
    }

    @Test func aHostAtItsLimitDoesNotBlockAnother() {
        let limits = Box<[String: Int]>([:])
        var harness = Harness(maxConcurrent: 4, maxPerHost: 2, hostLimits: limits)
        limits.value["slow.example"] = 1
        var started: [String] = []
        for name in ["1", "2", "3"] {
            started += Self.starts(harness.schedule(Self.url(name, host: "slow.example")))
            started += Self.starts(harness.schedule(Self.url(name, host: "b.example")))
        }
        #expect(started == [Self.url("1", host: "slow.example"), Self.url("1", host: "b.example"), Self.url("2", host: "b.example")])
    }

    // MARK: - Forced

    @Test func aForcedItemTakesAFreeSlotAndHoldsOthersBackOnlyWhileReceiving() {
        var harness = Harness(maxConcurrent: 3)
        harness.schedule(Self.url("p1"))
        harness.schedule(Self.url("p2"))
        let forced = harness.schedule(Self.url("big"), forced: true)
        #expect(Self.starts(forced) == [Self.url("big")])
        #expect(Self.pauses(forced).isEmpty)
        // Receiving: the unforced ones are held, and none start.
        #expect(Set(Self.pauses(harness.receiving(Self.url("big")))) == [Self.url("p1"), Self.url("p2")])
        #expect(Self.starts(harness.schedule(Self.url("p3"))).isEmpty)
        // Backing off between attempts: they go on.
        #expect(Set(Self.resumes(harness.receiving(Self.url("big"), false))) == [Self.url("p1"), Self.url("p2")])
        #expect(harness.state(Self.url("big")) == .downloading)
        harness.receiving(Self.url("big"))
        // Done: the paused ones resume before the waiting one starts, up to the limit.
        let done = harness.complete(Self.url("big"))
        #expect(Set(Self.resumes(done)) == [Self.url("p1"), Self.url("p2")])
        #expect(Self.starts(done) == [Self.url("p3")])
    }

    @Test func forcedItemsRunTogetherUpToTheLimitPausingUnforcedOnesForRoom() {
        var harness = Harness(maxConcurrent: 2)
        harness.schedule(Self.url("p1"))
        harness.schedule(Self.url("p2"))
        let first = harness.schedule(Self.url("f1"), forced: true)
        #expect(Self.starts(first) == [Self.url("f1")])
        #expect(Self.pauses(first).count == 1)
        let second = harness.schedule(Self.url("f2"), forced: true)
        #expect(Self.starts(second) == [Self.url("f2")])
        #expect(Self.pauses(second).count == 1)
        // A third waits for a forced one to finish: forced items never pause each other.
        let third = harness.schedule(Self.url("f3"), forced: true)
        #expect(Self.starts(third).isEmpty && Self.pauses(third).isEmpty)
        #expect(harness.state(Self.url("f1")) == .downloading && harness.state(Self.url("f2")) == .downloading)
        #expect(Self.starts(harness.complete(Self.url("f1"))) == [Self.url("f3")])
    }

    @Test func joiningWithForcedPutsAWaitingItemAheadOfTheOthers() {
        var harness = Harness(maxConcurrent: 1)
        harness.schedule(Self.url("running"))
        harness.schedule(Self.url("old"))
        harness.schedule(Self.url("new"))
        let upgrade = harness.schedule(Self.url("old"), forced: true)
        #expect(upgrade.contains(.notify(.coalesced(url: Self.url("old"), callers: 2, forced: true))))
        #expect(Self.starts(upgrade) == [Self.url("old")])
        #expect(Self.pauses(upgrade) == [Self.url("running")])
        #expect(Self.starts(harness.complete(Self.url("old"))).isEmpty)
        #expect(harness.state(Self.url("running")) == .downloading)
    }

    // MARK: - Coalescing

    @Test func joinersShareOneTransferAndOneAnswer() {
        var harness = Harness()
        #expect(Self.starts(harness.schedule(Self.url("same"))).count == 1)
        #expect(Self.starts(harness.schedule(Self.url("same"))).isEmpty)
        #expect(Self.starts(harness.schedule(Self.url("same"))).isEmpty)
        let error = DownloadError(url: Self.url("same"), reason: .httpStatus(404))
        let answers = Self.answers(harness.finish(Self.url("same"), .failure(error)))
        #expect(answers.count == 1)
        #expect(answers.first?.0 == [1, 2, 3])
        #expect(answers.first?.1 == .failure(error))
        #expect(harness.state(Self.url("same")) == nil)
    }

    @Test func oneCallerLeavingIsAnsweredAloneAndTheTransferGoesOn() {
        var harness = Harness()
        harness.schedule(Self.url("shared"))
        harness.schedule(Self.url("shared"))
        let left = harness.send(.leave(url: Self.url("shared"), caller: 1))
        #expect(Self.answers(left).map(\.0) == [[1]])
        #expect(!left.contains { if case .stop = $0 { true } else { false } })
        let last = harness.send(.leave(url: Self.url("shared"), caller: 2))
        #expect(last.contains(.stop(url: Self.url("shared"), id: harness.started[Self.url("shared")]!)))
        #expect(harness.state(Self.url("shared")) == .suspended)
    }

    // MARK: - Stops, suspension, purge

    @Test func aCancelledItemKeepsItsPartialAndRevivesFromIt() {
        let partials = Box<[String: Int64]>([:])
        var harness = Harness(partials: partials)
        harness.schedule(Self.url("f"))
        partials.value[Self.url("f")] = 500
        let cancel = harness.send(.cancel(url: Self.url("f")))
        #expect(Self.answers(cancel).first?.1 == .failure(SchedulerCore.cancelled(Self.url("f"))))
        #expect(cancel.contains(.notify(.suspended(url: Self.url("f"), bytes: 500))))
        // The transfer writes out a little more as it stops: that is what is counted.
        partials.value[Self.url("f")] = 600
        let ended = harness.finish(Self.url("f"), .failure(SchedulerCore.cancelled(Self.url("f"))))
        #expect(ended.isEmpty)
        #expect(harness.core.suspendedBytes == 600)
        #expect(Self.starts(harness.schedule(Self.url("f"))) == [Self.url("f")])
        #expect(harness.core.suspendedBytes == 0)
    }

    @Test func aLongPauseStopsTheTransferAndOnlyTheLatestPausesTimerCounts() throws {
        var harness = Harness(maxConcurrent: 1)
        harness.schedule(Self.url("p"))
        let first = try #require(Self.pauseNumbers(harness.schedule(Self.url("f1"), forced: true)).first)
        harness.complete(Self.url("f1"))
        let second = harness.schedule(Self.url("f2"), forced: true)
        #expect(Self.pauses(second) == [Self.url("p")])
        let p = harness.started[Self.url("p")]!
        #expect(harness.send(.pauseExpired(url: Self.url("p"), id: p, pause: first)).isEmpty)
        let stop = harness.send(.pauseExpired(url: Self.url("p"), id: p, pause: first + 1))
        #expect(stop == [.stop(url: Self.url("p"), id: harness.started[Self.url("p")]!)])
        #expect(harness.state(Self.url("p")) == .waiting)
        // Stopped, it waits again; it starts anew once the forced item is done.
        #expect(harness.finish(Self.url("p"), .failure(SchedulerCore.cancelled(Self.url("p"))))
            == [.notify(.queued(url: Self.url("p"), forced: false))])
        #expect(Self.starts(harness.complete(Self.url("f2"))) == [Self.url("p")])
    }

    @Test func anEarlierTransfersTimerCannotEndALaterTransfersPause() {
        var harness = Harness(maxConcurrent: 1)
        harness.schedule(Self.url("p"))
        let earlier = harness.started[Self.url("p")]!
        harness.send(.cancel(url: Self.url("p")))
        harness.finish(Self.url("p"), .failure(SchedulerCore.cancelled(Self.url("p"))))
        harness.schedule(Self.url("p"))
        #expect(harness.started[Self.url("p")] != earlier)
        #expect(Self.pauses(harness.schedule(Self.url("f"), forced: true)) == [Self.url("p")])
        // The new transfer's first pause has the number the old one's had.
        #expect(harness.send(.pauseExpired(url: Self.url("p"), id: earlier, pause: 1)).isEmpty)
        #expect(harness.state(Self.url("p")) == .paused)
    }

    @Test func aPausedItemJoinedWithForcedHoldsTheOthersBackWhileItReceives() {
        var harness = Harness(maxConcurrent: 3)
        for name in ["u1", "u2", "u3"] { harness.schedule(Self.url(name)) }
        harness.receiving(Self.url("u1"))
        // A forced item, connecting, takes u-something's slot...
        let room = harness.schedule(Self.url("f"), forced: true)
        let paused = try! #require(Self.pauses(room).first)
        harness.receiving(paused)
        // ...and that paused item, already receiving, is joined with forced: it resumes, and
        // holds back the unforced ones still running.
        let upgrade = harness.schedule(paused, forced: true)
        #expect(Self.resumes(upgrade) == [paused])
        let running = ["u1", "u2", "u3"].map { Self.url($0) }.filter { $0 != paused }
        #expect(Set(Self.pauses(upgrade)) == Set(running))
    }

    @Test func aPartialThatGainedBytesWhileStoppingCanStillBePurged() {
        let partials = Box<[String: Int64]>([:])
        var harness = Harness(suspendedCount: 1, partials: partials)
        harness.schedule(Self.url("late"))
        harness.send(.cancel(url: Self.url("late")))
        for name in ["a", "b"] {
            harness.schedule(Self.url(name))
            partials.value[Self.url(name)] = 10
            harness.send(.cancel(url: Self.url(name)))
            harness.finish(Self.url(name), .failure(SchedulerCore.cancelled(Self.url(name))))
        }
        // Over the count, the purge passed "late" by while it held nothing, and took "a".
        #expect(harness.state(Self.url("a")) == nil)
        // Its transfer wrote 10 bytes before it ended: it counts, so it must be purgeable.
        partials.value[Self.url("late")] = 10
        harness.finish(Self.url("late"), .failure(SchedulerCore.cancelled(Self.url("late"))))
        #expect(harness.core.suspendedCount == 1)
        #expect(harness.state(Self.url("late")) == .suspended)
    }

    @Test func aStoppedTransferThatFinishedFirstCompletes() throws {
        var harness = Harness(maxConcurrent: 1)
        harness.schedule(Self.url("p"))
        let number = try #require(Self.pauseNumbers(harness.schedule(Self.url("f"), forced: true)).first)
        harness.send(.pauseExpired(url: Self.url("p"), id: harness.started[Self.url("p")]!, pause: number))
        let done = harness.complete(Self.url("p"))
        #expect(done.contains(.notify(.completed(url: Self.url("p"), bytes: 1))))
        #expect(harness.state(Self.url("p")) == nil)
    }

    @Test func theOldestPartialsArePurgedAndTheNewestNever() {
        let partials = Box<[String: Int64]>([:])
        var harness = Harness(suspendedBytes: 1500, suspendedCount: 1, partials: partials)
        var discarded: [String] = []
        for (name, bytes) in [("empty", 0), ("a", 10), ("huge", 4000)] as [(String, Int64)] {
            harness.schedule(Self.url(name))
            partials.value[Self.url(name)] = bytes
            let cancel = harness.send(.cancel(url: Self.url(name)))
            for action in cancel + harness.finish(Self.url(name), .failure(SchedulerCore.cancelled(Self.url(name)))) {
                if case .discardPartial(let url) = action { discarded.append(url) }
            }
        }
        #expect(discarded == [Self.url("a")])
        #expect(harness.state(Self.url("huge")) == .suspended)
        #expect(harness.state(Self.url("empty")) == .suspended)
        #expect(harness.core.status { _ in nil }.counts[.cancelled] == 1)
    }

    @Test func aPartialPurgedWhileItsTransferStopsGoesOnlyOnceTheTransferHasEnded() {
        let partials = Box<[String: Int64]>([:])
        var harness = Harness(suspendedCount: 1, partials: partials)
        for name in ["a", "b"] {
            harness.schedule(Self.url(name))
            partials.value[Self.url(name)] = 10
        }
        harness.send(.cancel(url: Self.url("a")))
        let purge = harness.send(.cancel(url: Self.url("b")))
        #expect(purge.contains(.notify(.purged(url: Self.url("a")))))
        #expect(!purge.contains(.discardPartial(url: Self.url("a"))))
        #expect(harness.finish(Self.url("a"), .failure(SchedulerCore.cancelled(Self.url("a")))) == [.discardPartial(url: Self.url("a"))])
        #expect(harness.state(Self.url("a")) == nil)
    }

    @Test func scheduledAgainBeforeItsPurgedTransferEndedItKeepsThePartial() {
        let partials = Box<[String: Int64]>([:])
        var harness = Harness(suspendedCount: 1, partials: partials)
        for name in ["a", "b"] {
            harness.schedule(Self.url(name))
            partials.value[Self.url(name)] = 10
            harness.send(.cancel(url: Self.url(name)))
        }
        harness.schedule(Self.url("a"))
        let ended = harness.finish(Self.url("a"), .failure(SchedulerCore.cancelled(Self.url("a"))))
        #expect(!ended.contains(.discardPartial(url: Self.url("a"))))
        #expect(Self.starts(ended) == [Self.url("a")])
    }

    @Test func theCountsFollowEveryPhase() {
        var harness = Harness(maxConcurrent: 1)
        harness.schedule(Self.url("f"), forced: true)
        harness.schedule(Self.url("w"))
        harness.receiving(Self.url("f"))
        harness.send(.cancel(url: Self.url("w")))
        #expect(harness.core.status { _ in nil }.counts == [.downloading: 1, .suspended: 1])
        harness.complete(Self.url("f"))
        #expect(harness.core.status { _ in nil }.counts == [.completed: 1, .suspended: 1])
        #expect(harness.core.withTransfer.isEmpty)
    }

    /// HTTP/2 streams go on receiving when paused: one known to be such keeps its slot and is
    /// never paused; one found to be such after a pause was asked counts again, with no grace
    /// running out on it, and nothing starts in its place.
    @Test func aTransferNoPauseHoldsKeepsItsSlot() {
        let unholdable = Box<Set<TransferID>>([])
        var harness = Harness(maxConcurrent: 2, maxPerHost: 1, unholdable: unholdable)
        harness.schedule("https://h/a")
        harness.receiving("https://h/a")
        unholdable.value.insert(harness.started["https://h/a"]!)
        let forced = harness.schedule("https://h/forced", forced: true)
        #expect(!forced.contains { if case .pause = $0 { true } else { false } })
        #expect(harness.started["https://h/forced"] == nil)
        #expect(harness.state("https://h/forced") == .waiting)
        harness.complete("https://h/a")
        #expect(harness.started["https://h/forced"] != nil)

        // Found out after the pause was asked, its place given to a forced one: counted again and
        // resumed, not stopped (a Range request more); nothing else starts on its host until
        // transfers end, and its host's later streams are never taken for held.
        var late = Harness(maxConcurrent: 2, maxPerHost: 2)
        late.schedule("https://h/b")
        late.schedule("https://h/c")
        late.receiving("https://h/b")
        late.receiving("https://h/c")
        let pausing = late.schedule("https://h/forced", forced: true)
        #expect(pausing.contains { if case .pause = $0 { true } else { false } })
        let paused = ["https://h/b", "https://h/c"].first { late.state($0) == .paused }!
        let refused = late.send(.holdRefused(url: paused, id: late.started[paused]!))
        #expect(refused.contains { if case .resume(paused, _) = $0 { true } else { false } })
        #expect(!refused.contains { if case .stop = $0 { true } else { false } })
        #expect(late.state(paused) == .downloading)
        late.schedule("https://h/g")
        #expect(late.started["https://h/g"] == nil)
        late.complete("https://h/forced")
        late.complete(paused)
        #expect(late.started["https://h/g"] != nil)
        late.receiving("https://h/g")
        // A forced one now: the new stream of a host known to multiplex is not paused for it.
        let next = late.schedule("https://h/forced2", forced: true)
        #expect(!next.contains { if case .pause("https://h/g", _, _) = $0 { true } else { false } })

        // Held only because a forced one receives, its place still free: counted as running
        // again, resumed, held no more, and no pause timer of it stops it later.
        var free = Harness(maxConcurrent: 3, maxPerHost: 3)
        free.schedule("https://h/e")
        free.schedule("https://h/f")
        free.receiving("https://h/e")
        free.receiving("https://h/f")
        free.schedule("https://h/forced", forced: true)
        free.receiving("https://h/forced")
        let held = "https://h/e"
        #expect(free.state(held) == .paused)
        let resumed = free.send(.holdRefused(url: held, id: free.started[held]!))
        #expect(resumed.contains { if case .resume(held, _) = $0 { true } else { false } })
        #expect(free.state(held) == .downloading)
        #expect(free.send(.pauseExpired(url: held, id: free.started[held]!, pause: 1)).isEmpty)
        #expect(free.state(held) == .downloading)
    }
}
