import Foundation
import Synchronization
import Testing
@testable import MirrorKit

/// The scheduler's logic against a scripted transport. The transport and the timers hand
/// everything over synchronously and requests are made with `Task.immediate`, so after
/// `settled()` every consequence of what the test did has been carried out: the tests step
/// the scheduler and never poll.
@Suite("Download scheduler", .timeLimit(.minutes(1)))
struct DownloadSchedulerTests {
    let transport = FakeTransport()

    private func scheduler(
        maxConcurrent: Int = 3, maxPerHost: Int = 3, pauseGrace: Duration = .seconds(60),
        suspendedBytes: Int64 = 1 << 40, suspendedCount: Int = 100, timers: ManualTimers = ManualTimers()
    ) -> DownloadScheduler {
        DownloadScheduler(transport: transport, configuration: .init(
            maxConcurrent: maxConcurrent, maxPerHost: maxPerHost, pauseGrace: pauseGrace,
            suspendedBytesBudget: suspendedBytes, suspendedCountBudget: suspendedCount), timers: timers.starter)
    }

    private func url(_ name: String, host: String = "a.example") -> String { "http://\(host)/\(name)" }

    /// Schedules `url` in a task of its own and returns the task; the scheduler has the request
    /// once this returns.
    private func request(
        _ scheduler: DownloadScheduler, _ url: String, forced: Bool = false
    ) -> Task<FetchedFile, any Error> {
        Task.immediate { try await scheduler.schedule(url, forced: forced) }
    }

    private func state(_ scheduler: DownloadScheduler, _ url: String) async -> DownloadState? {
        await scheduler.state(of: url)
    }

    // MARK: - Concurrency and order

    @Test func runsUnforcedItemsUpToTheLimit() async throws {
        let scheduler = scheduler(maxConcurrent: 2)
        let tasks = (1...5).map { request(scheduler, url("\($0)")) }
        await scheduler.settled()
        #expect(await scheduler.status().counts == [.downloading: 2, .waiting: 3])
        #expect(transport.running.count == 2)
        for name in transport.running { transport.complete(name) }
        await scheduler.settled()
        #expect(transport.calls.count == 4 && transport.running.count == 2)
        #expect(await scheduler.status().counts == [.completed: 2, .downloading: 2, .waiting: 1])
        tasks.forEach { $0.cancel() }
    }

    @Test func respectsThePerHostLimit() async throws {
        let scheduler = scheduler(maxConcurrent: 4, maxPerHost: 1)
        let tasks = ["a", "b"].flatMap { host in (1...3).map { request(scheduler, url("\($0)", host: "\(host).example")) } }
        let status = await scheduler.status()
        #expect(status.counts == [.downloading: 2, .waiting: 4])
        #expect(Set(status.items.map { URLAuthority.of($0.url) }) == ["a.example", "b.example"])
        #expect(Set(transport.running.map { URLAuthority.of($0) }) == ["a.example", "b.example"])
        tasks.forEach { $0.cancel() }
    }

    @Test func waitingItemsStartNewestFirst() async throws {
        let scheduler = scheduler(maxConcurrent: 1)
        let first = request(scheduler, url("first"))
        let others = ["b", "c", "d"].map { request(scheduler, url($0)) }
        await scheduler.settled()
        #expect(transport.running == [url("first")])
        for (name, next) in [("first", "d"), ("d", "c"), ("c", "b")] {
            transport.complete(url(name))
            await scheduler.settled()
            #expect(transport.running == [url(next)], "after \(name)")
        }
        transport.complete(url("b"))
        _ = try await first.cancellableValue
        for task in others { _ = try await task.cancellableValue }
        #expect(transport.calls.map(\.url) == ["first", "d", "c", "b"].map { url($0) })
    }

    // MARK: - Forced

