import Foundation
import Synchronization
import Testing
@testable import MirrorKit

/// The scheduler's logic against a scripted transport.
@Suite("Download scheduler", .timeLimit(.minutes(1)))
struct DownloadSchedulerTests {
    let transport = FakeTransport()

    private func scheduler(
        maxConcurrent: Int = 3, maxPerHost: Int = 3, pauseGrace: Duration = .seconds(60),
        suspendedBytes: Int64 = 1 << 40, suspendedCount: Int = 100
    ) -> DownloadScheduler {
        DownloadScheduler(transport: transport, configuration: .init(
            maxConcurrent: maxConcurrent, maxPerHost: maxPerHost, pauseGrace: pauseGrace,
            suspendedBytesBudget: suspendedBytes, suspendedCountBudget: suspendedCount))
    }

    private func url(_ name: String, host: String = "a.example") -> String { "http://\(host)/\(name)" }

    /// Schedules `url` in a task of its own and returns the task.
    private func request(
        _ scheduler: DownloadScheduler, _ url: String, forced: Bool = false
    ) -> Task<FetchedFile, any Error> {
        Task { try await scheduler.schedule(url, forced: forced) }
    }

    private func state(_ scheduler: DownloadScheduler, _ url: String) async -> DownloadState? {
        await scheduler.state(of: url)
    }

    /// Items the scheduler has been told of, finished ones included. The scheduler decides an
    /// item's fate in the call that schedules it, so once all are known the counts are final
    /// until a transfer ends: no sleep is needed to see that nothing more starts.
    private func known(_ scheduler: DownloadScheduler) async -> Int {
        await scheduler.status().counts.values.reduce(0, +)
    }

    /// Returns once `events` reports `callers` callers on `url`, that is, once the last of them
    /// has joined. Subscribe before scheduling: the stream keeps what came before it is read.
    private func joined(_ events: AsyncStream<SchedulerEvent>, _ url: String, callers: Int) async {
        _ = await events.first { event in
            if case .coalesced(url: url, callers: callers, forced: _) = event { true } else { false }
        }
    }

    // MARK: - Concurrency and order

    @Test func runsUnforcedItemsUpToTheLimit() async throws {
        let scheduler = scheduler(maxConcurrent: 2)
        let tasks = (1...5).map { request(scheduler, url("\($0)")) }
        try await eventually { await known(scheduler) == 5 }
        #expect(await scheduler.status().counts == [.downloading: 2, .waiting: 3])
        try await eventually { transport.running.count == 2 }
        for name in transport.running { transport.complete(name) }
        try await eventually { transport.calls.count == 4 && transport.running.count == 2 }
        #expect(await scheduler.status().counts == [.completed: 2, .downloading: 2, .waiting: 1])
        tasks.forEach { $0.cancel() }
    }

    @Test func respectsThePerHostLimit() async throws {
        let scheduler = scheduler(maxConcurrent: 4, maxPerHost: 1)
        let tasks = ["a", "b"].flatMap { host in (1...3).map { request(scheduler, url("\($0)", host: "\(host).example")) } }
        try await eventually { await known(scheduler) == 6 }
        let status = await scheduler.status()
        #expect(status.counts == [.downloading: 2, .waiting: 4])
        #expect(Set(status.items.map { URLAuthority.of($0.url) }) == ["a.example", "b.example"])
        try await eventually { transport.running.count == 2 }
        #expect(Set(transport.running.map { URLAuthority.of($0) }) == ["a.example", "b.example"])
        tasks.forEach { $0.cancel() }
    }

    @Test func waitingItemsStartNewestFirst() async throws {
        let scheduler = scheduler(maxConcurrent: 1)
        let first = request(scheduler, url("first"))
        try await eventually { transport.running == [url("first")] }
        var others: [Task<FetchedFile, any Error>] = []
        for name in ["b", "c", "d"] {
            others.append(request(scheduler, url(name)))
            try await eventually { await state(scheduler, url(name)) == .waiting }
        }
        transport.complete(url("first"))
        _ = try await first.cancellableValue
        for expected in ["d", "c", "b"] {
            try await eventually("\(expected) runs") { transport.running == [url(expected)] }
            transport.complete(url(expected))
        }
        for task in others { _ = try await task.cancellableValue }
        #expect(transport.calls.map(\.url) == ["first", "d", "c", "b"].map { url($0) })
    }

