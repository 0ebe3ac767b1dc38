import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// `mirror SOURCE...`: tags, albums, posts and images named as users paste them, several in one
/// run, through the real executable.
@Suite("Many sources in one run", .serialized, .timeLimit(.minutes(4)))
struct ManySourcesTests {
    private func mirror(_ arguments: [String], server: FixtureServer, idFile: String, standardInput: [UInt8]? = nil) async throws -> MirrorProcess.Run {
        try await MirrorProcess.run(
            arguments + MirrorProcess.fixtureOptions(server: server, idFile: idFile),
            standardInput: standardInput)
    }

    /// Every image's thumbnail and full-size file are in the mirror, byte for byte.
    private func expectMirrored(_ ids: [String], in out: String, server: FixtureServer, _ comment: Comment) {
        for id in ids {
            let preview = "/\(id)m.jpg"
            #expect(TestSupport.digest(ofFile: out + "/preview" + preview) == TestSupport.digest(server.content(of: preview)), comment)
            #expect(TestSupport.digest(ofFile: out + "/full/\(id).jpg") == TestSupport.digest(server.content(of: "/\(id).jpg")), comment)
        }
    }

    @Test func threeTagsAnAlbumAndAPostMirrorCompletelyInOneRunWithALineEach() async throws {
        try await TestSupport.withServer { server in
            for tag in ["alpha", "beta", "gamma", "elsewhere"] {
                server.addGeneratedTag(tag, pages: 2, perPage: 6, albumEvery: 3, imagesPerAlbum: 2, imageSize: 2048)
            }
            let album = try #require(server.generatedAlbumIDs("elsewhere").first)
            let post = try #require(server.generatedImageIDs("elsewhere").first)
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let sources = ["alpha", "#beta", "https://imgur.com/t/gamma", "imgur.com/a/\(album)", "https://m.imgur.com/gallery/a-title-\(post)"]
                let run = try await mirror(sources + ["--out", out], server: server, idFile: idFile)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stderr.isEmpty, "\(run.stderr)")
                let lines = run.stdout.split(separator: "\n").map(String.init)
                #expect(lines.count == 5, "\(lines)")
                for (line, label) in zip(lines, ["alpha: 32 files", "beta: 32 files", "gamma: 32 files", "album \(album): 4 files", "post \(post): 2 files"]) {
                    #expect(line.hasPrefix(label), "\(line)")
                    #expect(line.contains("0 failed"), "\(line)")
                }
                for tag in ["alpha", "beta", "gamma"] {
                    expectMirrored(server.generatedImageIDs(tag), in: out, server: server, "tag \(tag)")
                }
                expectMirrored(server.generatedAlbumImageIDs(album) + [post], in: out, server: server, "album and post")
                // One API budget for the run: the post is one call, the album one (its images are
                // not embedded) plus its list, each tag three pages and its albums.
                #expect(server.requestCount(path: "/3/gallery/\(post)") == 1)
                #expect(server.requestCount(path: "/3/album/\(album)") == 1)
                #expect(server.requestCount(path: "/3/album/\(album)/images") == 1)
                // Each source is a run of its own for mirror status.
                let status = try await MirrorProcess.run(["status", "--out", out])
                for name in ["tag alpha", "tag beta", "tag gamma", "album \(album)", "post \(post)"] {
                    #expect(status.stdout.contains(name), "\(status.stdout)")
                }

                let again = try await mirror(sources + ["--out", out], server: server, idFile: idFile)
                #expect(again.status == 0, "\(again.stderr)")
                let againLines = again.stdout.split(separator: "\n")
                #expect(againLines.count == 5)
                #expect(againLines.allSatisfy { $0.contains("nothing new") || $0.contains("already present") }, "\(again.stdout)")
            }
        }
    }

    @Test func aStaticAlbumPostAndAThumbnailURLNameTheirImages() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                // Ef1gH is an album of the cats page whose gallery post embeds its three images;
                // the thumbnail's URL names image aB3dE5f.
                let run = try await mirror(
                    ["https://imgur.com/gallery/Ef1gH", "https://i.imgur.com/aB3dE5fm.jpg", "--out", out],
                    server: server, idFile: idFile)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stdout.hasPrefix("post Ef1gH: 6 files: 6 downloaded"), "\(run.stdout)")
                #expect(run.stdout.contains("image aB3dE5f: 2 files: 2 downloaded"), "\(run.stdout)")
                for name in ["full/Ij2kL3m.jpg", "full/No4pQ5r.png", "full/Za8bC9d.jpg", "preview/Ij2kL3mm.jpg", "full/aB3dE5f.jpg"] {
                    #expect(FileManager.default.fileExists(atPath: out + "/" + name), "\(name)")
                }
                #expect(server.requestCount(path: "/3/album/Ef1gH/images") == 0, "the post embeds its images")
            }
        }
    }

    @Test func aStringThatIsNoSourceExits64NamingItBeforeAnythingIsCreated() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await mirror(["cats", "https://example.com/feed.rss", "--out", out], server: server, idFile: idFile)
                #expect(run.status == 64)
                #expect(run.stderr.contains("'https://example.com/feed.rss' is not an Imgur address"), "\(run.stderr)")
                #expect(run.stderr.contains("imgur.com/a/ID"), "the accepted forms are listed: \(run.stderr)")
                #expect(!FileManager.default.fileExists(atPath: out))
                #expect(server.apiRequestCount == 0)
            }
        }
    }

    @Test func aHostileSourceStringIsPrintedEscapedOnceOnBothPaths() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                // An argument: ArgumentParser prints the usage error.
                let argument = try await mirror(["ca\u{1B}[2Jts", "--out", out], server: server, idFile: idFile)
                #expect(argument.status == 64)
                #expect(!argument.stderr.contains("\u{1B}") && argument.stderr.contains("'ca\\u{1B}[2Jts'"), "\(argument.stderr)")
                // A line of an input file: mirror prints it.
                let list = dir.appendingPathComponent("sources.txt").path
                try "ca\u{1B}[2Jts\n".write(toFile: list, atomically: true, encoding: .utf8)
                let line = try await mirror(["-i", list, "--out", out], server: server, idFile: idFile)
                #expect(line.status == 64)
                #expect(!line.stderr.contains("\u{1B}") && line.stderr.contains("'ca\\u{1B}[2Jts'"), "\(line.stderr)")
                #expect(!line.stderr.contains("\\\\u{1B}"), "escaped once, not twice: \(line.stderr)")
            }
        }
    }

    @Test func anInputFileAddsSourcesAndABadLineIsNamedByItsNumber() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("listed", pages: 1, perPage: 4, albumEvery: 0, imageSize: 1024)
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let list = dir.appendingPathComponent("sources.txt").path
                try "# what this cron job keeps\n\nlisted   # a generated tag\nhttps://imgur.com/gallery/aB3dE5f\n".write(
                    toFile: list, atomically: true, encoding: .utf8)
                let run = try await mirror(["--input-file", list, "--out", out], server: server, idFile: idFile)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stdout.split(separator: "\n").map { $0.split(separator: ":").first ?? "" } == ["listed", "post aB3dE5f"], "\(run.stdout)")
                expectMirrored(server.generatedImageIDs("listed"), in: out, server: server, "the listed tag")

                let fromStandardInput = try await mirror(
                    ["-i", "-", "--out", out], server: server, idFile: idFile, standardInput: Array("listed\n".utf8))
                #expect(fromStandardInput.status == 0, "\(fromStandardInput.stderr)")
                #expect(fromStandardInput.stdout.hasPrefix("listed: nothing new"), "\(fromStandardInput.stdout)")

                try "listed\nhttps://imgur.com/user/someone\n".write(toFile: list, atomically: true, encoding: .utf8)
                let fresh = dir.appendingPathComponent("fresh").path
                let bad = try await mirror(["-i", list, "--out", fresh], server: server, idFile: idFile)
                #expect(bad.status == 64)
                #expect(bad.stderr.contains("\(list):2: 'https://imgur.com/user/someone'"), "\(bad.stderr)")
                #expect(!FileManager.default.fileExists(atPath: fresh))
            }
        }
    }

    @Test func theWorstSourceSetsTheExitStatusAndTheOthersStillMirror() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("fine", pages: 1, perPage: 4, albumEvery: 0, imageSize: 1024)
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await mirror(["imgur.com/a/ZZZZZZZ", "fine", "--out", out], server: server, idFile: idFile)
                #expect(run.status == 69, "\(run.stdout)\(run.stderr)")
                #expect(run.stderr.contains("Imgur has no album ZZZZZZZ"), "\(run.stderr)")
                #expect(run.stdout.contains("fine: 8 files: 8 downloaded"), "\(run.stdout)")
                expectMirrored(server.generatedImageIDs("fine"), in: out, server: server, "the good tag")
            }
        }
    }

    @Test func severalFeedsInOneRunEachNamedOnItsLine() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let feeds = ["\(server.baseURL)/feeds/podcast.rss", "\(server.baseURL)/feeds/docsets.atom"]
                let run = try await MirrorProcess.run(["feed"] + feeds + ["--out", out])
                #expect(run.status == 0, "\(run.stderr)")
                let lines = run.stdout.split(separator: "\n")
                #expect(lines.count == 2, "\(run.stdout)")
                #expect(lines.first?.hasPrefix("feed \(feeds[0]): ") == true, "\(run.stdout)")
                #expect(lines.last?.hasPrefix("feed \(feeds[1]): ") == true, "\(run.stdout)")
                #expect(lines.allSatisfy { $0.contains("0 failed") }, "\(run.stdout)")
            }
        }
    }

    /// The last run `mirror status --json` shows for each source.
    private func lastRuns(in out: String) async throws -> [String: [String: Any]] {
        let json = try await MirrorProcess.run(["status", "--out", out, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let runs = try #require(object["last_runs"] as? [[String: Any]])
        return Dictionary(runs.map { ($0["source"] as? String ?? "", $0) }) { first, _ in first }
    }

    @Test func aMediaHostGivenUpLeavesTheLaterSourcesNotStartedAndTryLater() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("first", pages: 1, perPage: 4, albumEvery: 0, imageSize: 1024)
            server.addGeneratedTag("second", pages: 1, perPage: 4, albumEvery: 0, imageSize: 1024)
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                // Nothing listens on port 9: the media host is down.
                let run = try await MirrorProcess.run([
                    "first", "second", "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL,
                    "--media-base", "http://127.0.0.1:9", "--retries", "1",
                ])
                #expect(run.status == 75, "\(run.stdout)\(run.stderr)")
                // The files that failed on their way to the verdict are no loss: left for later too.
                #expect(run.stdout.contains("first: 8 files: 0 downloaded (0 B), 0 already present, 8 left for the next run, 0 failed"), "\(run.stdout)")
                // One line for the host, with its count, and none for its files.
                let errors = run.stderr.split(separator: "\n")
                #expect(errors.count == 1, "\(run.stderr)")
                #expect(errors.first?.hasSuffix("stopping; 8 files left for the next run") == true, "\(run.stderr)")
                #expect(run.stdout.contains("second: not started, the run stopped first (127.0.0.1:9"), "\(run.stdout)")
                #expect(server.requestCount(path: "/3/gallery/t/second/time/all/0") == 0)
                let runs = try await lastRuns(in: out)
                #expect(runs["tag second"]?["exit_status"] as? Int == 75, "not taken for a success: \(runs)")
                #expect(runs["tag first"]?["exit_status"] as? Int == 75)
                #expect(runs.keys.allSatisfy { !$0.contains(",") }, "the run as a whole is not listed again: \(runs.keys)")
            }
        }
    }

    @Test func aSignalConcernsOnlySourcesItCutShort() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("quick", pages: 1, perPage: 2, albumEvery: 0, imageSize: 1024)
            // bigfile's 64 MiB at 2 MiB/s take 32 s: the signal comes while it downloads.
            server.inject(.throttle(bytesPerSecond: 2 << 20), path: "/B1gF1le.jpg")
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let stdout = dir.appendingPathComponent("stdout").path
                _ = FileManager.default.createFile(atPath: stdout, contents: nil)
                let output = try FileHandle(forWritingTo: URL(fileURLWithPath: stdout))
                let running = try ChildProcess(executable: MirrorProcess.executable.path, arguments: [
                    "quick", "bigfile", "--out", out, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ], standardOutput: output.fileDescriptor).start()
                try output.close()
                // Sources run in order: once bigfile's file is under way, quick is done.
                try await eventually("bigfile is downloading", within: .seconds(60)) {
                    server.bodyBytesSent(path: "/B1gF1le.jpg") > 0
                }
                running.signal(SIGTERM)
                #expect(await running.wait() == .exited(143))
                let lines = String(decoding: TestSupport.bytes(at: stdout) ?? [], as: UTF8.self).split(separator: "\n")
                #expect(lines.first?.hasPrefix("quick: 4 files: 4 downloaded") == true, "\(lines)")
                #expect(lines.first?.contains("interrupted") == false, "\(lines)")
                let runs = try await lastRuns(in: out)
                #expect(runs["tag quick"]?["exit_status"] as? Int == 0, "done before the signal: \(runs)")
                #expect(runs["tag quick"]?["interrupted"] as? Bool == false)
                #expect(runs["tag bigfile"]?["exit_status"] as? Int == 143)
                #expect(runs["tag bigfile"]?["interrupted"] as? Bool == true)
            }
        }
    }

    @Test func anInputFileThatNamesNothingIsRefusedAndABOMOrIndentIsNotPartOfASource() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("listed", pages: 1, perPage: 2, albumEvery: 0, imageSize: 1024)
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let list = dir.appendingPathComponent("sources.txt").path
                try "# nothing left here\n\n   \n".write(toFile: list, atomically: true, encoding: .utf8)
                let empty = try await mirror(["-i", list, "--out", out], server: server, idFile: idFile)
                #expect(empty.status == 64)
                #expect(empty.stderr.contains("names no source"), "\(empty.stderr)")
                #expect(!FileManager.default.fileExists(atPath: out))

                try "\u{FEFF}listed\n   # an indented comment\n   #listed\n".write(toFile: list, atomically: true, encoding: .utf8)
                let run = try await mirror(["-i", list, "--out", out], server: server, idFile: idFile)
                #expect(run.status == 0, "\(run.stderr)")
                let lines = run.stdout.split(separator: "\n")
                #expect(lines.count == 1 && lines[0].hasPrefix("listed: 4 files: 4 downloaded"), "named once, without the mark: \(run.stdout)")
            }
        }
    }

    @Test func aSidecarNamesEverySourceThatListedItsImage() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                // Ij2kL3m is in album Ef1gH, which the cats tag lists.
                let run = try await mirror(["cats", "imgur.com/a/Ef1gH", "--metadata", "--out", out], server: server, idFile: idFile)
                #expect(run.status == 0, "\(run.stderr)")
                func sources(_ id: String) throws -> [String]? {
                    let data = try Data(contentsOf: URL(fileURLWithPath: out + "/meta/\(id).json"))
                    return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["sources"] as? [String]
                }
                #expect(try sources("Ij2kL3m") == ["tag cats", "album Ef1gH"])
                #expect(try sources("aB3dE5f") == ["tag cats"])
                // Listed again by the same sources: the sidecar says the same, and is not rewritten.
                let before = try FileManager.default.attributesOfItem(atPath: out + "/meta/Ij2kL3m.json")[.systemFileNumber] as? Int
                let second = try await mirror(["imgur.com/a/Ef1gH", "--metadata", "--out", out], server: server, idFile: idFile)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(try sources("Ij2kL3m") == ["tag cats", "album Ef1gH"])
                let after = try FileManager.default.attributesOfItem(atPath: out + "/meta/Ij2kL3m.json")[.systemFileNumber] as? Int
                #expect(before != nil && before == after, "a rewrite is a rename: a new inode")
            }
        }
    }
}