    @Test func aReceivingForcedItemHoldsRunningItemsBack() async throws {
        let scheduler = scheduler(maxConcurrent: 3)
        let previews = ["p1", "p2"].map { request(scheduler, url($0)) }
        let forced = request(scheduler, url("big"), forced: true)
        await scheduler.settled()
        #expect(transport.running.contains(url("big")))
        #expect(Set(transport.pauses) == [url("p1"), url("p2")])
        #expect(await state(scheduler, url("p1")) == .paused)
        // Nothing unforced starts while it receives, though a slot is free.
        let queued = request(scheduler, url("p3-later"))
        #expect(await state(scheduler, url("p3-later")) == .waiting)
        #expect(transport.fetchCount(url("p3-later")) == 0)

        transport.complete(url("big"))
        _ = try await forced.cancellableValue
        await scheduler.settled()
        #expect(Set(transport.resumes) == [url("p1"), url("p2")])
        #expect(await state(scheduler, url("p1")) == .downloading)
        #expect(transport.running.contains(url("p3-later")))
        previews.forEach { $0.cancel() }
        queued.cancel()
    }

    @Test func forcedItemsRunTogetherUpToTheLimit() async throws {
        let scheduler = scheduler(maxConcurrent: 3)
        let preview = request(scheduler, url("p"))
        let forced = (1...4).map { request(scheduler, url("f\($0)"), forced: true) }
        let status = await scheduler.status()
        #expect(status.items.count { $0.isForced && $0.state == .downloading } == 3)
        #expect(status.counts[.waiting] == 1)
        #expect(await state(scheduler, url("p")) == .paused)
        #expect(transport.running.count { $0.contains("/f") } == 3)
        for name in transport.running where name.contains("/f") { transport.complete(name) }
        await scheduler.settled()
        // The fourth takes a freed slot; the preview waits until every forced item is done.
        #expect(transport.running.count { $0.contains("/f") } == 1)
        #expect(await state(scheduler, url("p")) == .paused)
        let last = try #require(transport.running.first { $0.contains("/f") })
        transport.complete(last)
        for task in forced { _ = try await task.cancellableValue }
        #expect(await state(scheduler, url("p")) == .downloading)
        #expect(transport.fetchCount(url("p")) == 1)
        preview.cancel()
    }

    @Test func aForcedItemThatIsNotReceivingHoldsNobodyBack() async throws {
        let transport = FakeTransport(receivesAtOnce: false)
        let scheduler = DownloadScheduler(
            transport: transport, configuration: .init(maxConcurrent: 2, maxPerHost: 2), timers: ManualTimers().starter)
        let previews = ["p1", "p2", "p3"].map { name in Task.immediate { try await scheduler.schedule(url(name)) } }
        await scheduler.settled()
        #expect(transport.running.count == 2)
        let forced = Task.immediate { try await scheduler.schedule(url("big"), forced: true) }
        // It takes a slot from one preview, but while it connects the other goes on.
        let status = await scheduler.status()
        #expect(transport.running.contains(url("big")) && transport.pauses.count == 1)
        #expect(status.counts[.paused] == 1)
        #expect(status.counts[.downloading] == 2)
        // Receiving, it holds the other back; backing off between attempts, it lets it go again.
        transport.setReceiving(url("big"), true)
        await scheduler.settled()
        #expect(transport.pauses.count == 2)
        transport.setReceiving(url("big"), false)
        await scheduler.settled()
        #expect(transport.resumes.count == 1)
        #expect(await state(scheduler, url("big")) == .downloading)
        transport.complete(url("big"))
        _ = try await forced.cancellableValue
        await scheduler.settled()
        #expect(transport.resumes.count == 2)
        previews.forEach { $0.cancel() }
    }