    // MARK: - Forced

    @Test func aReceivingForcedItemHoldsRunningItemsBack() async throws {
        let scheduler = scheduler(maxConcurrent: 3)
        let previews = ["p1", "p2"].map { request(scheduler, url($0)) }
        try await eventually { transport.running.count == 2 }
        let forced = request(scheduler, url("big"), forced: true)
        try await eventually { transport.running.contains(url("big")) }
        try await eventually { Set(transport.pauses) == [url("p1"), url("p2")] }
        #expect(await state(scheduler, url("p1")) == .paused)
        // Nothing unforced starts while it receives, though a slot is free.
        let queued = request(scheduler, url("p3-later"))
        try await eventually { await state(scheduler, url("p3-later")) != nil }
        // Known means decided: given the free slot, it would show as downloading already.
        #expect(await state(scheduler, url("p3-later")) == .waiting)
        #expect(transport.fetchCount(url("p3-later")) == 0)

        transport.complete(url("big"))
        _ = try await forced.cancellableValue
        try await eventually { Set(transport.resumes) == [url("p1"), url("p2")] }
        #expect(await state(scheduler, url("p1")) == .downloading)
        try await eventually { transport.running.contains(url("p3-later")) }
        previews.forEach { $0.cancel() }
        queued.cancel()
    }

    @Test func forcedItemsRunTogetherUpToTheLimit() async throws {
        let scheduler = scheduler(maxConcurrent: 3)
        let preview = request(scheduler, url("p"))
        try await eventually { transport.running == [url("p")] }
        let forced = (1...4).map { request(scheduler, url("f\($0)"), forced: true) }
        try await eventually { await known(scheduler) == 5 }
        let status = await scheduler.status()
        #expect(status.items.count { $0.isForced && $0.state == .downloading } == 3)
        #expect(status.counts[.waiting] == 1)
        #expect(await state(scheduler, url("p")) == .paused)
        try await eventually { transport.running.count { $0.contains("/f") } == 3 }
        for name in transport.running where name.contains("/f") { transport.complete(name) }
        // The fourth takes a freed slot; the preview waits until every forced item is done.
        try await eventually { transport.running.count { $0.contains("/f") } == 1 }
        let last = try #require(transport.running.first { $0.contains("/f") })
        transport.complete(last)
        for task in forced { _ = try await task.cancellableValue }
        try await eventually { await state(scheduler, url("p")) == .downloading }
        #expect(transport.fetchCount(url("p")) == 1)
        preview.cancel()
    }

    @Test func aForcedItemThatIsNotReceivingHoldsNobodyBack() async throws {
        let transport = FakeTransport(receivesAtOnce: false)
        let scheduler = DownloadScheduler(transport: transport, configuration: .init(maxConcurrent: 2, maxPerHost: 2))
        let previews = ["p1", "p2", "p3"].map { name in Task { try await scheduler.schedule(url(name)) } }
        try await eventually { transport.running.count == 2 }
        let forced = Task { try await scheduler.schedule(url("big"), forced: true) }
        // It takes a slot from one preview, but while it connects the other goes on.
        try await eventually { transport.running.contains(url("big")) && transport.pauses.count == 1 }
        // Everything its arrival decided was done in one step, before its fetch could begin:
        // one preview paused for its slot, the other still running.
        let status = await scheduler.status()
        #expect(status.counts[.paused] == 1)
        #expect(status.counts[.downloading] == 2)
        // Receiving, it holds the other back; backing off between attempts, it lets it go again.
        transport.setReceiving(url("big"), true)
        try await eventually { transport.pauses.count == 2 }
        transport.setReceiving(url("big"), false)
        try await eventually { transport.resumes.count == 1 }
        #expect(await state(scheduler, url("big")) == .downloading)
        transport.complete(url("big"))
        _ = try await forced.cancellableValue
        try await eventually { transport.resumes.count == 2 }
        previews.forEach { $0.cancel() }
    }

