import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// `--exec` and `--exec-shell`: what the program gets, what its failure does, and how the config
/// and the command line combine.
@Suite("--exec: a program after each saved file", .serialized, .timeLimit(.minutes(3)))
struct SavedFileHookTests {
    @Test func execRunsAProgramAfterEachSavedFileWithTheFileInItsEnvironment() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let log = dir.appendingPathComponent("hook.log").path
                let script = dir.appendingPathComponent("hook").path
                try TestSupport.write(Array(
                    "#!/bin/sh\necho \"$1|$MIRROR_PATH|$MIRROR_RELATIVE_PATH|$MIRROR_URL|$MIRROR_ITEM|$MIRROR_SOURCE|$MIRROR_BYTES|${PGPASSWORD-unset}|$(pwd)\" >> \"$2\"\necho HOOK-SAYS-SO\n".utf8),
                    to: script)
                chmod(script, 0o755)
                let common = MirrorProcess.fixtureOptions(server: server, idFile: idFile)
                // The state's password (were it PostgreSQL's) is not passed on.
                let run = try await MirrorProcess.run(
                    ["cats", "--out", out, "--exec", "\(script) first \(log)"] + common, environment: ["PGPASSWORD": "secret"])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(!run.stdout.contains("HOOK-SAYS-SO") && !run.stderr.contains("HOOK-SAYS-SO"), "its standard output is dropped")
                let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
                #expect(lines.count == 26, "once per saved file")
                let full = try #require(lines.first { $0[2] == "full/aB3dE5f.jpg" })
                #expect(full == [
                    "first", out + "/full/aB3dE5f.jpg", "full/aB3dE5f.jpg", "\(server.baseURL)/aB3dE5f.jpg",
                    "\(server.baseURL)/aB3dE5f.jpg", "tag cats", "\(server.content(of: "/aB3dE5f.jpg")?.count ?? -1)", "unset", out,
                ])

                // A shell command, and a program that fails: the files stay, the failure is said.
                let shellOut = dir.appendingPathComponent("shell").path
                let shellLog = dir.appendingPathComponent("shell.log").path
                let shell = try await MirrorProcess.run(
                    ["cats", "--out", shellOut, "--exec-shell", "echo \"$MIRROR_RELATIVE_PATH\" >> '\(shellLog)'"] + common)
                #expect(shell.status == 0, "\(shell.stderr)")
                #expect(try String(contentsOfFile: shellLog, encoding: .utf8).split(separator: "\n").count == 26)
                let failingOut = dir.appendingPathComponent("failing").path
                let failing = try await MirrorProcess.run(["cats", "--out", failingOut, "--exec", "/bin/false"] + common)
                #expect(failing.status == 1)
                #expect(failing.stderr.contains("--exec /bin/false for full/aB3dE5f.jpg exited with 1"), "\(failing.stderr)")
                // Twenty named, the rest counted: a hook failing for every file of a big tag
                // does not fill the cron mail.
                #expect(failing.stderr.components(separatedBy: "--exec /bin/false for ").count - 1 == 20, "\(failing.stderr)")
                #expect(failing.stderr.contains("… and 6 more hook failures like these"), "\(failing.stderr)")
                #expect(FileManager.default.fileExists(atPath: failingOut + "/full/aB3dE5f.jpg"))
                let failingShell = try await MirrorProcess.run(
                    ["cats", "--out", dir.appendingPathComponent("failing-shell").path, "--exec-shell", "exit 3"] + common)
                #expect(failingShell.status == 1)
                #expect(failingShell.stderr.contains("--exec-shell for full/aB3dE5f.jpg exited with 3"), "\(failingShell.stderr)")
                // A run with nothing new runs no hook.
                let logged = try String(contentsOfFile: log, encoding: .utf8).count
                let again = try await MirrorProcess.run(["cats", "--out", out, "--exec", "\(script) first \(log)"] + common)
                #expect(again.status == 0 && again.stdout.hasPrefix("cats: nothing new"), "\(again.stdout)")
                #expect(try String(contentsOfFile: log, encoding: .utf8).count == logged)

                let missing = try await MirrorProcess.run(["cats", "--out", out, "--exec", "no-such-program-here"] + common)
                #expect(missing.status == 64)
                #expect(missing.stderr.contains("--exec: no program named no-such-program-here in PATH"), "\(missing.stderr)")
            }
        }
    }

    @Test func aHookInTheConfigIsReplacedOrTurnedOffByTheCommandLine() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let config = dir.appendingPathComponent("config.json").path
                try TestSupport.write(Array(#"{"execShell": "exit 3"}"#.utf8), to: config)
                func run(_ name: String, _ extra: [String]) async throws -> MirrorProcess.Run {
                    try await MirrorProcess.run([
                        "https://imgur.com/aB3dE5f", "--out", dir.appendingPathComponent(name).path, "--client-id-file", idFile,
                        "--api-base", server.baseURL, "--media-base", server.baseURL, "--config", config,
                    ] + extra)
                }
                #expect(try await run("config", []).status == 1, "the config's hook fails")
                let off = try await run("off", ["--no-exec"])
                #expect(off.status == 0, "\(off.stderr)")
                let replaced = try await run("replaced", ["--exec", "/bin/true"])
                #expect(replaced.status == 0, "a flag replaces the config's hook, whichever way each is given: \(replaced.stderr)")
                #expect(try await run("both", ["--exec", "/bin/true", "--no-exec"]).status == 64)
            }
        }
    }
}
