import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// The real `mirror` executable: both spellings of the modes, a feed from a file or standard
/// input, and `mirror status --versions`.
@Suite("Modes spelled either way, feeds from files and standard input", .timeLimit(.minutes(2)))
struct ModesAndFeedInputTests {
    private func feedText(_ server: FixtureServer, _ name: String) throws -> String {
        try String(contentsOf: TestSupport.fixtures.appendingPathComponent("feeds/\(name)"), encoding: .utf8)
            .replacingOccurrences(of: "{{base}}", with: server.baseURL)
    }

    @Test(arguments: [("new-file", DownloadMode.newFile), ("newFile", .newFile), ("skip-if-exists", .skipIfExists), ("skipIfExists", .skipIfExists)])
    func bothSpellingsOfBothModesAreAcceptedByFlagAndConfig(_ spelling: String, _ mode: DownloadMode) async throws {
        #expect(DownloadMode(spelling: spelling) == mode)
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let config = dir.appendingPathComponent("config.json").path
                try TestSupport.write(Array(#"{"mode": "\#(spelling)"}"#.utf8), to: config)
                #expect(try MirrorConfiguration.load(from: config).mode == mode)
                for (index, option) in [["--mode", spelling], ["--config", config]].enumerated() {
                    let out = dir.appendingPathComponent("out-\(index)").path
                    let feed = "\(server.baseURL)/feeds/Python.xml"
                    #expect(try await MirrorProcess.run(["feed", feed, "--out", out, "-q"] + option).status == 0)
                    let seen = server.requests.count
                    let again = try await MirrorProcess.run(["feed", feed, "--out", out, "-q"] + option)
                    #expect(again.status == 0, "\(again.stderr)")
                    // new-file asks whether the archive changed; skip-if-exists asks nothing.
                    let asked = server.requests.dropFirst(seen).filter { $0.path == "/files/Python.tgz" }
                    #expect(asked.count == (mode == .newFile ? 1 : 0), "\(option)")
                    #expect(asked.allSatisfy { $0.header("If-None-Match") != nil })
                }
            }
        }
    }

    @Test func aModeSpelledOtherwiseIsRefusedNamingTheKey() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let config = dir.appendingPathComponent("config.json").path
            try TestSupport.write(Array(#"{"mode": "newfile"}"#.utf8), to: config)
            #expect(throws: MirrorError.self) { try MirrorConfiguration.load(from: config) }
            let run = try await MirrorProcess.run(["feed", "http://127.0.0.1:9/f.xml", "--out", dir.appendingPathComponent("o").path, "--config", config])
            #expect(run.status == 78)
            #expect(run.stderr.contains("mode") && run.stderr.contains("newFile"))
            let flag = try await MirrorProcess.run(["feed", "http://127.0.0.1:9/f.xml", "--out", dir.appendingPathComponent("o").path, "--mode", "replace"])
            #expect(flag.status == 64)
        }
    }

