import FixtureServer
import Foundation
import Logging
import MirrorKit

/// Figures for the download scheduler (issue #4), printed as a table:
/// (a) a 50 MiB forced item's completion time while 1,000 previews are queued, against the same
///     item alone, over loopback from the fixture server;
/// (b) the scheduler's own cost for 100,000 items, with a transport that finishes at once.
@main
struct SchedulerBench {
    static let logger = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }

    static func main() async throws {
        if let count = ProcessInfo.processInfo.environment["OVERHEAD_ONLY"].flatMap(Int.init) {
            print(format(await schedulerOverhead(items: count)))
            return
        }
        let arguments = CommandLine.arguments
        let fixtures = URL(fileURLWithPath: arguments.count > 1 ? arguments[1] : "Fixtures")
        let runs = 3
        let server = try await FixtureServer.start(fixtures: fixtures, threads: 1)
        for index in 0..<1000 {
            server.addMedia(path: "/preview-\(index).jpg", size: 8192 + index * 37 % 24_576, contentType: "image/jpeg")
        }
        server.addMedia(path: "/forced.bin", size: 50 << 20)
        _ = server.content(of: "/forced.bin")  // generate once, outside the timings
        if let listFile = ProcessInfo.processInfo.environment["URL_LIST"] {
            let list = (0..<1000).map { "\(server.baseURL)/preview-\($0).jpg" } + ["\(server.baseURL)/forced.bin"]
            try Data(list.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: listFile))
        }

        var alone: [Duration] = []
        var loaded: [Duration] = []
        for _ in 0..<runs {
            alone.append(try await forcedAlone(server))
            loaded.append(try await forcedUnderLoad(server))
        }
        let (a, l) = (median(alone), median(loaded))
        print("(a) 50 MiB forced item, median of \(runs)")
        print("    alone                        \(format(a))")
        print("    with 1,000 previews queued   \(format(l))   ratio \(String(format: "%.2f", l.inSeconds / a.inSeconds))×  (target ≤ 1.25×)")
        try await server.stop()

        var overhead: [Duration] = []
        var harness: [Duration] = []
        for _ in 0..<runs {
            overhead.append(await schedulerOverhead(items: 100_000))
            harness.append(await harnessAlone(items: 100_000))
        }
        let (total, base) = (median(overhead), median(harness))
        print("(b) 100,000 items through the scheduler, instant transport, median of \(runs)")
        print("    total                        \(format(total))   (\(String(format: "%.2f", total.inSeconds * 10)) µs per item)")
        print("    100,000 callers, no scheduler \(format(base))")
        print("    the scheduler's own share    \(format(total - base))   (target < 1 s)")
    }

    static func forcedAlone(_ server: FixtureServer) async throws -> Duration {
        try await withScheduler { scheduler in
            let start = ContinuousClock.now
            _ = try await scheduler.schedule(server.baseURL + "/forced.bin", forced: true)
            return ContinuousClock.now - start
        }
    }

    static func forcedUnderLoad(_ server: FixtureServer) async throws -> Duration {
        try await withScheduler { scheduler in
            let previews = (0..<1000).map { index in
                Task { try await scheduler.schedule("\(server.baseURL)/preview-\(index).jpg") }
            }
            while await scheduler.status().counts[.downloading, default: 0] < 6 { await Task.yield() }
            let start = ContinuousClock.now
            _ = try await scheduler.schedule(server.baseURL + "/forced.bin", forced: true)
            let elapsed = ContinuousClock.now - start
            for preview in previews { _ = try await preview.value }
            return elapsed
        }
    }

    static func withScheduler<T>(_ body: (DownloadScheduler) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("scheduler-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let partials = try PartialStore(directory: directory)
        let transport = EngineTransport(engine: TransferEngine(), partials: partials, logger: logger)
        return try await body(DownloadScheduler(transport: transport))
    }

    static func schedulerOverhead(items: Int) async -> Duration {
        let scheduler = DownloadScheduler(transport: InstantTransport(), configuration: .init(maxConcurrent: 6))
        let start = ContinuousClock.now
        // Unstructured tasks, not a task group: in Swift 6.3 a group removes each finished child
        // from a linked list, which alone costs seconds at 100,000 children.
        let callers = (0..<items).map { index in
            Task { _ = try? await scheduler.schedule("http://bench.invalid/\(index)") }
        }
        for caller in callers { await caller.value }
        return ContinuousClock.now - start
    }

    /// The same 100,000 caller tasks, each awaiting a continuation an actor resumes at once: what
    /// the measurement costs without the scheduler.
    static func harnessAlone(items: Int) async -> Duration {
        let echo = Echo()
        let start = ContinuousClock.now
        let callers = (0..<items).map { index in Task { await echo.answer(index) } }
        for caller in callers { _ = await caller.value }
        return ContinuousClock.now - start
    }

    static func median(_ values: [Duration]) -> Duration { values.sorted()[values.count / 2] }
    static func format(_ duration: Duration) -> String { String(format: "%.3f s", duration.inSeconds) }
}

/// Finishes every fetch at once: what remains is the scheduler's own work.
struct InstantTransport: DownloadTransport {
    func fetch(
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?, progress: @escaping @Sendable (TransferProgress) -> Void,
        receiving: @escaping @Sendable (Bool) -> Void
    ) async throws(DownloadError) -> FetchedFile {
        FetchedFile(url: url, path: "/dev/null", length: 0, bytesReceived: 0)
    }
    func pause(_ id: TransferID) {}
    func resume(_ id: TransferID) {}
    func partialLength(of url: String) -> Int64 { 0 }
    func discardPartial(of url: String) {}
}

actor Echo {
    func answer(_ value: Int) async -> Int {
        await withCheckedContinuation { $0.resume(returning: value) }
    }
}
