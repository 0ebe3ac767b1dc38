import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// Every setting that concerns one source can be given for one tag (or album, post, feed) in the
/// config file's `sources`, over the file's own; the whole run's settings cannot.
@Suite("Settings of one source in the config file", .serialized, .timeLimit(.minutes(3)))
struct SourceSettingsTests {
    private func names(_ out: String, _ folder: String) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: out + "/" + folder)) ?? [])
    }

    @Test func aTagAndAnAlbumInOneRunEachTakeTheirOwnSettings() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let config = dir.appendingPathComponent("config.json").path
                try TestSupport.write(Array("""
                    {
                      "thumbnail": "m",
                      "sources": {
                        "cats": {"thumbnail": "none", "filter": "type=animated"},
                        "https://imgur.com/a/Ef1gH": {"metadata": true}
                      }
                    }
                    """.utf8), to: config)
                let run = try await MirrorProcess.run([
                    "cats", "https://imgur.com/a/Ef1gH", "--out", out, "--config", config, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL,
                ])
                #expect(run.status == 0, "\(run.stderr)")
                // The tag: animated images only, no thumbnails. The album: every image, thumbnails, sidecars.
                #expect(names(out, "full") == ["Lm2nO4p.mp4", "Wx7yZ8a.mp4", "Gh1iJ2k.mp4", "Ij2kL3m.jpg", "No4pQ5r.png", "Za8bC9d.jpg"])
                #expect(names(out, "preview") == ["Ij2kL3mm.jpg", "No4pQ5rm.jpg", "Za8bC9dm.jpg"])
                #expect(names(out, "meta").count == 3, "\(names(out, "meta"))")
            }
        }
    }

    @Test func aFlagWinsOverASourcesOwnAndAFeedTakesItsOwnToo() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let feed = "\(server.baseURL)/feeds/docsets.atom"
                let config = dir.appendingPathComponent("config.json").path
                try TestSupport.write(Array("""
                    {"sources": {"cats": {"thumbnail": "none", "filter": "type=animated"}, "\(feed)": {"filter": "size<5M"}}}
                    """.utf8), to: config)
                let tag = try await MirrorProcess.run(
                    MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + ["--config", config, "--thumbnail", "t"])
                #expect(tag.status == 0, "\(tag.stderr)")
                #expect(names(out, "preview") == ["Lm2nO4pt.jpg", "Wx7yZ8at.jpg", "Gh1iJ2kt.jpg"], "the flag's thumbnail, the source's filter")
                let feedRun = try await MirrorProcess.run(["feed", feed, "--out", out, "--config", config])
                #expect(feedRun.status == 0, "\(feedRun.stderr)")
                #expect(!names(out, "enclosures").contains("Alpha-2.1.docset.xar"), "\(names(out, "enclosures"))")
                #expect(names(out, "enclosures").contains("Beta 1.0.xar"))
            }
        }
    }

    @Test func aSettingOfTheWholeRunOrAnUnknownKeyInASourceIsNamed() async throws {
        try await MirrorProcess.withClientID { dir, idFile in
            let out = dir.appendingPathComponent("out").path
            let config = dir.appendingPathComponent("config.json").path
            for (body, expected) in [
                (#"{"sources": {"cats": {"concurrency": 2}}}"#, "sources 'cats': 'concurrency' is a setting of the whole run"),
                (#"{"sources": {"cats": {"sortt": "top"}}}"#, "sources 'cats': unknown key 'sortt'"),
                (#"{"sources": {"cats": {"sort": "newest"}}}"#, "sources 'cats': 'sort' must be one of viral, top, time, got 'newest'"),
                (#"{"sources": {"cats": "top"}}"#, "sources 'cats' must be an object"),
                (#"{"sources": {"a b": {"sort": "top"}}}"#, "sources 'a b' names no source"),
            ] {
                try TestSupport.write(Array(body.utf8), to: config)
                let run = try await MirrorProcess.run(["cats", "--out", out, "--config", config, "--client-id-file", idFile])
                #expect(run.status == 78, "\(body): \(run.status) \(run.stderr)")
                #expect(run.stderr.contains(expected), "\(body): \(run.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }
}
