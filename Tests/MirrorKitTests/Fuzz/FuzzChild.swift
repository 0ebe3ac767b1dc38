import Foundation
import Testing

/// Runs a fuzz target in a child process: this test executable started again, running only
/// ``FuzzChildTests``, with the target and a directory for its findings in the environment.
///
/// Not Swift Testing's exit tests: their parent reads the child's pipes with blocking reads on
/// the cooperative pool, which on a two-core machine stalls every other test for as long as the
/// child runs (the cancellation tests beside it missed their deadlines). Foundation's `Process`
/// reports the end on a thread of its own, as `MirrorProcess` relies on too.
enum FuzzChild {
    /// The target and directory this process was started for, if it is a fuzz child.
    static let assignment: (target: String, directory: String)? = {
        let environment = ProcessInfo.processInfo.environment
        guard let target = environment["MIRROR_FUZZ_CHILD"], let directory = environment["MIRROR_FUZZ_DIRECTORY"] else {
            return nil
        }
        return (target, directory)
    }()

    /// What a child reported: its summary line, the property failures, a crash or hang report,
    /// and how it ended.
    struct Findings {
        var summary: String
        var failures: [String]
        var crash: String
        var ended: String
        var endedCleanly: Bool
        var output: String
    }

    /// In the parent: runs target `name` in a child and records what it found. A crash or a
    /// hang leaves its report and the input in the directory, which is then kept for the reader.
    static func fuzz(_ name: String) async throws {
        let (findings, directory) = try await run(name)
        if !findings.summary.isEmpty { print(findings.summary) }
        for failure in findings.failures { Issue.record("\(failure)") }
        if !findings.crash.isEmpty {
            Issue.record("\(findings.crash)")
        } else if findings.summary.isEmpty || !findings.endedCleanly {
            Issue.record("the fuzz child for \(name) ended with \(findings.ended); it wrote:\n\(findings.output.suffix(3000))")
        } else {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Runs target `name` in a child, with `environment` added to this process's, and returns
    /// what it found and the directory it reported into.
    static func run(_ name: String, environment extra: [String: String] = [:]) async throws -> (Findings, directory: String) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("mirror-fuzz-\(name)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let outputPath = directory + "/output.txt"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        var environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        environment["MIRROR_FUZZ_CHILD"] = name
        environment["MIRROR_FUZZ_DIRECTORY"] = directory
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        // At a lower priority (nice execs the child in its place): the fuzzers use all the CPU
        // they get, and the suites running beside them wait on servers in this process. The
        // watchdog measures the child's CPU time, not the clock, so a slower child is no hang.
        let child = ChildProcess(
            executable: "/usr/bin/nice",
            arguments: ["-n", "10", URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path,
                        "--testing-library", "swift-testing", "--filter", "FuzzChildTests"], environment: environment,
            standardOutput: output.fileDescriptor, standardError: output.fileDescriptor)
        // Over the time limit, the child is killed and the test reports what it has.
        let termination = await (try child.start()).wait()
        try? output.close()

        func read(_ file: String) -> String {
            ((try? String(contentsOfFile: directory + "/" + file, encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
        }
        let findings = Findings(
            summary: read("summary.txt"),
            failures: read("failures.txt").split(separator: "\n").map(String.init),
            crash: read("report.txt"),
            ended: "\(termination)",
            endedCleanly: termination == .exited(0),
            output: read("output.txt"))
        return (findings, directory)
    }

    /// In the child: runs `target` and writes its report and failures for the parent.
    static func run(_ target: FuzzTarget, reportingTo directory: String) {
        // The child gives way to the rest of the suite, whose tests measure how promptly things
        // stop; but not so far (nice 19 gets 1.5 % of a busy core) that a loaded machine starves
        // it past its time limit. Its budgets are CPU time.
        _ = nice(5)
        let settings = FuzzSettings.current
        let report = Fuzzer.run(target, settings: settings, reportingTo: directory)
        var failures = report.failures.map { "fuzz \(target.name): \($0)" }
        if report.failureCount > report.failures.count {
            failures.append("fuzz \(target.name): \(report.failureCount - report.failures.count) more failures")
        }
        if settings.replay == nil, report.inputs == 0 || report.corpusEntries == 0 {
            failures.append("fuzz \(target.name): nothing was tried (\(report.corpusEntries) corpus entries)")
        }
        if report.rssGrowth > settings.maxRSSGrowth {
            failures.append("fuzz \(target.name): RSS grew by \(report.rssGrowth >> 20) MiB over \(report.inputs) inputs")
        }
        // Failures first: the summary's presence tells the parent the run got to its end (and a
        // summary that could not be written is a failure the parent reports).
        _ = FileManager.default.createFile(atPath: directory + "/failures.txt", contents: Data(failures.joined(separator: "\n").utf8))
        _ = FileManager.default.createFile(atPath: directory + "/summary.txt", contents: Data("\(report)\n".utf8))
    }
}
