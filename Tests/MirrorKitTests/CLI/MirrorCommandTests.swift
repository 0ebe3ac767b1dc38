import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// Runs the real `mirror` executable, as cron would.
@Suite("The mirror command", .timeLimit(.minutes(2)))
struct MirrorCommandTests {
    typealias Run = MirrorProcess.Run

    static var executable: URL { MirrorProcess.executable }

    private func mirror(_ arguments: [String]) async throws -> Run {
        try await MirrorProcess.run(arguments)
    }

    /// Starts `mirror` without waiting for it; output goes to files in `dir`.
    private func launch(_ arguments: [String], outputIn dir: URL) throws -> ChildProcess.Started {
        let errPath = dir.appendingPathComponent("launch-stderr").path
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let error = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        defer { try? error.close() }
        return try ChildProcess(executable: Self.executable.path, arguments: arguments, standardError: error.fileDescriptor).start()
    }

    private func withClientID<T>(_ body: (URL, String) async throws -> T) async throws -> T {
        try await MirrorProcess.withClientID(body)
    }

    @Test func mirrorsTheTagByteForByteAndSaysSoInOneLine() async throws {
        try await TestSupport.withServer { server in
            try await withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await mirror([
                    "cats", "--out", out, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stderr.isEmpty)
                #expect(run.stdout.hasPrefix("cats: 28 files: 26 downloaded"))
                #expect(run.stdout.contains("2 removed upstream, 0 failed"))
                // The removed image is named once, by this run; the next runs do not ask for it again.
                let lines = run.stdout.split(separator: "\n")
                #expect(lines.count == 2, "\(run.stdout)")
                #expect(lines.last?.hasPrefix("cats: removed upstream, not asked for again: \(server.baseURL)/Rm0vEd1") == true, "\(run.stdout)")
                let status = try await mirror(["status", out])
                #expect(status.stdout.contains("  removed upstream, not asked for again:\n    \(server.baseURL)/Rm0vEd1"), "\(status.stdout)")
                let json = try await mirror(["status", out, "--json"])
                #expect(json.stdout.contains("\"removed\" : ["), "\(json.stdout)")
                for id in TestSupport.catsImageIDs {
                    let preview = "/\(id)m.jpg"
                    #expect(TestSupport.digest(ofFile: out + "/preview" + preview) == TestSupport.digest(server.content(of: preview)))
                    // An animated GIF is mirrored as its MP4.
                    let served = server.mediaPaths.filter { $0.hasPrefix("/\(id).") }
                    let full = try #require(served.first { $0.hasSuffix(".mp4") } ?? served.first)
                    #expect(TestSupport.digest(ofFile: out + "/full" + full) == TestSupport.digest(server.content(of: full)))
                }
                let quietAgain = try await mirror([
                    "cats", "--out", out, "--client-id-file", idFile, "--quiet",
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(quietAgain.status == 0)
                #expect(quietAgain.stdout.isEmpty && quietAgain.stderr.isEmpty)
                let again = try await mirror([
                    "cats", "--out", out, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(again.status == 0)
                #expect(again.stdout == "cats: nothing new, listing read (1 page this run)\n")
            }
        }
    }

    @Test func aMissingClientIDFileExitsWithAConfigurationError() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let out = dir.appendingPathComponent("out").path
            let run = try await mirror(["cats", "--out", out, "--client-id-file", "/nonexistent/client-id"])
            #expect(run.status == 78)
            #expect(run.stderr == "mirror: client id file /nonexistent/client-id: does not exist\n")
            // Checked before the directory is touched: a typo in a crontab makes no mirror.
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    @Test func anUnreachableAPIExitsUnavailable() async throws {
        try await withClientID { dir, idFile in
            let run = try await mirror([
                "cats", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile,
                "--api-base", "http://127.0.0.1:9",
            ])
            #expect(run.status == 69)
            #expect(run.stderr.contains("Imgur API http://127.0.0.1:9/3/gallery/t/cats/time/all/0 unreachable"))
        }
    }

    @Test func aSecondRunOnALockedDirectoryExitsTryLater() async throws {
        try await withClientID { dir, idFile in
            let directory = try MirrorDirectory(root: dir.appendingPathComponent("out"))
            let lock = try RunLock(directory: directory)
            let run = try await mirror(["cats", "--out", directory.root.path, "--client-id-file", idFile])
            #expect(run.status == 75)
            #expect(run.stderr.contains("another mirror run holds"))
            withExtendedLifetime(lock) {}
        }
    }

    @Test func noMetadataOverridesTheConfigAndAlwaysProgressIsRefusedWithJSON() async throws {
        try await TestSupport.withServer { server in
            try await withClientID { dir, idFile in
                let config = dir.appendingPathComponent("config.json").path
                try TestSupport.write(Array(#"{"metadata": true}"#.utf8), to: config)
                let arguments = ["cats"] + MirrorProcess.fixtureOptions(server: server, idFile: idFile) + ["--config", config]
                let on = try await mirror(arguments + ["--out", dir.appendingPathComponent("on").path])
                #expect(on.status == 0, "\(on.stderr)")
                #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("on/meta/aB3dE5f.json").path))
                let off = try await mirror(arguments + ["--out", dir.appendingPathComponent("off").path, "--no-metadata"])
                #expect(off.status == 0, "\(off.stderr)")
                #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("off/meta").path))
                let both = try await mirror(arguments + ["--out", dir.appendingPathComponent("x").path, "--progress", "always", "--log-format", "json"])
                #expect(both.status == 64)
                #expect(both.stderr.contains("--progress always would put progress lines among the JSON lines"), "\(both.stderr)")
            }
        }
    }

    @Test func badOptionsAreUsageErrors() async throws {
        let run = try await mirror(["cats", "--out", "/tmp/x", "--pages", "0"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("--pages must be at least 1"))
        let badURL = try await mirror(["cats", "--out", "/tmp/x", "--api-base", "ftp://x", "--client-id-file", "/dev/null"])
        #expect(badURL.status == 64)
        #expect(badURL.stderr.contains("--api-base must be an http or https URL, got 'ftp://x'"))
    }

    @Test func aSpentAPIBudgetExitsTryLaterAfterMirroringWhatWasListed() async throws {
        try await TestSupport.withServer { server in
            server.setRateLimit(userRemaining: 8, userReset: 3600)
            try await withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await mirror([
                    "cats", "--out", out, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(run.status == 75)
                #expect(run.stderr.contains("Imgur API rate limit"))
                #expect(run.stderr.contains("stopping so a later run can carry on"))
                #expect(run.stdout.contains("the next run carries on"))
                #expect(FileManager.default.fileExists(atPath: out + "/full/aB3dE5f.jpg"))
            }
        }
    }

    @Test func someFailedFilesExitOne() async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 404), path: "/aB3dE5f.jpg")
            try await withClientID { dir, idFile in
                let run = try await mirror([
                    "cats", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile, "--quiet",
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(run.status == 1)
                #expect(run.stdout.contains("1 failed"))
                #expect(run.stderr.contains("/aB3dE5f.jpg: HTTP 404"))
            }
        }
    }

    /// A 64 MiB original interrupted at about half way, by SIGKILL or by SIGTERM, then mirrored again.
    @Test(arguments: [SIGKILL, SIGTERM])
    func anInterruptedRunResumesWhereItStopped(_ signal: Int32) async throws {
        try await TestSupport.withServer { server in
            let path = "/B1gF1le.jpg"
            let size = 64 << 20
            server.inject(.throttle(bytesPerSecond: 24 << 20), path: path)
            try await withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = [
                    "bigfile", "--out", out, "--client-id-file", idFile, "--quiet",
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ]
                let first = try launch(arguments, outputIn: dir)
                try await MirrorProcess.waitForPartial(in: out, atLeast: Int64(size / 2))
                kill(first.pid, signal)
                let firstStatus = await first.wait()
                if signal == SIGKILL {
                    #expect(firstStatus == .signalled(SIGKILL))
                } else {
                    // SIGTERM is caught: the run writes out what it has and exits 128 + 15.
                    let stderr = String(decoding: TestSupport.bytes(at: dir.appendingPathComponent("launch-stderr").path) ?? [], as: UTF8.self)
                    #expect(firstStatus == .exited(143), "status \(firstStatus), stderr: \(stderr)")
                }
                #expect(!FileManager.default.fileExists(atPath: out + "/full" + path))

                let second = try await mirror(arguments)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(TestSupport.digest(ofFile: out + "/full" + path) == TestSupport.digest(server.content(of: path)))
                let sent = server.bodyBytesSent(path: path)
                #expect(Double(sent) <= 1.05 * Double(size), "sent \(sent) bytes for \(size)")
                #expect(server.requests.last { $0.path == path }?.header("Range") != nil)
            }
        }
    }

    @Test func statusShowsARunningMirrorThenThePartialItLeft() async throws {
        try await TestSupport.withServer { server in
            server.inject(.throttle(bytesPerSecond: 16 << 20), path: "/B1gF1le.jpg")
            try await withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let running = try launch([
                    "bigfile", "--out", out, "--client-id-file", idFile, "--quiet",
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ], outputIn: dir)
                try await MirrorProcess.waitForPartial(in: out, atLeast: 8 << 20)
                // The running mirror rewrites its status every second.
                try await eventually("status names the file", within: .seconds(3)) {
                    let status = (try? String(contentsOfFile: out + "/.mirror/status.json", encoding: .utf8)) ?? ""
                    return status.contains("B1gF1le")
                }
                let live = try await mirror(["status", "--out", out])
                #expect(live.status == 0)
                #expect(live.stdout.contains("running: tag bigfile, pid \(running.pid)"))
                #expect(live.stdout.contains("forced \(server.baseURL)/B1gF1le.jpg"))

                kill(running.pid, SIGKILL)
                _ = await running.wait()
                let after = try await mirror(["status", "--out", out])
                #expect(after.stdout.hasPrefix("no run in progress\npartial downloads kept for the next run:\n"))
                #expect(after.stdout.contains("% "))
                #expect(after.stdout.contains("\(server.baseURL)/B1gF1le.jpg"))
            }
        }
    }

    @Test func maxFileSizeFromTheFlagOrTheConfigCapsAFeedsFiles() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let feed = "\(server.baseURL)/feeds/podcast.rss"
                let config = dir.appendingPathComponent("config.json").path
                try TestSupport.write(Array(#"{"maxFileSize": "64k"}"#.utf8), to: config)
                // The 1 MiB episode is over either cap; the flag wins over the config.
                for (index, arguments) in [["--max-file-size", "64k"], ["--config", config], ["--config", config, "--max-file-size", "2M"]].enumerated() {
                    let out = dir.appendingPathComponent("out-\(index)").path
                    let run = try await mirror(["feed", feed, "--out", out] + arguments)
                    let capped = run.stderr.contains("episode-1.mp3: the file is larger than 65536 bytes")
                    #expect(capped == (index < 2), "\(arguments): \(run.stderr)")
                    #expect(run.status == (index < 2 ? 1 : 0), "\(arguments): \(run.stderr)")
                    #expect(FileManager.default.fileExists(atPath: out + "/enclosures/episode-1.mp3") == (index == 2))
                }
                let bad = try await mirror(["feed", feed, "--out", dir.appendingPathComponent("bad").path, "--max-file-size", "lots"])
                #expect(bad.status == 64)
                #expect(bad.stderr.contains("--max-file-size must be a size such as 4G or 500M, got 'lots'"), "\(bad.stderr)")
            }
        }
    }

    @Test func statusMakesNothingInTheMirror() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(".mirror"), withIntermediateDirectories: false)
            let run = try await mirror(["status", "--out", dir.path])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout == "no run in progress\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/.mirror") == [])
        }
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give the mirror to another user"))
    func statusReadsAMirrorAnotherUserRuns() async throws {
        try await TestSupport.withServer { server in
            try await withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await mirror([
                    "cats", "--out", out, "--client-id-file", idFile, "--quiet",
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(run.status == 0, "\(run.stderr)")
                // The cron job's user owns it; someone else looks at how it stands.
                let names = try FileManager.default.subpathsOfDirectory(atPath: out)
                for name in names + [""] { #expect(lchown(out + "/" + name, 65534, 65534) == 0) }
                let status = try await mirror(["status", "--out", out])
                #expect(status.status == 0, "\(status.stderr)")
                #expect(status.stdout.contains("imgur tag cats"), "\(status.stdout)")
            }
        }
    }

    @Test func statusOfADirectoryThatIsNoMirrorIsAnError() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let run = try await mirror(["status", "--out", dir.path])
            #expect(run.status == 66)
            #expect(run.stderr.contains("is not a mirror directory"))
        }
    }

    @Test func feedExitsZeroThenDataErrorThenUnavailable() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let good = try await mirror(["feed", "\(server.baseURL)/feeds/docsets.atom", "--out", out, "--quiet"])
                #expect(good.status == 0 && good.stdout.isEmpty && good.stderr.isEmpty, "\(good.stderr)")
                #expect(FileManager.default.fileExists(atPath: out + "/enclosures/Alpha-2.1.docset.xar"))
                // Cut short, with a whole entry: read as far as it goes, with a warning.
                let broken = try await mirror(["feed", "\(server.baseURL)/feeds/broken.atom", "--out", out])
                #expect(broken.status == 0, "\(broken.stderr)")
                #expect(broken.stderr.contains("not well-formed XML at line 6") && broken.stderr.contains("read 1 entry anyway"))
                // Without one: data of the wrong shape.
                server.setFeed(path: "/feeds/hopeless.atom", text: "<?xml version=\"1.0\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\"><entry><title>x</ti")
                let hopeless = try await mirror(["feed", "\(server.baseURL)/feeds/hopeless.atom", "--out", out])
                #expect(hopeless.status == 65)
                #expect(hopeless.stderr.contains("not well-formed XML at line 2"), "\(hopeless.stderr)")
                let missing = try await mirror(["feed", "\(server.baseURL)/feeds/none.atom", "--out", out])
                #expect(missing.status == 69)
                #expect(missing.stderr.contains("HTTP 404"))
            }
        }
    }

    @Test func quietSaysNothingAboutARetryThatEndedWell() async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 503), path: "/feeds/docsets.atom")
            try await TestSupport.withTemporaryDirectory { dir in
                let run = try await mirror([
                    "feed", "\(server.baseURL)/feeds/docsets.atom", "--out", dir.appendingPathComponent("out").path, "--quiet",
                ])
                #expect(run.status == 0)
                #expect(run.stdout.isEmpty && run.stderr.isEmpty, "\(run.stderr)")
            }
        }
    }
}