    /// The engine keeps a pause until it is lifted (it may come before the transfer starts, or
    /// between two attempts): one left on a transfer that ended while held was kept for the rest
    /// of the run, a set growing with the files (a tag of 100,000 images: some 16,000 ids).
    @Test func aTransferThatEndsWhileHeldHasItsPauseLifted() async throws {
        let scheduler = scheduler(maxConcurrent: 2)
        let preview = request(scheduler, url("p"))
        await scheduler.settled()
        let forced = request(scheduler, url("big"), forced: true)
        await scheduler.settled()
        #expect(transport.pauses == [url("p")])
        // Its body had all arrived when the pause came: it ends held.
        transport.complete(url("p"))
        _ = try await preview.cancellableValue
        await scheduler.settled()
        #expect(transport.resumes == [url("p")])
        transport.complete(url("big"))
        _ = try await forced.cancellableValue
        await scheduler.settled()
        #expect(transport.resumes == [url("p")], "nothing else was held")
    }

    @Test func aLongPauseStopsTheTransferKeepingItsPartial() async throws {
        let timers = ManualTimers()
        let scheduler = scheduler(pauseGrace: .milliseconds(30), timers: timers)
        let preview = request(scheduler, url("p"))
        await scheduler.settled()
        transport.receive(url("p"), bytes: 1000)
        let forced = request(scheduler, url("big"), forced: true)
        await scheduler.settled()
        #expect(transport.pauses == [url("p")])
        #expect(timers.fire(0))
        await scheduler.settled()
        #expect(transport.running == [url("big")])
        #expect(await state(scheduler, url("p")) == .waiting)
        // Stopped while held: its pause is lifted too (a transfer in a retry's wait, stopped
        // there, would otherwise leave it in the engine for the rest of the run).
        #expect(transport.resumes == [url("p")])
        transport.complete(url("big"))
        _ = try await forced.cancellableValue
        await scheduler.settled()
        #expect(transport.running == [url("p")])
        #expect(transport.calls.last == FakeTransport.Call(url: url("p"), offset: 1000))
        transport.complete(url("p"))
        _ = try await preview.cancellableValue
    }

    @Test func aRevalidationRestartedAfterALongPauseIsStillConditionalAndNothingOfItOutlivesIt() async throws {
        let timers = ManualTimers()
        let scheduler = scheduler(pauseGrace: .milliseconds(30), timers: timers)
        let held = HeldVersion(etag: "\"v1\"", lastModified: nil)
        let preview = Task.immediate { try await scheduler.schedule(url("p"), held: held) }
        await scheduler.settled()
        transport.receive(url("p"), bytes: 1000)
        let forced = request(scheduler, url("big"), forced: true)
        await scheduler.settled()
        #expect(timers.fire(0))
        await scheduler.settled()
        transport.complete(url("big"))
        _ = try await forced.cancellableValue
        await scheduler.settled()
        // Stopped past its grace and started again: the copy held is asked after both times.
        #expect(transport.calls.filter { $0.url == url("p") }.map(\.held) == [held, held])
        transport.complete(url("p"))
        _ = try await preview.cancellableValue
        // The held version lived in the item: once it ends, the scheduler keeps nothing of it.
        await scheduler.settled()
        #expect(await scheduler.status().items.isEmpty)
        let again = request(scheduler, url("p"))
        await scheduler.settled()
        #expect(transport.calls.count { $0.url == url("p") } == 3)
        #expect(transport.calls.last?.held == nil, "a new request without a held copy is not conditional")
        transport.complete(url("p"))
        _ = try await again.cancellableValue
    }

    @Test func aPauseOnTheRealClockEndsAfterItsGrace() async throws {
        let scheduler = DownloadScheduler(
            transport: transport, configuration: .init(maxConcurrent: 3, maxPerHost: 3, pauseGrace: .milliseconds(300)))
        let preview = request(scheduler, url("p"))
        // Before the pause begins: the stop cannot come sooner than the grace after this.
        let beforePause = ContinuousClock.now
        let forced = request(scheduler, url("big"), forced: true)
        // The one wait on real time: the default timers sleep out the grace (on a machine busy
        // with the rest of the suite, the timer's task may wait long for a thread).
        try await eventually(within: .seconds(45)) { await state(scheduler, url("p")) == .waiting }
        #expect(ContinuousClock.now - beforePause >= .milliseconds(300), "stopped before its grace was out")
        transport.complete(url("big"))
        _ = try await forced.cancellableValue
        // The answer comes before the rest of that step (the preview's restart) is carried out.
        await scheduler.settled()
        transport.complete(url("p"))
        _ = try await preview.cancellableValue
        #expect(transport.fetchCount(url("p")) == 2)
    }

