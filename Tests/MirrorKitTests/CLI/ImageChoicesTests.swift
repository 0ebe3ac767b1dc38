import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// `--no-previews` (`--thumbnail none`) and `--prefer gif`, through the executable.
@Suite("What is fetched of an image: previews, the animated format", .serialized, .timeLimit(.minutes(3)))
struct ImageChoicesTests {
    @Test(arguments: [["--no-previews"], ["--thumbnail", "none"]])
    func withoutPreviewsOnlyFullSizeFilesAreFetchedAndTheRunIsComplete(_ option: [String]) async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + option
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
                let run = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + [
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
}
