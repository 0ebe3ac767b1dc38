import Dispatch
import Synchronization
import Testing
@testable import MirrorKit

/// Calls that block on the disk run on threads of their own, taken from one line: as many at
/// once as there are threads, never more, and none held behind a long one while a thread is free.
@Suite("Blocking calls: threads of their own, one line", .timeLimit(.minutes(1)))
struct BlockingThreadsTests {
    @Test func noMoreThanTheLimitRunAtOnceAndTheRestRunWhenAThreadIsFree() async throws {
        let threads = BlockingThreads(limit: 3)
        let gate = Gate()
        let counts = Counts()
        for _ in 0..<7 {
            threads.run {
                counts.began()
                gate.pass()
                counts.ended()
            }
        }
        try await eventually("three pieces under way") { counts.running == 3 }
        // Given time, a fourth would have begun had a fourth thread been started.
        try await Task.sleep(for: .milliseconds(50))
        #expect(counts.running == 3)
        #expect(counts.mostAtOnce == 3)
        #expect(threads.started == 3)

        gate.open()
        try await eventually("every piece done") { counts.done == 7 }
        #expect(counts.mostAtOnce == 3)
        #expect(threads.started == 3)
    }

    /// A sync that takes long holds its own thread only: what comes after it runs on another.
    @Test func aPieceQueuedAfterALongOneRunsWhileTheLongOneWaits() async throws {
        let threads = BlockingThreads(limit: 2)
        let gate = Gate()
        let counts = Counts()
        threads.run {
            counts.began()
            gate.pass()
            counts.ended()
        }
        try await eventually("the long piece under way") { counts.running == 1 }
        for _ in 0..<5 {
            threads.run {
                counts.began()
                counts.ended()
            }
        }
        try await eventually("the five short pieces done beside it") { counts.done == 5 }
        #expect(counts.running == 1)
        gate.open()
        try await eventually("the long piece done") { counts.done == 6 }
    }

    @Test func threadsAreStartedOnlyAsTheWorkNeedsThem() async throws {
        let threads = BlockingThreads(limit: 16)
        #expect(threads.started == 0)
        let counts = Counts()
        for _ in 0..<20 {
            // One at a time: each finds the thread the last one ran on waiting.
            let done = counts.done
            threads.run { counts.began(); counts.ended() }
            try await eventually("piece done and its thread waiting") { counts.done == done + 1 && threads.idle == 1 }
        }
        #expect(threads.started == 1)
    }

    @Test func aCallsValueAndItsTypedErrorComeBack() async throws {
        let value = try await BlockingIO.run { () throws(MirrorError) -> Int in 42 }
        #expect(value == 42)
        await #expect(throws: MirrorError.self) {
            try await BlockingIO.run { () throws(MirrorError) -> Int in throw .digest("refused") }
        }
        let apart = await BlockingIO.resultApart { () throws(MirrorError) -> String in throw .digest("apart") }
        guard case .failure(.digest(let problem)) = apart else {
            Issue.record("runApart's error was lost: \(apart)")
            return
        }
        #expect(problem == "apart")
    }
}

/// Holds the pieces that pass it until it is opened (or ten seconds went by, so that a failing
/// test ends rather than hangs).
private final class Gate: Sendable {
    private let opened = DispatchSemaphore(value: 0)

    func pass() {
        _ = opened.wait(timeout: .now() + .seconds(10))
        opened.signal()
    }

    func open() {
        opened.signal()
    }
}

private final class Counts: Sendable {
    private let state = Mutex((running: 0, done: 0, mostAtOnce: 0))

    var running: Int { state.withLock { $0.running } }
    var done: Int { state.withLock { $0.done } }
    var mostAtOnce: Int { state.withLock { $0.mostAtOnce } }

    func began() {
        state.withLock { state in
            state.running += 1
            state.mostAtOnce = max(state.mostAtOnce, state.running)
        }
    }

    func ended() {
        state.withLock { state in
            state.running -= 1
            state.done += 1
        }
    }
}