    @Test func aFeedIsReadFromAFile() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("docsets.atom").path
                try TestSupport.write(Array(try feedText(server, "docsets.atom").utf8), to: path)
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run(["feed", path, "--out", out, "-q"])
                #expect(run.status == 0, "\(run.stderr)")
                let names = try FileManager.default.contentsOfDirectory(atPath: out + "/enclosures").sorted()
                #expect(names == ["Alpha-2.1.docset.xar", "Beta 1.0.xar"])
                let missing = try await MirrorProcess.run(["feed", dir.appendingPathComponent("nope.atom").path, "--out", out])
                // A path is a file: a missing one is said as such, not taken for a URL.
                #expect(missing.status == 69)
                #expect(missing.stderr.contains("nope.atom") && missing.stderr.contains("No such file"), "\(missing.stderr)")
            }
        }
    }

    /// A feed read from a FIFO nobody writes, or from a pipe whose writer stays silent, would
    /// hold the run past its deadline and past Ctrl-C: both stop it at once.
    @Test func aFeedReadFromASilentFIFOOrPipeStopsAtTheDeadlineAndAtSIGINT() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let fifo = dir.appendingPathComponent("feed.fifo").path
            #expect(mkfifo(fifo, 0o600) == 0)
            let started = ContinuousClock.now
            let deadline = try MirrorProcess.start(
                ["feed", fifo, "--out", dir.appendingPathComponent("a").path, "--max-duration", "1s"],
                log: dir.appendingPathComponent("deadline.log"))
            // Killed if it hangs (on a loaded machine a run that ends on its own may take long to).
            try? await eventually("mirror ends at its deadline", within: .seconds(60)) { !deadline.isRunning }
            if deadline.isRunning { deadline.signal(SIGKILL) }
            #expect(await deadline.wait() == .exited(0))
            #expect(ContinuousClock.now - started < .seconds(60))

            // A writer that comes later is waited for, and its feed read whole.
            let late = dir.appendingPathComponent("late.fifo").path
            #expect(mkfifo(late, 0o600) == 0)
            let reader = try MirrorProcess.start(
                ["feed", late, "--out", dir.appendingPathComponent("c").path], log: dir.appendingPathComponent("late.log"))
            try await Task.sleep(for: .milliseconds(500))
            let writer = open(late, O_WRONLY)
            #expect(writer >= 0)
            let feed = Array(#"<?xml version="1.0"?><rss version="2.0"><channel><title>late</title></channel></rss>"#.utf8)
            #expect(feed.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) } == feed.count)
            close(writer)
            try? await eventually("mirror reads the late feed", within: .seconds(60)) { !reader.isRunning }
            if reader.isRunning { reader.signal(SIGKILL) }
            let lateLog = (try? String(contentsOf: dir.appendingPathComponent("late.log"), encoding: .utf8)) ?? ""
            #expect(await reader.wait() == .exited(0), "\(lateLog)")
            #expect(lateLog.contains("lists no enclosures"), "\(lateLog)")

            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer { close(ends[1]) }
            let log = dir.appendingPathComponent("stderr")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            let child = try ChildProcess(
                executable: MirrorProcess.executable.path, arguments: ["feed", "-", "--out", dir.appendingPathComponent("b").path],
                standardInput: ends[0], standardError: handle.fileDescriptor
            ).start()
            try? handle.close()
            close(ends[0])
            // Running, and reading: the writer's end is open and says nothing.
            try await Task.sleep(for: .seconds(1))
            #expect(child.isRunning)
            let interrupted = ContinuousClock.now
            child.signal(SIGINT)
            try? await eventually("mirror ends after SIGINT", within: .seconds(60)) { !child.isRunning }
            if child.isRunning { child.signal(SIGKILL) }
            #expect(await child.wait() == .exited(130), "\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
            #expect(ContinuousClock.now - interrupted < .seconds(60))
        }
    }

    @Test func aFeedIsReadFromStandardInputWithRelativeLinksResolvedAgainstTheBaseURL() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                // Relative links, as a feed saved from a site has.
                let relative = try feedText(server, "podcast.rss").replacingOccurrences(of: "\(server.baseURL)/files/", with: "")
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run(
                    ["feed", "-", "--out", out, "--base-url", "\(server.baseURL)/files/", "-q"], standardInput: Array(relative.utf8))
                #expect(run.status == 0, "\(run.stderr)")
                #expect(TestSupport.digest(ofFile: out + "/enclosures/episode-1.mp3") == TestSupport.digest(server.content(of: "/files/episode-1.mp3")))
                // Without a base, each relative link is reported, and nothing is guessed.
                let unbased = dir.appendingPathComponent("unbased").path
                let reported = try await MirrorProcess.run(["feed", "-", "--out", unbased], standardInput: Array(relative.utf8))
                #expect(reported.status == 1)
                #expect(reported.stderr.contains("--base-url") && reported.stderr.contains("episode-1.mp3"))
                #expect(!FileManager.default.fileExists(atPath: unbased + "/enclosures/episode-1.mp3"))
            }
        }
    }

    @Test func statusListsTheVersionsOfAnItem() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let feed = "\(server.baseURL)/feeds/Python.xml"
                #expect(try await MirrorProcess.run(["feed", feed, "--out", out, "--mode", "newFile", "-q"]).status == 0)
                server.setFeed(path: "/feeds/Python.xml", text: try feedText(server, "Python.xml")
                    .replacingOccurrences(of: "<version>3.14.6</version>", with: "<version>3.14.7</version>"))
                server.changeContent(path: "/files/Python.tgz")
                #expect(try await MirrorProcess.run(["feed", feed, "--out", out, "--mode", "newFile", "-q"]).status == 0)
                let status = try await MirrorProcess.run(["status", "--out", out])
                #expect(status.stdout.contains("1 items have more than one version"), "\(status.stdout)")
                let versions = try await MirrorProcess.run(["status", "--out", out, "--versions", "Python.tgz"])
                #expect(versions.status == 0)
                let lines = versions.stdout.split(separator: "\n")
                #expect(lines.first?.contains("2 versions") == true)
                #expect(lines.count == 3)
                #expect(lines[1].contains("enclosures/Python.tgz") && lines[1].contains("version 3.14.6"))
                #expect(lines[2].contains("enclosures/Python(1).tgz") && lines[2].contains("version 3.14.7"))
                let unknown = try await MirrorProcess.run(["status", "--out", out, "--versions", "Nothing.tgz"])
                #expect(unknown.status == 66)
            }
        }
    }
}
