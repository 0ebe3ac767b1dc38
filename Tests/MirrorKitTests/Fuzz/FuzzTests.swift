import Foundation
import Testing
@testable import MirrorKit

/// Bad input at scale: each parser that reads what a server sends gets its corpus, then mutated
/// and generated inputs, and must not crash, hang, grow its memory or break its properties.
///
/// Each target runs in a child process (see ``FuzzChild``): a crash then fails its test instead
/// of ending the whole test run, and the child's memory is the target's alone. The defaults are
/// CI's smoke run; `scripts/fuzz` runs them longer (see `FuzzSettings`).
@Suite("Fuzzing the parsers of server input", .serialized, .timeLimit(.minutes(FuzzSettings.timeLimitMinutes)))
struct FuzzTests {
    static let targets = [FeedFuzzing.target, ImgurFuzzing.target, ContentRangeFuzzing.target, HTTPDateFuzzing.target]

    @Test func feedReader() async throws {
        try await FuzzChild.fuzz("feed")
    }

    @Test func imgurDecoding() async throws {
        try await FuzzChild.fuzz("imgur")
    }

    @Test func contentRange() async throws {
        try await FuzzChild.fuzz("content-range")
    }

    @Test func httpDate() async throws {
        try await FuzzChild.fuzz("http-date")
    }
}

/// What a fuzz child process runs: one target, named by the environment. In any other process
/// it is skipped.
@Suite("A fuzz target in a child process", .enabled(if: FuzzChild.assignment != nil, "runs only in a fuzz child process"))
struct FuzzChildTests {
    @Test func run() throws {
        let (name, directory) = try #require(FuzzChild.assignment)
        let target = try #require(
            (FuzzTests.targets + FuzzHarnessTests.controls).first { $0.name == name }, "no fuzz target \(name)")
        FuzzChild.run(target, reportingTo: directory)
    }
}
