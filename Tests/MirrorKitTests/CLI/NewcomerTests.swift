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
                let run = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile))
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

    @Test func aTagTheAPIDoesNotKnowIsOneLineAnd69AndLeavesNothing() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let common = MirrorProcess.fixtureOptions(server: server, idFile: idFile)
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

    @Test func theDefaultConfigFileIsReadWithoutConfigAndNotWithNoConfig() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let home = dir.appendingPathComponent("config-home")
                try FileManager.default.createDirectory(at: home.appendingPathComponent("mirror"), withIntermediateDirectories: true)
                let config = home.appendingPathComponent("mirror/config.json").path
                try TestSupport.write(Array(#"{"thumbnail": "none"}"#.utf8), to: config)
                let environment = ["XDG_CONFIG_HOME": home.path]
                let common = MirrorProcess.fixtureOptions(server: server, idFile: idFile)
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
                let good = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile))
                #expect(good.status == 0, "\(good.stderr)")
                let host = URLAuthority.of(server.baseURL)
                let state = try #require(StateDatabase.forReading(in: try MirrorDirectory(root: URL(fileURLWithPath: out))))
                #expect(try await state.hasFiles(fromHost: host))
                #expect(try await !state.hasFiles(fromHost: "no-such-host.invalid"))
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
                let base = MirrorProcess.fixtureOptions(server: server, idFile: idFile)
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
