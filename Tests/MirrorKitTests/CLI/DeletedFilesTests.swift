import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// A mirror never shrinks silently: what the user deletes comes back on the next run, said in its
/// summary and counted by `mirror status`, unless `--keep-deleted` says to leave it.
@Suite("Files deleted by hand: fetched again, unless kept deleted", .serialized, .timeLimit(.minutes(3)))
struct DeletedFilesTests {
    /// Mirrors the fixture tag once (with `extra` options), then hands over the server, the
    /// test's folder, the mirror and the arguments that made it.
    private func withMirroredCats(
        extra: [String] = [], _ body: (FixtureServer, URL, String, [String]) async throws -> Void
    ) async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + extra
                let first = try await MirrorProcess.run(arguments)
                #expect(first.status == 0, "\(first.stderr)")
                try await body(server, dir, out, arguments)
            }
        }
    }

    @Test func aFileDeletedByHandIsFetchedAgainAndStatusCountsWhatIsOnDisk() async throws {
        try await withMirroredCats { server, _, out, arguments in
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

    @Test func keepDeletedHoldsInNewFileModeToo() async throws {
        try await withMirroredCats(extra: ["--mode", "new-file"]) { server, dir, out, arguments in
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

    @Test func aDeletedFileItsServerNoLongerHasIsReportedGoneOnceNotFailedForever() async throws {
        try await withMirroredCats { server, dir, out, arguments in
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

    @Test func thumbnailsDeletedAfterNoPreviewsStayDeleted() async throws {
        try await withMirroredCats { server, dir, out, arguments in
            for name in try FileManager.default.contentsOfDirectory(atPath: out + "/preview") {
                try FileManager.default.removeItem(atPath: out + "/preview/" + name)
            }
            let before = server.requests.count
            let run = try await MirrorProcess.run(arguments + ["--no-previews"])
            #expect(run.status == 0 && run.stdout.hasPrefix("cats: nothing new"), "\(run.stdout)")
            #expect(!server.requests.dropFirst(before).contains { !$0.path.hasPrefix("/3/") }, "no file was asked for")
        }
    }

    @Test(arguments: [false, true])
    func keepDeletedLeavesAFileDeletedByHandDeleted(_ byConfig: Bool) async throws {
        try await withMirroredCats { server, dir, out, arguments in
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
}
