import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// What a new user runs into first, through the real executable: mistakes named plainly, numbers
/// printed as people read them.
@Suite("A newcomer's first runs", .serialized, .timeLimit(.minutes(3)))
struct NewcomerTests {
    @Test(arguments: ["", "  "])
    func anEmptyOutIsRefusedBeforeAnythingIsWritten(_ out: String) async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            for arguments in [["cats", "--out", out], ["feed", "-", "--out", out], ["status", "--out", out], ["status", out]] {
                let run = try await MirrorProcess.run(arguments, workingDirectory: dir.path)
                #expect(run.status == 64, "\(arguments): \(run.stderr)")
                #expect(run.stderr.contains("is empty; name the mirror directory"), "\(arguments): \(run.stderr)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty, "nothing in the working directory")
        }
    }

    @Test func statusTakesTheDirectoryAsAnArgument() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run([
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(run.status == 0, "\(run.stderr)")
                let byArgument = try await MirrorProcess.run(["status", out])
                let byOption = try await MirrorProcess.run(["status", "--out", out])
                #expect(byArgument.status == 0 && byArgument.stdout.contains("last run: tag cats"), "\(byArgument.stdout)")
                #expect(byArgument.stdout == byOption.stdout)
                let both = try await MirrorProcess.run(["status", out, "--out", out])
                #expect(both.status == 64)
            }
        }
    }

    @Test func aFileDeletedByHandIsFetchedAgainAndStatusCountsWhatIsOnDisk() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = [
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL,
                ]
                let first = try await MirrorProcess.run(arguments)
                #expect(first.status == 0, "\(first.stderr)")
                let full = try #require(try FileManager.default.contentsOfDirectory(atPath: out + "/full").sorted().first)
                let preview = try #require(try FileManager.default.contentsOfDirectory(atPath: out + "/preview").sorted().first)
                let content = try Data(contentsOf: URL(fileURLWithPath: out + "/full/" + full))
                try FileManager.default.removeItem(atPath: out + "/full/" + full)
                try FileManager.default.removeItem(atPath: out + "/preview/" + preview)

                let status = try await MirrorProcess.run(["status", out])
                #expect(status.stdout.contains("2 recorded files are missing from the disk"), "\(status.stdout)")
                let figures = try #require(status.stdout.split(separator: "\n").first { $0.hasPrefix("mirrored: ") })

                let again = try await MirrorProcess.run(arguments)
                #expect(again.status == 0, "\(again.stderr)")
                #expect(again.stdout.contains("2 of them missing from the disk and fetched again"), "\(again.stdout)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/full/" + full)) == content)
                #expect(FileManager.default.fileExists(atPath: out + "/preview/" + preview))
                let after = try await MirrorProcess.run(["status", out])
                #expect(!after.stdout.contains("missing from the disk:"), "\(after.stdout)")
                let figuresAfter = try #require(after.stdout.split(separator: "\n").first { $0.hasPrefix("mirrored: ") })
                #expect(figures != figuresAfter, "the deleted files were not counted as mirrored: \(figures)")

                // A third run finds everything in place: no file is asked for.
                let mediaRequests = { server.requests.count { !$0.path.hasPrefix("/3/") } }
                let before = mediaRequests()
                let third = try await MirrorProcess.run(arguments)
                #expect(third.status == 0 && !third.stdout.contains("missing"), "\(third.stdout)")
                #expect(mediaRequests() == before)
            }
        }
    }

    @Test func keepDeletedHoldsInNewFileModeToo() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = [
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL,
                    "--mode", "new-file",
                ]
                #expect(try await MirrorProcess.run(arguments).status == 0)
                try FileManager.default.removeItem(atPath: out + "/full/aB3dE5f.jpg")
                let asked = server.requestCount(path: "/aB3dE5f.jpg")
                let kept = try await MirrorProcess.run(arguments + ["--keep-deleted"])
                #expect(kept.status == 0, "\(kept.stderr)")
                #expect(!FileManager.default.fileExists(atPath: out + "/full/aB3dE5f.jpg"), "not saved back as a 'new version'")
                #expect(server.requestCount(path: "/aB3dE5f.jpg") == asked)
                // Without it, new-file mode restores the file as skip-if-exists does.
                let restored = try await MirrorProcess.run(arguments)
                #expect(restored.stdout.contains("1 of them missing from the disk and fetched again"), "\(restored.stdout)")
                #expect(FileManager.default.fileExists(atPath: out + "/full/aB3dE5f.jpg"))
            }
        }
    }

    @Test func aDeletedFileItsServerNoLongerHasIsReportedGoneOnceNotFailedForever() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = [
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL,
                ]
                #expect(try await MirrorProcess.run(arguments).status == 0)
                try FileManager.default.removeItem(atPath: out + "/full/aB3dE5f.jpg")
                server.inject(.respond(status: 404, headers: [:], body: "gone"), path: "/aB3dE5f.jpg", times: 10)
                let gone = try await MirrorProcess.run(arguments)
                #expect(gone.status == 0, "\(gone.stdout)\(gone.stderr)")
                #expect(gone.stdout.contains("1 removed upstream, 0 failed"), "\(gone.stdout)")
                let asked = server.requestCount(path: "/aB3dE5f.jpg")
                let later = try await MirrorProcess.run(arguments)
                #expect(later.status == 0 && later.stdout.hasPrefix("cats: nothing new"), "\(later.stdout)")
                #expect(server.requestCount(path: "/aB3dE5f.jpg") == asked)
            }
        }
    }

    @Test func thumbnailsDeletedAfterNoPreviewsStayDeleted() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = [
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL,
                ]
                #expect(try await MirrorProcess.run(arguments).status == 0)
                for name in try FileManager.default.contentsOfDirectory(atPath: out + "/preview") {
                    try FileManager.default.removeItem(atPath: out + "/preview/" + name)
                }
                let before = server.requests.count
                let run = try await MirrorProcess.run(arguments + ["--no-previews"])
                #expect(run.status == 0 && run.stdout.hasPrefix("cats: nothing new"), "\(run.stdout)")
                #expect(!server.requests.dropFirst(before).contains { !$0.path.hasPrefix("/3/") }, "no file was asked for")
            }
        }
    }

    @Test(arguments: [false, true])
    func keepDeletedLeavesAFileDeletedByHandDeleted(_ byConfig: Bool) async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = [
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL,
                ]
                #expect(try await MirrorProcess.run(arguments).status == 0)
                let full = try #require(try FileManager.default.contentsOfDirectory(atPath: out + "/full").sorted().first)
                try FileManager.default.removeItem(atPath: out + "/full/" + full)
                let asked = server.requestCount(path: "/" + full)
                let keep: [String]
                if byConfig {
                    let config = dir.appendingPathComponent("config.json").path
                    try TestSupport.write(Array(#"{"keepDeleted": true}"#.utf8), to: config)
                    keep = ["--config", config]
                } else {
                    keep = ["--keep-deleted"]
                }
                let again = try await MirrorProcess.run(arguments + keep)
                #expect(again.status == 0, "\(again.stderr)")
                #expect(!again.stdout.contains("missing"), "\(again.stdout)")
                #expect(!FileManager.default.fileExists(atPath: out + "/full/" + full))
                #expect(server.requestCount(path: "/" + full) == asked)
            }
        }
    }

    @Test func aFeedEnclosureDeletedByHandIsFetchedAgainUnlessKeptDeleted() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let arguments = ["feed", "\(server.baseURL)/feeds/podcast.rss", "--out", out]
                #expect(try await MirrorProcess.run(arguments).status == 0)
                let episode = out + "/enclosures/episode-1.mp3"
                try FileManager.default.removeItem(atPath: episode)
                let again = try await MirrorProcess.run(arguments)
                #expect(again.status == 0, "\(again.stderr)")
                #expect(again.stdout.contains("1 of them missing from the disk and fetched again"), "\(again.stdout)")
                #expect(TestSupport.digest(ofFile: episode) == TestSupport.digest(server.content(of: "/files/episode-1.mp3")))

                try FileManager.default.removeItem(atPath: episode)
                let asked = server.requestCount(path: "/files/episode-1.mp3")
                let kept = try await MirrorProcess.run(arguments + ["--keep-deleted"])
                #expect(kept.status == 0, "\(kept.stderr)")
                #expect(!FileManager.default.fileExists(atPath: episode))
                #expect(server.requestCount(path: "/files/episode-1.mp3") == asked)
            }
        }
    }

    @Test func aTagTheAPIDoesNotKnowIsOneLineAnd69AndLeavesNothing() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let common = ["--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL]
                let typo = try await MirrorProcess.run(["catz", "--out", out] + common)
                #expect(typo.status == 69, "\(typo.stderr)")
                #expect(typo.stdout.isEmpty, "\(typo.stdout)")
                #expect(typo.stderr == "mirror: no such tag: catz\n", "\(typo.stderr)")
                #expect(!FileManager.default.fileExists(atPath: out), "a first run on a typo creates nothing")

                // Beside a tag that exists, the typo is its line and its status; the mirror stays.
                let both = try await MirrorProcess.run(["cats", "catz", "--out", out] + common)
                #expect(both.status == 69, "\(both.stderr)")
                #expect(both.stderr.contains("mirror: no such tag: catz"), "\(both.stderr)")
                #expect(both.stdout.contains("cats: "), "\(both.stdout)")
                #expect(!both.stdout.contains("catz"), "\(both.stdout)")
                #expect(try !FileManager.default.contentsOfDirectory(atPath: out + "/full").isEmpty)
                // A mirror that exists is not removed for a typo.
                let again = try await MirrorProcess.run(["catz", "--out", out] + common)
                #expect(again.status == 69)
                #expect(FileManager.default.fileExists(atPath: out + "/.mirror"))
                let status = try await MirrorProcess.run(["status", out])
                #expect(!status.stdout.contains("tag catz time all"), "no cursor is kept for it: \(status.stdout)")
            }
        }
    }

    @Test(arguments: [["--no-previews"], ["--thumbnail", "none"]])
    func withoutPreviewsOnlyFullSizeFilesAreFetchedAndTheRunIsComplete(_ option: [String]) async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = [
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL,
                ] + option
                let run = try await MirrorProcess.run(arguments)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stdout.contains("cats: 14 files: 13 downloaded"), "\(run.stdout)")
                #expect(run.stdout.contains("1 removed upstream, 0 failed"), "\(run.stdout)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: out + "/full").count == 13)
                let previews = (try? FileManager.default.contentsOfDirectory(atPath: out + "/preview")) ?? []
                #expect(previews.isEmpty)
                let thumbnails = Set(TestSupport.catsImageIDs.map { "/\($0)m.jpg" })
                #expect(!server.requests.contains { thumbnails.contains($0.path) }, "no thumbnail is asked for")
                // Each image was settled by its one file: the next run has nothing left to do.
                let again = try await MirrorProcess.run(arguments)
                #expect(again.stdout.hasPrefix("cats: nothing new"), "\(again.stdout)")
            }
        }
    }

    @Test func noPreviewsAndAThumbnailSizeContradictEachOther() async throws {
        let run = try await MirrorProcess.run(["cats", "--out", "/tmp/never-made", "--no-previews", "--thumbnail", "l"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("--no-previews and --thumbnail l contradict each other"), "\(run.stderr)")
    }

    @Test func preferGIFFetchesAnimatedGIFsAsUploaded() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let config = dir.appendingPathComponent("config.json").path
                try TestSupport.write(Array(#"{"prefer": "gif"}"#.utf8), to: config)
                let run = try await MirrorProcess.run([
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL,
                    "--config", config,
                ])
                #expect(run.status == 0, "\(run.stderr)")
                let full = try FileManager.default.contentsOfDirectory(atPath: out + "/full")
                #expect(full.contains("Lm2nO4p.gif") && !full.contains("Lm2nO4p.mp4"), "\(full)")
                #expect(TestSupport.digest(ofFile: out + "/full/Lm2nO4p.gif") == TestSupport.digest(server.content(of: "/Lm2nO4p.gif")))
                // An animation uploaded as a video has no GIF: it stays an MP4.
                #expect(full.contains("Gh1iJ2k.mp4"), "\(full)")
                let wrong = try await MirrorProcess.run(["cats", "--out", out, "--prefer", "webm"])
                #expect(wrong.status == 64)
            }
        }
    }

    @Test func theDefaultConfigFileIsReadWithoutConfigAndNotWithNoConfig() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let home = dir.appendingPathComponent("config-home")
                try FileManager.default.createDirectory(at: home.appendingPathComponent("mirror"), withIntermediateDirectories: true)
                let config = home.appendingPathComponent("mirror/config.json").path
                try TestSupport.write(Array(#"{"thumbnail": "none"}"#.utf8), to: config)
                let environment = ["XDG_CONFIG_HOME": home.path]
                let common = ["--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL]
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run(["cats", "--out", out] + common, environment: environment)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(((try? FileManager.default.contentsOfDirectory(atPath: out + "/preview")) ?? []).isEmpty, "the default config was read")

                let ignoring = dir.appendingPathComponent("ignoring").path
                let without = try await MirrorProcess.run(["cats", "--out", ignoring, "--no-config"] + common, environment: environment)
                #expect(without.status == 0, "\(without.stderr)")
                #expect(try !FileManager.default.contentsOfDirectory(atPath: ignoring + "/preview").isEmpty, "--no-config read none")

                // A default config that is wrong is named like any other.
                try TestSupport.write(Array(#"{"thumbnail": "huge"}"#.utf8), to: config)
                let wrong = try await MirrorProcess.run(["cats", "--out", out] + common, environment: environment)
                #expect(wrong.status == 78)
                #expect(wrong.stderr.contains("config file \(config): 'thumbnail' must be one of"), "\(wrong.stderr)")
                let both = try await MirrorProcess.run(["cats", "--out", out, "--config", config, "--no-config"])
                #expect(both.status == 64)
            }
        }
    }

    @Test(arguments: [1, 2])
    func aFeedTakesConcurrency(_ concurrency: Int) async throws {
        try await TestSupport.withServer { server in
            // 1 and 2 MiB at 64 KiB/s: each takes a quarter of a minute, so what starts together shows.
            server.throttleMedia(bytesPerSecond: 64 << 10)
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let run = try ChildProcess(executable: MirrorProcess.executable.path, arguments: [
                    "feed", "\(server.baseURL)/feeds/podcast.rss", "--out", out, "--concurrency", "\(concurrency)",
                ]).start()
                let enclosures = { Set(server.requests.map(\.path).filter { $0.hasPrefix("/files/episode-") }).count }
                // The first request, however loaded the machine; then three seconds for a second.
                for _ in 0..<400 where enclosures() < 1 { try await Task.sleep(for: .milliseconds(50)) }
                for _ in 0..<60 where enclosures() < 2 { try await Task.sleep(for: .milliseconds(50)) }
                // One at a time has asked for one file; two at a time for both.
                #expect(enclosures() == concurrency)
                run.signal(SIGTERM)
                #expect(await run.wait() == .exited(143))
            }
        }
    }

    @Test func aMediaHostThatNeverResolvedIs69AndOneLine() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                // .invalid never resolves (RFC 2606): a typo in --media-base, as far as mirror can tell.
                let run = try await MirrorProcess.run([
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL,
                    "--media-base", "http://no-such-host.invalid", "--retries", "1",
                ])
                #expect(run.status == 69, "\(run.stderr)")
                let errors = run.stderr.split(separator: "\n")
                #expect(errors.count == 1, "\(run.stderr)")
                #expect(errors.first?.hasPrefix("mirror: cannot resolve no-such-host.invalid, and no file of this mirror ever came from it") == true, "\(run.stderr)")

                // A host that served this mirror before is a DNS outage when it stops resolving: try later.
                let good = try await MirrorProcess.run([
                    "cats", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(good.status == 0, "\(good.stderr)")
                let host = URLAuthority.of(server.baseURL)
                let state = try #require(StateDatabase.forReading(in: try MirrorDirectory(root: URL(fileURLWithPath: out))))
                #expect(try await state.hasFiles(fromHost: host))
                #expect(try await !state.hasFiles(fromHost: "no-such-host.invalid"))
            }
        }
    }

    @Test func execRunsAProgramAfterEachSavedFileWithTheFileInItsEnvironment() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let log = dir.appendingPathComponent("hook.log").path
                let script = dir.appendingPathComponent("hook").path
                try TestSupport.write(Array(
                    "#!/bin/sh\necho \"$1|$MIRROR_PATH|$MIRROR_RELATIVE_PATH|$MIRROR_URL|$MIRROR_ITEM|$MIRROR_SOURCE|$MIRROR_BYTES|${PGPASSWORD-unset}\" >> \"$2\"\necho HOOK-SAYS-SO\n".utf8),
                    to: script)
                chmod(script, 0o755)
                let common = ["--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL]
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
                    "\(server.baseURL)/aB3dE5f.jpg", "tag cats", "\(server.content(of: "/aB3dE5f.jpg")?.count ?? -1)", "unset",
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

    @Test func mediaFoundRemovedIsNamedOnceEvenWhereItsSourceListsItAgain() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                // An image's source lists it on every run, unlike a tag's incremental crawl.
                let arguments = [
                    "https://imgur.com/Rm0vEd1", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ]
                let first = try await MirrorProcess.run(arguments)
                #expect(first.status == 0, "\(first.stderr)")
                #expect(first.stdout.contains("2 removed upstream"), "\(first.stdout)")
                #expect(first.stdout.contains("image Rm0vEd1: removed upstream, not asked for again: "), "\(first.stdout)")
                let again = try await MirrorProcess.run(arguments)
                #expect(again.status == 0, "\(again.stderr)")
                #expect(again.stdout.contains("2 removed upstream"), "still counted: \(again.stdout)")
                #expect(!again.stdout.contains("not asked for again"), "named once: \(again.stdout)")
            }
        }
    }

    @Test func aFeedURLWithoutItsSchemeIsNamedWithAHint() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let out = dir.appendingPathComponent("out").path
            let run = try await MirrorProcess.run(["feed", "example.org/casts/feed.rss", "--out", out])
            #expect(run.status == 64)
            #expect(run.stderr.contains("for a URL, give its scheme: https://example.org/casts/feed.rss"), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    @Test func aRetryWaitIsPrintedAsPeopleReadIt() async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 503, headers: ["Retry-After": "1"], body: "busy"), path: "/feeds/podcast.rss")
            try await TestSupport.withTemporaryDirectory { dir in
                let run = try await MirrorProcess.run(["feed", "\(server.baseURL)/feeds/podcast.rss", "--out", dir.appendingPathComponent("out").path])
                #expect(run.status == 0, "\(run.stderr)")
                let line = try #require(run.stderr.split(separator: "\n").first { $0.contains("retrying in") }, "\(run.stderr)")
                #expect(line.hasSuffix("retrying in 1.0 s"), "\(line)")
            }
        }
    }

    @Test(arguments: [(0.3, "0.3 s"), (1.309_067_628_591_224_2, "1.3 s"), (42.4, "42 s"), (303, "5 min 3 s"), (5400, "1 h 30 min"), (3600, "1 h")])
    func durationsAreSpokenRounded(_ seconds: Double, _ spoken: String) {
        #expect(DurationText.spoken(.seconds(seconds)) == spoken)
    }

    @Test func aConfigValueThatNamesNothingListsWhatItTakes() async throws {
        try await MirrorProcess.withClientID { dir, idFile in
            let config = dir.appendingPathComponent("config.json").path
            try #"{"sort": "newest"}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let run = try await MirrorProcess.run(["cats", "--out", dir.appendingPathComponent("out").path, "--config", config, "--client-id-file", idFile])
            #expect(run.status == 78)
            #expect(run.stderr.contains("config file \(config): 'sort' must be one of viral, top, time, got 'newest'"), "\(run.stderr)")
            try #"{"progress": "sometimes"}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let progress = try await MirrorProcess.run(["cats", "--out", dir.appendingPathComponent("out").path, "--config", config, "--client-id-file", idFile])
            #expect(progress.stderr.contains("'progress' must be one of auto, always, never, got 'sometimes'"), "\(progress.stderr)")
        }
    }

    @Test func durationsAreReadAlikeInTheConfigAndOnTheCommandLine() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let config = dir.appendingPathComponent("config.json").path
                // Seconds as a number, as `--max-duration 3000` is; a wait as people write one.
                try #"{"maxDuration": 3000, "maxWait": "5m"}"#.write(toFile: config, atomically: true, encoding: .utf8)
                let base = ["--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL]
                let run = try await MirrorProcess.run(["cats", "--out", dir.appendingPathComponent("a").path, "--config", config] + base)
                #expect(run.status == 0, "\(run.stderr)")
                let flags = try await MirrorProcess.run(["cats", "--out", dir.appendingPathComponent("b").path, "--max-wait", "1m30s", "--max-duration", "1h30m"] + base)
                #expect(flags.status == 0, "\(flags.stderr)")
                let bad = try await MirrorProcess.run(["cats", "--out", dir.appendingPathComponent("c").path, "--max-wait", "soon"] + base)
                #expect(bad.status == 64)
                #expect(bad.stderr.contains("--max-wait must be a duration such as 5m"), "\(bad.stderr)")
            }
        }
    }
}
