import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// The live progress display, through a pseudo-terminal of the test's own, and its absence
/// without one.
@Suite("Live progress on a terminal", .serialized, .timeLimit(.minutes(2)))
struct ProgressDisplayTests {
    /// A run of the `slow` tag (one 8 MiB image at 2 MiB/s, its thumbnail failing at once, so an
    /// error line lands in the middle of the progress): some four seconds.
    private func slowRun(
        on terminal: PseudoTerminal?, _ extra: [String] = [], environment: [String: String] = [:],
        during: @escaping @Sendable (PseudoTerminal, pid_t) async -> Void = { _, _ in }
    ) async throws -> (status: Int32, output: String, chunks: [(columns: Int, bytes: [UInt8])], id: String) {
        try await TestSupport.withServer { server in
            let id = server.addSlowTag()
            return try await MirrorProcess.withClientID { dir, idFile in
                let arguments = [
                    "slow", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL, "--retries", "1",
                ] + extra
                if let terminal {
                    // A terminal that can move its cursor, whatever the test runner's is.
                    let run = try await terminal.run(
                        arguments, environment: ["TERM": "xterm-256color"].merging(environment) { $1 }, during: during)
                    return (run.status, run.output, run.chunks, id)
                }
                let run = try await MirrorProcess.run(arguments)
                return (run.status, run.stdout + run.stderr, [(0, Array((run.stdout + run.stderr).utf8))], id)
            }
        }
    }