    @Test func aStoppedPauseTimerLetsGoOfItsWorkAndOneLeftAloneFires() async throws {
        // The default timers (dispatch sources): a stopped one keeps nothing of its work.
        final class Flag: Sendable {
            let value = Atomic<Bool>(false)
        }
        final class Work: Sendable {
            let released: Flag
            init(_ released: Flag) { self.released = released }
            deinit { released.value.store(true, ordering: .relaxed) }
        }
        let released = Flag()
        do {
            let work = Work(released)
            let stopper = DownloadScheduler.sharedTimers(.seconds(3600)) { _ = work }
            stopper.stop()
        }
        try await eventually("the stopped timer's work is released", within: .seconds(5)) { released.value.load(ordering: .relaxed) }
        let fired = Flag()
        _ = DownloadScheduler.sharedTimers(.milliseconds(20)) { fired.value.store(true, ordering: .relaxed) }
        try await eventually("a timer left alone fires", within: .seconds(20)) { fired.value.load(ordering: .relaxed) }
    }

    @Test func pauseTimersFireInTheOrderOfTheirDeadlinesAndAStoppedOneNever() async throws {
        let timers = PauseTimers()
        let fired = Mutex<[String]>([])
        _ = timers.start(after: .milliseconds(300)) { fired.withLock { $0.append("late") } }
        _ = timers.start(after: .milliseconds(50)) { fired.withLock { $0.append("early") } }
        let stopped = timers.start(after: .milliseconds(100)) { fired.withLock { $0.append("stopped") } }
        stopped.stop()
        #expect(timers.count == 2, "a stopped timer holds nothing")
        try await eventually("both fire", within: .seconds(30)) { fired.withLock { $0.count } == 2 }
        #expect(fired.withLock { $0 } == ["early", "late"])
        #expect(timers.count == 0)
    }

    // MARK: - Coalescing

