import Foundation
import Testing
@testable import MirrorKit

/// Bad input at scale: each parser that reads what a server sends gets its corpus, then mutated
/// and generated inputs, and must not crash, hang, grow its memory or break its properties.
///
/// Each target runs in a child process (an exit test): a crash then fails its test instead of
/// ending the whole test run, and the child's memory is the target's alone. The defaults are
/// CI's smoke run; `scripts/fuzz` runs them longer (see `FuzzSettings`).
@Suite("Fuzzing the parsers of server input", .serialized, .timeLimit(.minutes(FuzzSettings.timeLimitMinutes)))
struct FuzzTests {
    static let targets = [FeedFuzzing.target, ImgurFuzzing.target, ContentRangeFuzzing.target, HTTPDateFuzzing.target]

    @Test func feedReader() async throws {
        try await Self.fuzz("feed")
    }

    @Test func imgurDecoding() async throws {
        try await Self.fuzz("imgur")
    }

    @Test func contentRange() async throws {
        try await Self.fuzz("content-range")
    }

    @Test func httpDate() async throws {
        try await Self.fuzz("http-date")
    }

    /// Runs the target named `name` in a child process and passes on what it printed. A crash or
    /// a hang leaves a report and the input in a directory, kept for the reader; a failed exit
    /// test gives nothing of what the child wrote.
    private static func fuzz(_ name: String) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("mirror-fuzz-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            [name = name as String, directory = directory as String] in
            FuzzTests.run(name, reportingTo: directory)
        }
        if let result { print(String(decoding: result.standardOutputContent, as: UTF8.self).trimmingCharacters(in: .newlines)) }
        let report = (try? String(contentsOfFile: directory + "/report.txt", encoding: .utf8)) ?? ""
        if report.isEmpty {
            try? FileManager.default.removeItem(atPath: directory)
        } else {
            Issue.record("\(report.trimmingCharacters(in: .newlines))")
        }
    }

    /// In the child: runs the target, prints its report, and records what went wrong (issues
    /// reach the parent's test through the exit test's back channel).
    static func run(_ name: String, reportingTo directory: String) {
        guard let target = targets.first(where: { $0.name == name }) else {
            Issue.record("no fuzz target \(name)")
            return
        }
        let settings = FuzzSettings.current
        let report = Fuzzer.run(target, settings: settings, reportingTo: directory)
        print(report)
        for failure in report.failures {
            Issue.record("fuzz \(name): \(failure)")
        }
        if report.failureCount > report.failures.count {
            Issue.record("fuzz \(name): \(report.failureCount - report.failures.count) more failures")
        }
        if settings.replay == nil, report.inputs == 0 || report.corpusEntries == 0 {
            Issue.record("fuzz \(name): nothing was tried (\(report.corpusEntries) corpus entries)")
        }
        if report.rssGrowth > settings.maxRSSGrowth {
            Issue.record("fuzz \(name): RSS grew by \(report.rssGrowth >> 20) MiB over \(report.inputs) inputs")
        }
    }
}