    @Test func aLongPauseStopsTheTransferKeepingItsPartial() async throws {
        let scheduler = scheduler(pauseGrace: .milliseconds(30))
        let preview = request(scheduler, url("p"))
        try await eventually { transport.running == [url("p")] }
        transport.receive(url("p"), bytes: 1000)
        let forced = request(scheduler, url("big"), forced: true)
        try await eventually { transport.running == [url("big")] }
        try await eventually { await state(scheduler, url("p")) == .waiting }
        #expect(transport.pauses == [url("p")])
        transport.complete(url("big"))
        _ = try await forced.cancellableValue
        try await eventually { transport.running == [url("p")] }
        #expect(transport.calls.last == FakeTransport.Call(url: url("p"), offset: 1000))
        transport.complete(url("p"))
        _ = try await preview.cancellableValue
    }

    // MARK: - Coalescing

    @Test func manyCallersShareOneTransferAndAllGetTheFile() async throws {
        let scheduler = scheduler()
        let events = scheduler.events()
        let callers = (1...5).map { _ in request(scheduler, url("same")) }
        // Completed before the last caller joined, the transfer would leave that caller a new
        // item whose fetch nobody completes.
        await joined(events, url("same"), callers: 5)
        try await eventually { transport.running == [url("same")] }
        transport.receive(url("same"), bytes: 42)
        transport.complete(url("same"))
        for caller in callers { #expect(try await caller.cancellableValue.length == 42) }
        #expect(transport.fetchCount(url("same")) == 1)
    }

    @Test func manyCallersShareOneError() async throws {
        let scheduler = scheduler()
        let events = scheduler.events()
        let callers = (1...3).map { _ in request(scheduler, url("bad")) }
        await joined(events, url("bad"), callers: 3)
        try await eventually { transport.running == [url("bad")] }
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
        try await eventually { transport.running.count == 2 }
        let upgraded = request(scheduler, url("item"), forced: true)
        try await eventually { transport.pauses == [url("other")] }
        #expect(transport.fetchCount(url("item")) == 1)
        #expect(await scheduler.status().items.first { $0.url == url("item") }?.isForced == true)
        transport.complete(url("item"))
        _ = try await (item.cancellableValue, upgraded.cancellableValue)
        try await eventually { transport.resumes == [url("other")] }
        other.cancel()
    }

    // MARK: - Soft cancel and purge

    @Test func aCancelledItemIsSuspendedAndRevivedFromItsPartial() async throws {
        let scheduler = scheduler()
        let first = request(scheduler, url("f"))
        try await eventually { transport.running == [url("f")] }
        transport.receive(url("f"), bytes: 500)
        await scheduler.cancel(url("f"))
        let error = await #expect(throws: DownloadError.self) { _ = try await first.cancellableValue }
        #expect(error?.isCancellation == true)
        #expect(await state(scheduler, url("f")) == .suspended)
        try await eventually { transport.running.isEmpty }
        #expect(transport.discarded.isEmpty)

        let again = request(scheduler, url("f"))
        try await eventually { transport.running == [url("f")] }
        #expect(transport.calls.last == FakeTransport.Call(url: url("f"), offset: 500))
        transport.receive(url("f"), bytes: 500)
        transport.complete(url("f"))
        #expect(try await again.cancellableValue.length == 1000)
    }

    @Test(arguments: [false, true])
    func aCancelledForcedItemRunsWhenScheduledAgain(_ forcedAgain: Bool) async throws {
        let scheduler = scheduler()
        let first = request(scheduler, url("big"), forced: true)
        try await eventually { transport.running == [url("big")] }
        transport.receive(url("big"), bytes: 64)
        await scheduler.cancel(url("big"))
        _ = try? await first.cancellableValue
        try await eventually { transport.running.isEmpty }
        let again = request(scheduler, url("big"), forced: forcedAgain)
        try await eventually { transport.running == [url("big")] }
        #expect(await scheduler.status().items.first?.isForced == forcedAgain)
        transport.complete(url("big"))
        #expect(try await again.cancellableValue.length == 64)
    }

    @Test func theSnapshotCountsWaitingItemsWithoutListingThem() async throws {
        let scheduler = scheduler(maxConcurrent: 2, maxPerHost: 2)
        let requests = (0..<50).map { request(scheduler, url("w\($0)")) }
        // Two running says nothing of the other 48 requests, which arrive in their own time.
        try await eventually { await known(scheduler) == 50 }
        let status = await scheduler.status()
        #expect(status.counts[.waiting] == 48)
        #expect(status.items.count == 2)
        #expect(status.items.allSatisfy { $0.state == .downloading })
        requests.forEach { $0.cancel() }
    }

    @Test func aFreshPauseIsNotCutShortByAnEarlierOnesTimer() async throws {
        // The pause timers are fired by hand: which one fires when is the test's choice, not the
        // machine's, however loaded it is.
        let timers = ManualTimers()
        let scheduler = DownloadScheduler(
            transport: transport, configuration: .init(maxConcurrent: 3, maxPerHost: 3, pauseGrace: .seconds(10)),
            sleep: { _ in try await timers.wait() })
        let preview = request(scheduler, url("p"))
        try await eventually { transport.running == [url("p")] }
        let first = request(scheduler, url("f1"), forced: true)
        try await eventually { transport.pauses.count == 1 && timers.count == 1 }
        transport.complete(url("f1"))
        _ = try await first.cancellableValue
        try await eventually { transport.resumes == [url("p")] }
        let second = request(scheduler, url("f2"), forced: true)
        try await eventually { transport.pauses.count == 2 && timers.count == 2 }
        // The first pause's timer was cancelled when that pause ended: there is nothing left to
        // fire, so it cannot end the second (were it not cancelled, its stale number would be
        // refused: SchedulerCoreTests checks that).
        #expect(!timers.fire(0))
        #expect(await state(scheduler, url("p")) == .paused)
        #expect(transport.fetchCount(url("p")) == 1)
        // The second pause's own grace does: the transfer is stopped, to resume later by Range.
        timers.fire(1)
        try await eventually { await state(scheduler, url("p")) == .waiting }
        transport.complete(url("f2"))
        _ = try await second.cancellableValue
        preview.cancel()
    }

    @Test func suspendedItemsNeverRestartOnTheirOwn() async throws {
        let scheduler = scheduler(maxConcurrent: 1)
        let running = request(scheduler, url("running"))
        // The one slot must be taken before the second request arrives: tasks start in any order.
        try await eventually { transport.running == [url("running")] }
        let waiting = request(scheduler, url("waiting"))
        try await eventually { await state(scheduler, url("waiting")) == .waiting }
        await scheduler.cancel(url("waiting"))
        _ = try? await waiting.cancellableValue
        transport.complete(url("running"))
        _ = try await running.cancellableValue
        // The freed slot was given away, or not, while the scheduler handled that completion,
        // before it answered; a restart would show here already.
        #expect(await state(scheduler, url("waiting")) == .suspended)
        #expect(await scheduler.status().counts[.downloading] == nil)
        #expect(transport.fetchCount(url("waiting")) == 0)
    }

    @Test func suspendedPartialsBeyondTheCountBudgetArePurgedOldestFirst() async throws {
        let scheduler = scheduler(suspendedCount: 2)
        for name in ["a", "b", "c"] {
            let task = request(scheduler, url(name))
            try await eventually { transport.running.contains(url(name)) }
            transport.receive(url(name), bytes: 10)
            await scheduler.cancel(url(name))
            _ = try? await task.cancellableValue
        }
        try await eventually { transport.discarded == [url("a")] }
        #expect(await state(scheduler, url("a")) == nil)
        #expect(await state(scheduler, url("b")) == .suspended)
        #expect(await scheduler.status().counts[.cancelled] == 1)
    }

    @Test func suspendedPartialsBeyondTheByteBudgetArePurged() async throws {
        let scheduler = scheduler(suspendedBytes: 1500)
        for (name, bytes) in [("a", 1000), ("b", 1000)] as [(String, Int64)] {
            let task = request(scheduler, url(name))
            try await eventually { transport.running.contains(url(name)) }
            transport.receive(url(name), bytes: bytes)
            await scheduler.cancel(url(name))
            _ = try? await task.cancellableValue
        }
        try await eventually { transport.discarded == [url("a")] }
        #expect(await state(scheduler, url("b")) == .suspended)
    }

    @Test func itemsWithoutBytesDoNotCountAndTheNewestIsNeverPurged() async throws {
        let scheduler = scheduler(suspendedBytes: 1500, suspendedCount: 1)
        for (name, bytes) in [("empty", 0), ("a", 10), ("huge", 4000)] as [(String, Int64)] {
            let task = request(scheduler, url(name))
            try await eventually { transport.running.contains(url(name)) }
            transport.receive(url(name), bytes: bytes)
            await scheduler.cancel(url(name))
            _ = try? await task.cancellableValue
        }
        // "a" goes; "huge" is over the byte budget alone but is the newest; "empty" holds nothing.
        try await eventually { transport.discarded == [url("a")] }
        #expect(await state(scheduler, url("huge")) == .suspended)
        #expect(await state(scheduler, url("empty")) == .suspended)
    }

    @Test func theLastCallerLeavingSuspendsTheItem() async throws {
        let scheduler = scheduler()
        let only = request(scheduler, url("lonely"))
        try await eventually { transport.running == [url("lonely")] }
        only.cancel()
        try await eventually { await state(scheduler, url("lonely")) == .suspended }
        #expect(transport.running.isEmpty)
    }

    @Test func oneCallerLeavingDoesNotStopTheOthers() async throws {
        let scheduler = scheduler()
        let events = scheduler.events()
        let leaving = request(scheduler, url("shared"))
        let staying = request(scheduler, url("shared"))
        await joined(events, url("shared"), callers: 2)
        try await eventually { transport.running == [url("shared")] }
        leaving.cancel()
        // The scheduler answers the one who left while handling the leave, after any stop
        // that leave decided: once it is answered, the transfer's fate is known.
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
        let third = scheduler.events()
        let task = request(scheduler, url("e"))
        try await eventually { transport.running == [url("e")] }
        let joining = request(scheduler, url("e"))
        await joined(third, url("e"), callers: 2)
        transport.complete(url("e"))
        _ = try await (task.cancellableValue, joining.cancellableValue)
        scheduler.finishEvents()
        var streams: [[SchedulerEvent]] = []
        for stream in [first, second] {
            var events: [SchedulerEvent] = []
            for await event in stream { events.append(event) }
            streams.append(events)
        }
        let expected: [SchedulerEvent] = [
            .queued(url: url("e"), forced: false),
            .started(url: url("e"), forced: false, offset: 0),
            .coalesced(url: url("e"), callers: 2, forced: false),
            .completed(url: url("e"), bytes: 0),
        ]
        #expect(streams == [expected, expected])
    }

    @Test func theStatusCountsEveryStateAndListsItems() async throws {
        let scheduler = scheduler(maxConcurrent: 1)
        let done = request(scheduler, url("done"))
        try await eventually { transport.running == [url("done")] }
        transport.complete(url("done"))
        _ = try await done.cancellableValue
        let running = request(scheduler, url("running"))
        try await eventually { transport.running == [url("running")] }
        let waiting = request(scheduler, url("waiting"))
        try await eventually { await state(scheduler, url("waiting")) == .waiting }
        let status = await scheduler.status()
        #expect(status.counts == [.completed: 1, .downloading: 1, .waiting: 1])
        #expect(status.summaryLine == "waiting 1, downloading 1, completed 1")
        #expect(status.items.map(\.url) == [url("running")])
        running.cancel()
        waiting.cancel()
    }
}