    @Test func manyCallersShareOneTransferAndAllGetTheFile() async throws {
        let scheduler = scheduler()
        let callers = (1...5).map { _ in request(scheduler, url("same")) }
        await scheduler.settled()
        #expect(transport.running == [url("same")])
        transport.receive(url("same"), bytes: 42)
        transport.complete(url("same"))
        for caller in callers { #expect(try await caller.cancellableValue.length == 42) }
        #expect(transport.fetchCount(url("same")) == 1)
    }

    @Test func manyCallersShareOneError() async throws {
        let scheduler = scheduler()
        let callers = (1...3).map { _ in request(scheduler, url("bad")) }
        await scheduler.settled()
        #expect(transport.running == [url("bad")])
        transport.fail(url("bad"), .httpStatus(404))
        for caller in callers {
            await #expect(throws: DownloadError.self) { _ = try await caller.cancellableValue }
        }
        #expect(transport.fetchCount(url("bad")) == 1)
        #expect(await scheduler.status().counts[.failed] == 1)
    }

    @Test func joiningWithForcedUpgradesTheItem() async throws {
        let scheduler = scheduler(maxConcurrent: 2)
        let other = request(scheduler, url("other"))
        let item = request(scheduler, url("item"))
        let upgraded = request(scheduler, url("item"), forced: true)
        await scheduler.settled()
        #expect(transport.pauses == [url("other")])
        #expect(transport.fetchCount(url("item")) == 1)
        #expect(await scheduler.status().items.first { $0.url == url("item") }?.isForced == true)
        // Receiving since it started unforced (unposted then), and heard from the join on:
        // backing off between attempts, it lets the other go; receiving again, it holds it back.
        transport.setReceiving(url("item"), false)
        await scheduler.settled()
        #expect(transport.resumes == [url("other")])
        transport.setReceiving(url("item"), true)
        await scheduler.settled()
        #expect(transport.pauses == [url("other"), url("other")])
        transport.complete(url("item"))
        _ = try await (item.cancellableValue, upgraded.cancellableValue)
        await scheduler.settled()
        #expect(transport.resumes == [url("other"), url("other")])
        other.cancel()
    }

    /// A host throttled down to one transfer gets its second as soon as its limit goes up, with no
    /// other event to make the scheduler look (a long transfer running alone on it): its transfers'
    /// words on receiving, which used to make it look, are no longer sent.
    @Test func aRaisedHostLimitStartsTheItemsHeldBackForItAtOnce() async throws {
        transport.setLimit(1, forHost: "a.example")
        let scheduler = scheduler(maxConcurrent: 4, maxPerHost: 4)
        let requests = ["long", "next", "later"].map { request(scheduler, url($0)) }
        await scheduler.settled()
        #expect(transport.running.count == 1)
        transport.setLimit(2, forHost: "a.example")
        await scheduler.settled()
        #expect(transport.running.count == 2)
        transport.setLimit(4, forHost: "a.example")
        await scheduler.settled()
        #expect(transport.running.count == 3)
        requests.forEach { $0.cancel() }
    }

    /// An unforced transfer's word on receiving is not sent (it changes no decision): one joined
    /// with `forced` while it receives must still hold the others back from the join on.
    @Test func anUnforcedTransferJoinedWithForcedWhileReceivingHoldsTheOthersBack() async throws {
        let scheduler = scheduler(maxConcurrent: 2)
        let other = request(scheduler, url("other"))
        let item = request(scheduler, url("item"))
        await scheduler.settled()
        #expect(Set(transport.running) == [url("other"), url("item")])
        #expect(transport.pauses.isEmpty)
        let upgraded = request(scheduler, url("item"), forced: true)
        await scheduler.settled()
        #expect(transport.pauses == [url("other")])
        transport.setReceiving(url("item"), false)
        await scheduler.settled()
        #expect(transport.resumes == [url("other")])
        transport.complete(url("item"))
        _ = try await (item.cancellableValue, upgraded.cancellableValue)
        other.cancel()
    }

    // MARK: - Soft cancel and purge

    @Test func aCancelledItemIsSuspendedAndRevivedFromItsPartial() async throws {
        let scheduler = scheduler()
        let first = request(scheduler, url("f"))
        await scheduler.settled()
        transport.receive(url("f"), bytes: 500)
        await scheduler.cancel(url("f"))
        let error = await #expect(throws: DownloadError.self) { _ = try await first.cancellableValue }
        #expect(error?.isCancellation == true)
        #expect(await state(scheduler, url("f")) == .suspended)
        #expect(transport.running.isEmpty)
        #expect(transport.discarded.isEmpty)

        let again = request(scheduler, url("f"))
        await scheduler.settled()
        #expect(transport.running == [url("f")])
        #expect(transport.calls.last == FakeTransport.Call(url: url("f"), offset: 500))
        transport.receive(url("f"), bytes: 500)
        transport.complete(url("f"))
        #expect(try await again.cancellableValue.length == 1000)
    }

    @Test(arguments: [false, true])
    func aCancelledForcedItemRunsWhenScheduledAgain(_ forcedAgain: Bool) async throws {
        let scheduler = scheduler()
        let first = request(scheduler, url("big"), forced: true)
        await scheduler.settled()
        transport.receive(url("big"), bytes: 64)
        await scheduler.cancel(url("big"))
        _ = try? await first.cancellableValue
        #expect(transport.running.isEmpty)
        let again = request(scheduler, url("big"), forced: forcedAgain)
        await scheduler.settled()
        #expect(transport.running == [url("big")])
        #expect(await scheduler.status().items.first?.isForced == forcedAgain)
        transport.complete(url("big"))
        #expect(try await again.cancellableValue.length == 64)
    }

    @Test func theSnapshotCountsWaitingItemsWithoutListingThem() async throws {
        let scheduler = scheduler(maxConcurrent: 2, maxPerHost: 2)
        let requests = (0..<50).map { request(scheduler, url("w\($0)")) }
        let status = await scheduler.status()
        #expect(status.counts[.waiting] == 48)
        #expect(status.items.count == 2)
        #expect(status.items.allSatisfy { $0.state == .downloading })
        requests.forEach { $0.cancel() }
    }

    @Test func aFreshPauseIsNotCutShortByAnEarlierOnesTimer() async throws {
        let timers = ManualTimers()
        let scheduler = scheduler(pauseGrace: .seconds(10), timers: timers)
        let preview = request(scheduler, url("p"))
        let first = request(scheduler, url("f1"), forced: true)
        await scheduler.settled()
        #expect(transport.pauses.count == 1 && timers.count == 1)
        transport.complete(url("f1"))
        _ = try await first.cancellableValue
        await scheduler.settled()
        #expect(transport.resumes == [url("p")])
        let second = request(scheduler, url("f2"), forced: true)
        await scheduler.settled()
        #expect(transport.pauses.count == 2 && timers.count == 2)
        // The first pause's timer was stopped when that pause ended: there is nothing left to
        // fire, so it cannot end the second (were it not stopped, its stale number would be
        // refused: SchedulerCoreTests checks that).
        #expect(!timers.fire(0))
        #expect(await state(scheduler, url("p")) == .paused)
        #expect(transport.fetchCount(url("p")) == 1)
        // The second pause's own grace does: the transfer is stopped, to resume later by Range.
        #expect(timers.fire(1))
        #expect(await state(scheduler, url("p")) == .waiting)
        transport.complete(url("f2"))
        _ = try await second.cancellableValue
        preview.cancel()
    }

    @Test func suspendedItemsNeverRestartOnTheirOwn() async throws {
        let scheduler = scheduler(maxConcurrent: 1)
        let running = request(scheduler, url("running"))
        let waiting = request(scheduler, url("waiting"))
        #expect(await state(scheduler, url("waiting")) == .waiting)
        await scheduler.cancel(url("waiting"))
        _ = try? await waiting.cancellableValue
        transport.complete(url("running"))
        _ = try await running.cancellableValue
        #expect(await state(scheduler, url("waiting")) == .suspended)
        #expect(await scheduler.status().counts[.downloading] == nil)
        #expect(transport.fetchCount(url("waiting")) == 0)
    }

    /// Runs each of `items` in turn: scheduled, given its bytes, cancelled.
    private func suspendEach(_ items: [(String, Int64)], on scheduler: DownloadScheduler) async {
        for (name, bytes) in items {
            let task = request(scheduler, url(name))
            await scheduler.settled()
            #expect(transport.running.contains(url(name)))
            transport.receive(url(name), bytes: bytes)
            await scheduler.cancel(url(name))
            _ = try? await task.cancellableValue
        }
    }

    @Test func suspendedPartialsBeyondTheCountBudgetArePurgedOldestFirst() async throws {
        let scheduler = scheduler(suspendedCount: 2)
        await suspendEach([("a", 10), ("b", 10), ("c", 10)], on: scheduler)
        #expect(transport.discarded == [url("a")])
        #expect(await state(scheduler, url("a")) == nil)
        #expect(await state(scheduler, url("b")) == .suspended)
        #expect(await scheduler.status().counts[.cancelled] == 1)
    }

    @Test func suspendedPartialsBeyondTheByteBudgetArePurged() async throws {
        let scheduler = scheduler(suspendedBytes: 1500)
        await suspendEach([("a", 1000), ("b", 1000)], on: scheduler)
        #expect(transport.discarded == [url("a")])
        #expect(await state(scheduler, url("b")) == .suspended)
    }

    @Test func itemsWithoutBytesDoNotCountAndTheNewestIsNeverPurged() async throws {
        let scheduler = scheduler(suspendedBytes: 1500, suspendedCount: 1)
        await suspendEach([("empty", 0), ("a", 10), ("huge", 4000)], on: scheduler)
        // "a" goes; "huge" is over the byte budget alone but is the newest; "empty" holds nothing.
        #expect(transport.discarded == [url("a")])
        #expect(await state(scheduler, url("huge")) == .suspended)
        #expect(await state(scheduler, url("empty")) == .suspended)
    }

    @Test func theLastCallerLeavingSuspendsTheItem() async throws {
        let scheduler = scheduler()
        let only = request(scheduler, url("lonely"))
        await scheduler.settled()
        #expect(transport.running == [url("lonely")])
        only.cancel()
        #expect(await state(scheduler, url("lonely")) == .suspended)
        #expect(transport.running.isEmpty)
    }

    /// A caller cancelled before it calls posts its leave before its arrival: the path of a
    /// caller whose leave overtakes its request.
    @Test func aCallerThatLeavesBeforeItArrivesIsAnsweredAndLeavesNothing() async throws {
        let scheduler = scheduler()
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await scheduler.schedule(url("never"))
        }
        let error = await #expect(throws: DownloadError.self) { _ = try await cancelledFirst.cancellableValue }
        #expect(error?.isCancellation == true)
        #expect(await state(scheduler, url("never")) == nil)
        #expect(transport.calls.isEmpty)
    }

