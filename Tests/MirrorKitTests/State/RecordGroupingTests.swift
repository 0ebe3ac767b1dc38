import Foundation
import Synchronization
import Testing
@testable import MirrorKit

/// The rows of finished files are written in groups: one transaction when a group fills or when
/// its first row has waited the latency, and before anything else asked of the database.
@Suite("The state database: rows of finished files written in groups", .timeLimit(.minutes(1)))
struct RecordGroupingTests {
    @Test func aRowWaitsForItsGroupsLatencyThenItsGroupIsOneTransaction() async throws {
        try await Self.withHeldGroups { state, directory, clock in
            let done = Done()
            let recording = (0..<3).map { index in
                Task {
                    try await state.record(Self.file(index))
                    done.count.add(1, ordering: .sequentiallyConsistent)
                }
            }
            await Self.until { await state.waitingRecords.count == 3 }
            // Another connection sees no row yet, and no caller has been told its row is written.
            let path = directory.stateDirectory.appendingPathComponent("state.sqlite3").path
            let other = try SQLiteConnection.open(path, readOnly: true)
            #expect(try other.rows("SELECT count(*) AS n FROM files").first?.integer("n") == 0)
            #expect(done.count.load(ordering: .sequentiallyConsistent) == 0)
            #expect(clock.sleeps == [.milliseconds(10)], "one wait for the group, not one per row")

            clock.release()
            await Self.expectWritten(state, clock, "the group, once its latency has passed")
            for task in recording { try await task.value }
            #expect(try other.rows("SELECT count(*) AS n FROM files").first?.integer("n") == 3)
            #expect(await state.recordGroupsWritten == 1)
        }
    }

    @Test func aFullGroupIsWrittenWithoutWaitingForItsLatency() async throws {
        try await Self.withHeldGroups(limit: 4) { state, _, clock in
            let recording = (0..<4).map { index in Task { try await state.record(Self.file(index)) } }
            await Self.until(orRecord: false) { await state.recordGroupsWritten == 1 }
            await Self.expectWritten(state, clock, "a full group, with the clock held", now: true)
            for task in recording { try await task.value }
            #expect(await state.recordGroupsWritten == 1)
            #expect(try await state.filePaths().files.count == 4)
        }
    }

    /// A job asks after its item before it downloads: a row of that item waiting for its group
    /// is written first (the job must find the file recorded), a row of another item waits on.
    @Test func askingAfterAnItemWritesItsWaitingRowFirstAndLeavesOthersWaiting() async throws {
        try await Self.withHeldGroups { state, _, clock in
            let first = Task { try await state.record(Self.file(1)) }
            await Self.until { await state.waitingRecords.count == 1 }

            let other = try await state.fate(of: Self.file(2).item, url: Self.file(2).url)
            #expect(other.latest == nil && !other.removed)
            let (written, waiting) = await (state.recordGroupsWritten, state.waitingRecords.count)
            #expect(written == 0 && waiting == 1)

            let fate = try await state.fate(of: Self.file(1).item, url: Self.file(1).url)
            #expect(fate.latest?.path == Self.file(1).path)
            await Self.expectWritten(state, clock, "by the lookup of its item", now: true)
            try await first.value
            #expect(await state.recordGroupsWritten == 1)

            // Any other statement writes the group first too: a confirmation finds its row.
            let second = Task { try await state.record(Self.file(2)) }
            await Self.until { await state.waitingRecords.count == 1 }
            try await state.confirm(Self.file(2).path, url: Self.file(2).url, etag: "\"new\"", lastModified: nil, release: nil, replacingValidators: true)
            await Self.expectWritten(state, clock, "by the confirmation", now: true)
            try await second.value
            #expect(try await state.latestFile(of: Self.file(2).item)?.etag == "\"new\"")
        }
    }

    /// A waiting row of another item that takes the path of this item's row replaces that row:
    /// the lookup writes it first, and does not answer with a file that is no longer the item's.
    @Test func aWaitingRowThatReplacesTheRowFoundIsWrittenBeforeTheAnswer() async throws {
        try await Self.withHeldGroups(recordedFirst: [Self.file(1)]) { state, _, clock in
            var taker = Self.file(2)
            taker.path = Self.file(1).path
            let taking = Task { [taker] in try await state.record(taker) }
            await Self.until { await state.waitingRecords.count == 1 }
            let fate = try await state.fate(of: Self.file(1).item, url: Self.file(1).url)
            #expect(fate.latest == nil)
            await Self.expectWritten(state, clock, "by the lookup that found the row it replaces", now: true)
            try await taking.value
        }
    }

    /// A state database in a folder of its own, `recordedFirst` recorded in it, whose rows then
    /// wait in groups of `limit` for a latency of 10 ms on a clock held until the test releases
    /// it (or `body` ends).
    private static func withHeldGroups(
        limit: Int = 64, recordedFirst: [MirroredFile] = [],
        _ body: (StateDatabase, MirrorDirectory, HeldClock) async throws -> Void
    ) async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try MirrorDirectory(root: dir)
            let state = try StateDatabase(directory: directory)
            for file in recordedFirst { try await state.record(file) }
            let clock = HeldClock()
            defer { clock.release() }
            await state.groupRecords(RecordGrouping(limit: limit, latency: .milliseconds(10), clock: clock))
            try await body(state, directory, clock)
        }
    }

    private static func file(_ index: Int) -> MirroredFile {
        MirroredFile(
            path: "full/\(index).jpg", item: "https://i.test/\(index).jpg", source: "tag cats",
            url: "https://i.test/\(index).jpg", etag: "\"\(index)\"", lastModified: nil, bytes: 42, md5: nil)
    }

    /// Expects the rows waiting for their group to be written (`now`: already), and writes them
    /// with another statement when they are not, so that a failing test ends rather than leaves
    /// their writers waiting for the held clock.
    private static func expectWritten(
        _ state: StateDatabase, _ clock: HeldClock, _ comment: Comment, now: Bool = false
    ) async {
        if !now { await until(orRecord: false) { await state.waitingRecords.isEmpty } }
        let waiting = await state.waitingRecords.count
        #expect(waiting == 0, "rows left waiting: \(waiting); expected written \(comment)")
        guard waiting > 0 else { return }
        clock.release()
        _ = try? await state.filePaths()
    }

    /// Waits (yielding, never sleeping) until `condition` holds.
    private static func until(orRecord: Bool = true, _ condition: () async -> Bool) async {
        for _ in 0..<100_000 {
            if await condition() { return }
            await Task.yield()
        }
        if orRecord { Issue.record("the condition never held") }
    }
}

private final class Done: Sendable {
    let count = Atomic<Int>(0)
}

/// A clock whose waits last until the test releases them: the group's latency never passes by
/// itself.
private final class HeldClock: RunClock {
    private let state = Mutex<(released: Bool, waiting: [CheckedContinuation<Void, Never>], sleeps: [Duration])>((false, [], []))

    var now: Date { Date(timeIntervalSince1970: 1_700_000_000) }
    var elapsed: Duration { .zero }
    var sleeps: [Duration] { state.withLock { $0.sleeps } }

    func sleep(for duration: Duration) async throws {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                state.sleeps.append(duration)
                guard !state.released else { return true }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func release() {
        let waiting = state.withLock { state in
            state.released = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
