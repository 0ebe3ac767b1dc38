import FixtureServer
import Foundation
import Logging
import Synchronization
@testable import MirrorKit

enum TestSupport {
    /// The repository's Fixtures/ directory.
    static let fixtures: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// ../shared/real-data beside the repository, when this checkout has it.
    static let realData: URL? = {
        let url = fixtures.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/real-data")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    static let logger: Logger = {
        var logger = Logger(label: "mirror-tests") { _ in SwiftLogNoOpLogHandler() }
        logger.logLevel = .critical
        return logger
    }()

    /// Runs `body` with a fixture server that is stopped afterwards, whatever happens.
    /// Runs `work` (starting a server: child processes waited for, ports polled with sleeps) on a
    /// thread of its own: on one of Swift's two cooperative threads it would hold back, for
    /// seconds, every other test's tasks, the in-process fixture server's answers among them.
    static func apart<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    static func withServer<T>(_ body: (FixtureServer) async throws -> T) async throws -> T {
        let server = try await FixtureServer.start(fixtures: fixtures)
        do {
            let result = try await body(server)
            try await server.stop()
            return result
        } catch {
            try? await server.stop()
            throw error
        }
    }

    /// A fixture server, and a downloader into a partial store of a temporary folder.
    static func withDownloader<T>(
        engine: TransferEngine, retry: RetryPolicy, health: HostHealth? = nil,
        isRemovedPlaceholder: (@Sendable (TransferResponse) -> Bool)? = nil,
        maxFileSize: Int64 = Downloader.defaultMaxFileSize,
        _ body: (FixtureServer, Downloader, PartialStore) async throws -> T
    ) async throws -> T {
        try await withServer { server in
            try await withTemporaryDirectory { dir in
                let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
                let downloader = Downloader(
                    engine: engine, partials: partials, retry: retry, health: health,
                    isRemovedPlaceholder: isRemovedPlaceholder, maxFileSize: maxFileSize, logger: logger)
                return try await body(server, downloader, partials)
            }
        }
    }

    /// A new empty directory, removed when `body` ends.
    static func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("mirror-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: url) }
        return try await body(url)
    }

    /// The MD5 of a file: compared instead of whole byte arrays so a failure prints two short
    /// strings, not megabytes. A file that cannot be read gets a text no other call gives, so
    /// two missing things never compare equal.
    static func digest(ofFile path: String) -> String {
        Digest.md5Hex(ofFile: path) ?? "no file at \(path) (\(UUID().uuidString))"
    }

    static func digest(_ bytes: [UInt8]?) -> String {
        bytes.flatMap { try? Digest.md5Hex($0) } ?? "no bytes (\(UUID().uuidString))"
    }

    static func bytes(at path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    static func write(_ bytes: some Sequence<UInt8>, to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The images the bundled "cats" fixture tag holds, albums expanded, each once.
    static let catsImageIDs: Set<String> = [
        "aB3dE5f", "Gh7iJ9k", "Lm2nO4p", "Uv6wX7y", "Za8bC9d", "Ij2kL3m", "No4pQ5r", "Wx7yZ8a", "Bc9dE0f",
        "Gh1iJ2k", "Lm3nO4p", "Qr5sT6u", "Vw7xY8z",
    ]
}

import Testing

extension Trait where Self == ConditionTrait {
    /// Skips a test when ../shared/real-data is not beside the checkout.
    static var needsRealData: Self {
        .enabled(if: TestSupport.realData != nil, "../shared/real-data is absent")
    }
}

extension Digest {
    /// The MD5 of the file at `path`; nil if it cannot be read.
    static func md5Hex(ofFile path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return (try? md5Hex(ofFile: fd)) ?? nil
    }
}

extension Task {
    /// The task's value, or `CancellationError` as soon as the waiter is cancelled, whether or
    /// not the task ends. A test past its time limit is cancelled, but `value` would go on
    /// waiting for a task stuck on a lost continuation (cancelling it cannot help when nothing
    /// holds that continuation any more), and the run would hang instead of failing the test.
    /// The task is cancelled too, and left behind if it still does not end.
    var cancellableValue: Success {
        get async throws {
            let answer = OneAnswer<Success>()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    answer.deliver(to: continuation)
                    Task<Void, Never> { answer.resume(with: await self.result.mapError { $0 as any Error }) }
                }
            } onCancel: {
                answer.resume(with: .failure(Swift.CancellationError()))
                cancel()
            }
        }
    }
}

/// Whichever comes first of a task's result and its waiter's cancellation, handed to the
/// waiter exactly once, in whatever order the two and the waiter itself arrive.
private final class OneAnswer<Value: Sendable>: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Value, any Error>?
        var answer: Result<Value, any Error>?
        var answered = false
    }

    private let state = Mutex(State())

    func deliver(to waiter: CheckedContinuation<Value, any Error>) {
        let early = state.withLock { state in
            if state.answer == nil { state.waiter = waiter }
            return state.answer
        }
        if let early { waiter.resume(with: early) }
    }

    func resume(with result: Result<Value, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard !state.answered else { return nil }
            state.answered = true
            if state.waiter == nil { state.answer = result }
            return state.waiter.take()
        }
        waiter?.resume(with: result)
    }
}
