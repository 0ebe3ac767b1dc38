import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

@Suite("The Prometheus metrics file", .timeLimit(.minutes(2)))
struct MetricsFileTests {
    /// `promtool check metrics` on `text`: its complaints, empty when it has none. The tests need
    /// Debian's prometheus package (scripts/setup installs it). Waited for off the cooperative
    /// pool, which the in-process fixture server and the other suites share.
    private func promtoolProblems(_ text: String) async throws -> String {
        try await TestSupport.withTemporaryDirectory { dir in
            let input = dir.appendingPathComponent("in.prom")
            let output = dir.appendingPathComponent("out")
            try TestSupport.write(Array(text.utf8), to: input.path)
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            let source = try FileHandle(forReadingFrom: input)
            let handle = try FileHandle(forWritingTo: output)
            defer { [source, handle].forEach { try? $0.close() } }
            let status = try await ChildProcess(
                executable: "/usr/bin/promtool", arguments: ["check", "metrics"], standardInput: source.fileDescriptor,
                standardOutput: handle.fileDescriptor, standardError: handle.fileDescriptor
            ).run()
            let said = String(decoding: TestSupport.bytes(at: output.path) ?? [], as: UTF8.self)
            return status == 0 ? said.trimmingCharacters(in: .whitespacesAndNewlines) : "exit \(status): \(said)"
        }
    }

    /// The value of `name` in exposition `text` (its one series).
    private func value(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + "{") }
            .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
    }

    @Test func aRunWritesAFileThatPromtoolAccepts() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let metrics = dir.appendingPathComponent("textfile/mirror.prom").path
                try FileManager.default.createDirectory(atPath: dir.appendingPathComponent("textfile").path, withIntermediateDirectories: true)
                let arguments = [
                    "cats", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL, "--metrics-file", metrics, "--retries", "1",
                ]
                let started = Date().timeIntervalSince1970.rounded(.down)
                let first = try await MirrorProcess.run(arguments)
                #expect(first.status == 0, "\(first.stderr)")
                let text = try String(contentsOfFile: metrics, encoding: .utf8)
                #expect(try await promtoolProblems(text) == "", "\(text)")
                #expect(text.contains(#"mirror_last_run_exit_status{source="tag cats"} 0"#), "\(text)")
                #expect(value("mirror_run_in_progress", in: text) == 0)
                #expect(value("mirror_last_run_files_downloaded", in: text) == 26)
                #expect(value("mirror_last_run_files_failed", in: text) == 0)
                let bytes = try #require(value("mirror_last_run_bytes_downloaded", in: text))
                #expect(bytes > 100_000)
                #expect(value("mirror_last_run_api_calls", in: text) ?? 0 >= 3)
                #expect(value("mirror_api_calls_left", in: text) != nil)
                let success = try #require(value("mirror_last_success_timestamp_seconds", in: text))
                #expect(success >= started)
                #expect(value("mirror_last_run_end_timestamp_seconds", in: text) == success)
                #expect(text.contains("# HELP mirror_last_success_timestamp_seconds"))

                // A failing run: its status shows, and the last success stays the first run's.
                server.inject(.respond(status: 500), path: "/3/gallery/t/cats/time/all/0", times: 100)
                let failing = try await MirrorProcess.run(arguments)
                #expect(failing.status == 75, "\(failing.stderr)")
                let after = try String(contentsOfFile: metrics, encoding: .utf8)
                #expect(try await promtoolProblems(after) == "")
                #expect(value("mirror_last_run_exit_status", in: after) == 75)
                #expect(value("mirror_last_success_timestamp_seconds", in: after) == success)
                // Written whole: no temporary file is left beside it.
                #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("textfile").path) == ["mirror.prom"])
            }
        }
    }

    @Test func theFileIsRewrittenWhileARunGoes() async throws {
        try await TestSupport.withServer { server in
            server.addSlowTag()
            try await MirrorProcess.withClientID { dir, idFile in
                let metrics = dir.appendingPathComponent("mirror.prom").path
                let run = Task {
                    try await MirrorProcess.run([
                        "slow", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile,
                        "--api-base", server.baseURL, "--media-base", server.baseURL, "--metrics-file", metrics,
                        "--retries", "1",
                    ])
                }
                var during: String?
                for _ in 0..<80 {
                    try await Task.sleep(for: .milliseconds(100))
                    if let text = try? String(contentsOfFile: metrics, encoding: .utf8), value("mirror_run_in_progress", in: text) == 1 {
                        during = text
                        break
                    }
                }
                let finished = try await run.value
                #expect(finished.status == 1, "\(finished.stderr)")
                let text = try #require(during, "no metrics file while the run went on")
                #expect(try await promtoolProblems(text) == "", "\(text)")
                #expect(value("mirror_last_run_exit_status", in: text) == nil)
                #expect(value("mirror_last_run_start_timestamp_seconds", in: text) != nil)
            }
        }
    }

    @Test func aBadMetricsPathIsAClearError() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let run = try await MirrorProcess.run([
                    "cats", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL, "--metrics-file", "/nonexistent/dir/m.prom",
                ])
                // The mirror is made all the same; the metrics file's trouble is named, once.
                #expect(run.status == 0)
                #expect(run.stderr.hasPrefix("mirror: metrics file: /nonexistent/dir/"), "\(run.stderr)")
                #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
                #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/full/aB3dE5f.jpg").path))
            }
        }
    }

    @Test func whileARunGoesThePreviousRunsEndAndStatusStayAndNeverIsZero() async throws {
        var progress = RunProgress()
        progress.startedAt = Date(timeIntervalSince1970: 2_000)
        var summary = MirrorSummary()
        summary.wanted = 3
        let previous = RunRecord(
            source: "feed https://h.example/\"quoted\"\\feed", startedAt: Date(timeIntervalSince1970: 1_000),
            endedAt: Date(timeIntervalSince1970: 1_500), exitStatus: 1, summary: summary)
        let figures = MetricsFile.Figures(
            source: previous.source, progress: progress, previous: previous, lastSuccess: nil, now: Date(timeIntervalSince1970: 2_010))
        let text = String(decoding: MetricsFile.render(figures), as: UTF8.self)
        #expect(try await promtoolProblems(text) == "", "\(text)")
        #expect(value("mirror_run_in_progress", in: text) == 1)
        #expect(value("mirror_last_run_start_timestamp_seconds", in: text) == 2_000)
        #expect(value("mirror_last_run_end_timestamp_seconds", in: text) == 1_500)
        #expect(value("mirror_last_run_exit_status", in: text) == 1)
        #expect(value("mirror_last_success_timestamp_seconds", in: text) == 0)
        // The label is escaped as the exposition format asks.
        #expect(text.contains(#"source="feed https://h.example/\"quoted\"\\feed""#), "\(text)")
    }
}