    /// The progress frames drawn: the text between escapes and line ends that has the display's
    /// separator (summary and log lines have none).
    private func frames(_ output: String) -> [String] {
        // By scalars: "\r\n" is one Character.
        output.unicodeScalars.split(whereSeparator: { $0 == "\r" || $0 == "\n" || $0 == "\u{1B}" })
            .map { String(String.UnicodeScalarView($0)).replacingOccurrences(of: #"^\[\d*[AJ]"#, with: "", options: .regularExpression) }
            .filter { $0.contains(" | ") || $0.hasPrefix("  forced:") }
    }

    private func screen(_ chunks: [(columns: Int, bytes: [UInt8])]) -> ReflowingTerminal {
        var terminal = ReflowingTerminal(columns: chunks.first?.columns ?? 80)
        for chunk in chunks {
            terminal.columns = chunk.columns
            terminal.feed(chunk.bytes)
        }
        return terminal
    }

    @Test func aTerminalShowsRedrawnProgressThatLeavesNothingBehind() async throws {
        let terminal = try PseudoTerminal(columns: 120)
        let run = try await slowRun(on: terminal)
        #expect(run.status == 1, "\(run.output)")
        let drawn = frames(run.output)
        // Four redraws a second over some three seconds.
        #expect(drawn.count >= 6, "\(run.output)")
        #expect(drawn.contains { $0.hasPrefix("slow: ") && $0.contains(" of 2 files") && $0.contains("/s") }, "\(drawn)")
        #expect(drawn.contains { $0.hasPrefix("  forced: \(run.id).jpg ") && $0.contains("%") }, "\(drawn)")
        #expect(drawn.allSatisfy { TerminalText.width($0) <= 119 }, "\(drawn)")
        // Bytes received this run, each counted once: never more than the 8 MiB file (8.4 MB).
        let megabytes = drawn.compactMap { frame -> Double? in
            guard let range = frame.range(of: #"\| [0-9.]+ MB \|"#, options: .regularExpression) else { return nil }
            return Double(frame[range].dropFirst(2).dropLast(5))
        }
        #expect(!megabytes.isEmpty && megabytes.allSatisfy { $0 <= 8.4 }, "\(megabytes)")
        #expect(megabytes == megabytes.sorted(), "\(megabytes)")
        // Once every file is known, the time left shows.
        #expect(drawn.contains { $0.contains("ETA ") }, "\(drawn)")
        // What stays on the screen: the error (whole, on its own line) and the summary; no progress.
        let screen = screen(run.chunks)
        #expect(screen.problems.isEmpty, "\(screen.problems)")
        let lines = screen.text.filter { !$0.isEmpty }
        #expect(!lines.contains { $0.contains(" | ") || $0.contains("forced:") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("mirror: ") && $0.contains("\(run.id)m.jpg: HTTP 500") }, "\(lines)")
        #expect(lines.last?.hasPrefix("slow: 2 files: 1 downloaded") == true, "\(lines)")
        #expect(lines.count == 2, "\(lines)")
    }

    @Test func aNarrowTerminalAndAResizeDoNotGarbleIt() async throws {
        let terminal = try PseudoTerminal(columns: 100)
        let run = try await slowRun(on: terminal) { terminal, _ in
            // Once the first frames are up: narrower, then very narrow, then wide again.
            for _ in 0..<200 where !terminal.output.contains(" | ") {
                try? await Task.sleep(for: .milliseconds(20))
            }
            for columns in [44, 24, 90] {
                try? await Task.sleep(for: .milliseconds(600))
                terminal.resize(columns: columns)
            }
        }
        #expect(run.status == 1, "\(run.output)")
        for (index, chunk) in run.chunks.enumerated() {
            let drawn = frames(String(decoding: chunk.bytes, as: UTF8.self))
            // A frame drawn just before a resize may be read just after it: the width before counts too.
            let allowed = max(chunk.columns, index > 0 ? run.chunks[index - 1].columns : chunk.columns)
            #expect(drawn.allSatisfy { TerminalText.width($0) <= allowed - 1 }, "\(chunk.columns): \(drawn)")
        }
        #expect(frames(run.output).contains { TerminalText.width($0) <= 23 && $0.hasSuffix("~") })
        let screen = screen(run.chunks)
        #expect(screen.problems.isEmpty, "\(screen.problems)")
        let lines = screen.text.filter { !$0.isEmpty }
        #expect(!lines.contains { $0.contains(" | ") || $0.contains("forced:") || $0.hasSuffix("~") }, "\(lines)")
        #expect(lines.count == 2, "\(lines)")
    }

    @Test func withoutATerminalOrWithNeverThereIsNone() async throws {
        // Six runs of some four seconds each, mostly waiting on the throttled file: side by side.
        async let piped = slowRun(on: nil)
        async let never = slowRun(on: try PseudoTerminal(columns: 80), ["--progress", "never"])
        async let quiet = slowRun(on: try PseudoTerminal(columns: 80), ["--quiet"])
        // A terminal that cannot move its cursor (Emacs' shell buffers), and JSON logs.
        async let dumb = slowRun(on: try PseudoTerminal(columns: 80), environment: ["TERM": "dumb"])
        async let json = slowRun(on: try PseudoTerminal(columns: 80), ["--log-format", "json"])
        // always draws even into a pipe (for a terminal that is not one to isatty).
        async let always = slowRun(on: nil, ["--progress", "always"])

        let pipedRun = try await piped
        #expect(pipedRun.status == 1)
        #expect(!pipedRun.output.contains("\u{1B}") && frames(pipedRun.output).isEmpty, "\(pipedRun.output)")
        // Cron's view: the error and the summary, nothing else.
        #expect(pipedRun.output.split(separator: "\n").count == 2, "\(pipedRun.output)")
        let neverRun = try await never
        #expect(!neverRun.output.contains("\u{1B}") && frames(neverRun.output).isEmpty, "\(neverRun.output)")
        let quietRun = try await quiet
        #expect(frames(quietRun.output).isEmpty, "\(quietRun.output)")
        let dumbRun = try await dumb
        #expect(!dumbRun.output.contains("\u{1B}") && frames(dumbRun.output).isEmpty, "\(dumbRun.output)")
        let jsonRun = try await json
        #expect(!jsonRun.output.contains("\u{1B}") && frames(jsonRun.output).isEmpty, "\(jsonRun.output)")
        #expect(!frames(try await always.output).isEmpty)
    }

    @Test func aSecondInterruptLeavesNoProgressBehind() async throws {
        let terminal = try PseudoTerminal(columns: 100)
        let run = try await slowRun(on: terminal) { terminal, pid in
            for _ in 0..<300 where !terminal.output.contains(" | ") {
                try? await Task.sleep(for: .milliseconds(20))
            }
            // A second signal ends the process at once. (Two of the same kind may be delivered as
            // one; an interrupt and a termination are two, handled in either order.) When the first
            // has wound the run down before the second is handled, the normal path cleared the
            // display: this catches a missing clear only when the second comes first, about half
            // of the runs.
            guard !Task.isCancelled else { return }
            kill(pid, SIGINT)
            kill(pid, SIGTERM)
        }
        #expect(run.status == 130 || run.status == 143, "\(run.output)")
        let screen = screen(run.chunks)
        #expect(screen.problems.isEmpty, "\(screen.problems)")
        #expect(!screen.text.contains { $0.contains(" | ") || $0.contains("forced:") }, "\(screen.text)")
    }
}