    @Test func oneCallerLeavingDoesNotStopTheOthers() async throws {
        let scheduler = scheduler()
        let leaving = request(scheduler, url("shared"))
        let staying = request(scheduler, url("shared"))
        await scheduler.settled()
        #expect(transport.running == [url("shared")])
        leaving.cancel()
        let error = await #expect(throws: DownloadError.self) { _ = try await leaving.cancellableValue }
        #expect(error?.isCancellation == true)
        #expect(await state(scheduler, url("shared")) == .downloading)
        #expect(transport.running == [url("shared")])
        transport.complete(url("shared"))
        _ = try await staying.cancellableValue
    }

    // MARK: - Observability

    @Test func everyObserverSeesEveryEvent() async throws {
        let scheduler = scheduler()
        let first = scheduler.events()
        let second = scheduler.events()
        let task = request(scheduler, url("e"))
        let joining = request(scheduler, url("e"))
        await scheduler.settled()
        transport.complete(url("e"))
        _ = try await (task.cancellableValue, joining.cancellableValue)
        await scheduler.settled()
        scheduler.finishEvents()
        var streams: [[SchedulerEvent]] = []
        for stream in [first, second] {
            var events: [SchedulerEvent] = []
            for await event in stream { events.append(event) }
            streams.append(events)
        }
        let expected: [SchedulerEvent] = [
            .queued(url: url("e"), forced: false),
            .started(url: url("e"), forced: false),
            .coalesced(url: url("e"), callers: 2, forced: false),
            .completed(url: url("e"), bytes: 0),
        ]
        #expect(streams == [expected, expected])
    }

    @Test func theStatusCountsEveryStateAndListsItems() async throws {
        let scheduler = scheduler(maxConcurrent: 1)
        let done = request(scheduler, url("done"))
        await scheduler.settled()
        transport.complete(url("done"))
        _ = try await done.cancellableValue
        let running = request(scheduler, url("running"))
        let waiting = request(scheduler, url("waiting"))
        let status = await scheduler.status()
        #expect(status.counts == [.completed: 1, .downloading: 1, .waiting: 1])
        #expect(status.summaryLine == "waiting 1, downloading 1, completed 1")
        #expect(status.items.map(\.url) == [url("running")])
        running.cancel()
        waiting.cancel()
    }
}
