import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// `--filter`, `--since` and `--until` through the real executable: what they leave out is said,
/// stays found for a wider run, and a date-bounded crawl of a newest-first tag stops at its bound.
@Suite("Filters: type, size and dates", .serialized, .timeLimit(.minutes(3)))
struct FilterTests {
    /// The listing pages of generated tag `dated` asked for so far, by number, in order.
    private func pagesAsked(_ server: FixtureServer) -> [String] {
        server.requests.filter { $0.path.hasPrefix("/3/gallery/t/dated/") }.map { String($0.path.split(separator: "/").last!) }
    }

    private func files(in out: String, _ folder: String) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: out + "/" + folder)) ?? [])
    }

    @Test func aTypeFilterTakesOnlyAnimatedImagesAndAWiderRunTakesTheRest() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile)
                let animated = try await MirrorProcess.run(arguments + ["--filter", "type=animated"])
                #expect(animated.status == 0, "\(animated.stderr)")
                #expect(files(in: out, "full") == ["Lm2nO4p.mp4", "Wx7yZ8a.mp4", "Gh1iJ2k.mp4"])
                #expect(files(in: out, "preview") == ["Lm2nO4pm.jpg", "Wx7yZ8am.jpg", "Gh1iJ2km.jpg"])
                // 14 images, 3 animated: 11 left out, a thumbnail and a full-size file each.
                #expect(animated.stdout.contains("22 left out by the filters"), "\(animated.stdout)")

                // Left out is not done: the same filter again says nothing new, and no filter takes the rest.
                let again = try await MirrorProcess.run(arguments + ["--filter", "type=animated"])
                #expect(again.stdout.contains("nothing new"), "\(again.stdout)")
                let all = try await MirrorProcess.run(arguments)
                #expect(all.status == 0, "\(all.stderr)")
                #expect(files(in: out, "full").count == 13, "\(files(in: out, "full")) \(all.stdout)")
            }
        }
    }

    @Test func aSizeFilterUsesTheSizeTheAPIStates() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let run = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + [
                    "--filter", "size<100k", "--no-previews",
                ])
                #expect(run.status == 0, "\(run.stderr)")
                // 95000, 64000, 80000, 75000, 33000 and 48000 (removed upstream) bytes by the API's word.
                #expect(files(in: out, "full") == ["Gh7iJ9k.png", "Za8bC9d.jpg", "No4pQ5r.png", "Qr5sT6u.jpg", "Vw7xY8z.png"])
                #expect(files(in: out, "preview").isEmpty)
            }
        }
    }

    @Test func sinceStopsANewestFirstCrawlAtItsBoundAndALaterRunReadsOnBelowIt() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("dated", pages: 5, perPage: 20, albumEvery: 0)
            let entries = server.generatedEntries("dated")
            let bound = entries[30].posted
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("dated", out: out, server: server, idFile: idFile) + [
                    "--no-previews",
                ]
                let since = bound.formatted(.iso8601)
                let bounded = try await MirrorProcess.run(arguments + ["--since", since])
                #expect(bounded.status == 0, "\(bounded.stderr)")
                // Pages 0 and 1 hold posts from the bound on; page 2 is wholly older and ends the pass.
                #expect(pagesAsked(server) == ["0", "1", "2"], "\(pagesAsked(server))")
                let newest = Set(entries[...30].map { $0.id + ".jpg" })
                #expect(files(in: out, "full") == newest)

                // The same bound again reads the head down to the bound, and finds nothing new.
                let again = try await MirrorProcess.run(arguments + ["--since", since])
                #expect(again.stdout.contains("nothing new"), "\(again.stdout)")
                // Without it, a run reads on below the bound and takes everything.
                let all = try await MirrorProcess.run(arguments)
                #expect(all.status == 0, "\(all.stderr)")
                #expect(files(in: out, "full") == Set(entries.map { $0.id + ".jpg" }), "\(all.stdout)")
            }
        }
    }

    @Test func aBoundedRunLeavesAPassARunWithoutTheBoundLeftOpenWhereItStood() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("dated", pages: 5, perPage: 20, albumEvery: 0)
            let entries = server.generatedEntries("dated")
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("dated", out: out, server: server, idFile: idFile) + ["--no-previews"]
                // The nightly run without a bound stops at page 3 (as a spent budget would stop it).
                server.inject(.respond(status: 404, headers: [:], body: "{}"), path: "/3/gallery/t/dated/time/all/3", times: 1)
                let cut = try await MirrorProcess.run(arguments)
                #expect(cut.status != 0, "\(cut.stdout)")
                #expect(pagesAsked(server) == ["0", "1", "2", "3"])
                // An hourly run bounded to the newest posts reads its own way down, from the top.
                let bounded = try await MirrorProcess.run(arguments + ["--since", entries[10].posted.formatted(.iso8601)])
                #expect(bounded.status == 0, "\(bounded.stderr)")
                #expect(pagesAsked(server).dropFirst(4) == ["0", "1"], "\(pagesAsked(server))")
                // The next run without the bound carries on where its pass stood, one page back.
                let next = try await MirrorProcess.run(arguments)
                #expect(next.status == 0, "\(next.stderr)")
                #expect(pagesAsked(server).dropFirst(6).first == "2", "\(pagesAsked(server))")
                #expect(files(in: out, "full") == Set(entries.map { $0.id + ".jpg" }))
            }
        }
    }

    @Test func aBoundedRunStopsWhereAFullPassWithoutTheBoundHadReadAndVouchesForNothingItself() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("dated", pages: 4, perPage: 20, albumEvery: 0)
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("dated", out: out, server: server, idFile: idFile) + ["--no-previews"]
                let oldest = server.generatedEntries("dated").last!.posted
                // A bound older than the whole tag: a bounded pass reads to the end, and is no full pass.
                let since = ["--since", oldest.addingTimeInterval(-86_400).formatted(.iso8601)]
                #expect(try await MirrorProcess.run(arguments + since).status == 0)
                #expect(pagesAsked(server) == ["0", "1", "2", "3", "4"])
                #expect(try await MirrorProcess.run(arguments + since).status == 0)
                #expect(pagesAsked(server).count == 10, "a bounded pass vouched for what it read: \(pagesAsked(server))")
                // A full pass without the bound: from then on, a bounded run stops at what it saw.
                #expect(try await MirrorProcess.run(arguments).status == 0)
                let before = pagesAsked(server).count
                let new = server.prependToGeneratedTag("dated", count: 5, albumEvery: 0)
                let bounded = try await MirrorProcess.run(arguments + since)
                #expect(bounded.status == 0, "\(bounded.stderr)")
                #expect(pagesAsked(server).dropFirst(before) == ["0"], "\(pagesAsked(server))")
                #expect(Set(new.map { $0 + ".jpg" }).isSubset(of: files(in: out, "full")))
            }
        }
    }

    @Test func oneTagsFilteredOutImagesAreNotFetchedByAnotherTagsRun() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("big", pages: 1, perPage: 5, albumEvery: 0, imageSize: 8192)
            server.addGeneratedTag("small", pages: 1, perPage: 5, albumEvery: 0, imageSize: 1024)
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let config = dir.appendingPathComponent("config.json").path
                try TestSupport.write(Array(#"{"sources": {"big": {"filter": "size<4k"}}}"#.utf8), to: config)
                let run = try await MirrorProcess.run(
                    MirrorProcess.fixtureArguments("big", out: out, server: server, idFile: idFile)
                        + ["small", "--no-previews", "--config", config])
                #expect(run.status == 0, "\(run.stderr)")
                // big's images, all over its filter's size, stay found for big: small's run does not take them.
                let small = Set(server.generatedEntries("small").map { $0.id + ".jpg" })
                #expect(files(in: out, "full") == small, "\(run.stdout)")
                #expect(run.stdout.contains("big: nothing new, 5 left out by the filters"), "\(run.stdout)")
            }
        }
    }

    @Test func aMisspelledTagFetchesNoneOfAnotherTagsUnfinishedImages() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                // cats leaves its still images found and unfinished.
                let cats = MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile)
                #expect(try await MirrorProcess.run(cats + ["--filter", "type=animated"]).status == 0)
                let media = server.requests.count { !$0.path.hasPrefix("/3/") }
                let typo = try await MirrorProcess.run(MirrorProcess.fixtureArguments("catz", out: out, server: server, idFile: idFile))
                #expect(typo.status == 69, "\(typo.stderr)")
                #expect(server.requests.count { !$0.path.hasPrefix("/3/") } == media, "a tag that does not exist took cats' images")
                // cats itself, without the filter, takes them.
                #expect(try await MirrorProcess.run(cats).status == 0)
                #expect(files(in: out, "full").count == 13)
            }
        }
    }

    @Test func anImageTheFiltersLeaveOutGetsNoSidecarWhenItsPageIsReadAgain() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile)
                    + ["--filter", "type=animated", "--metadata"]
                #expect(try await MirrorProcess.run(arguments).status == 0)
                // The second run reads page 0 again, and describes what it shows that the mirror has.
                let again = try await MirrorProcess.run(arguments)
                #expect(again.status == 0, "\(again.stderr)")
                #expect(files(in: out, "meta") == ["Lm2nO4p.json", "Wx7yZ8a.json", "Gh1iJ2k.json"])
            }
        }
    }

    @Test func untilLeavesOutTheNewestAndADryRunHeedsTheFilters() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("dated", pages: 2, perPage: 10, albumEvery: 0)
            let entries = server.generatedEntries("dated")
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("dated", out: out, server: server, idFile: idFile) + [
                    "--no-previews", "--until", entries[4].posted.formatted(.iso8601),
                ]
                let dry = try await MirrorProcess.run(arguments + ["--dry-run"])
                #expect(dry.stdout.contains("dry run: 15 files would be fetched"), "\(dry.stdout)")
                // Until is exclusive: the entry posted at it is left out with the four newer ones.
                #expect(dry.stdout.contains("5 left out by the filters"), "\(dry.stdout)")
                let run = try await MirrorProcess.run(arguments)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(files(in: out, "full") == Set(entries[5...].map { $0.id + ".jpg" }))
            }
        }
    }

    @Test func aFeedIsFilteredBySizeAndEntryDate() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let feed = "\(server.baseURL)/feeds/docsets.atom"
                let run = try await MirrorProcess.run(["feed", feed, "--out", out, "--since", "2026-10-15", "--filter", "size<5M"])
                #expect(run.status == 0, "\(run.stderr)")
                // Alpha (6 MiB, November) is too large; Beta (3 MiB, 20 October) passes; the third entry is from 1 October.
                #expect(files(in: out, "enclosures") == ["Beta 1.0.xar"], "\(run.stdout)")
                #expect(run.stdout.contains("left out by the filters"), "\(run.stdout)")
            }
        }
    }

    @Test func aFilterOrDateThatCannotBeUsedIsNamedWhereItWasGiven() async throws {
        try await MirrorProcess.withClientID { dir, idFile in
            let out = dir.appendingPathComponent("out").path
            let base = ["cats", "--out", out, "--client-id-file", idFile]
            let flag = try await MirrorProcess.run(base + ["--filter", "sise<10M"])
            #expect(flag.status == 64 && flag.stderr.contains("--filter 'sise<10M' is not a filter"), "\(flag.stderr)")
            let date = try await MirrorProcess.run(base + ["--since", "2026"])
            #expect(date.status == 64 && date.stderr.contains("--since must be a day such as 2026-01-31"), "\(date.stderr)")
            let backwards = try await MirrorProcess.run(base + ["--since", "2026-02-01", "--until", "2026-01-01"])
            #expect(backwards.status == 78 && backwards.stderr.contains("is not before until"), "\(backwards.stderr)")
            let config = dir.appendingPathComponent("config.json").path
            try TestSupport.write(Array(#"{"filter": ["size<10M", "type=gif"]}"#.utf8), to: config)
            let file = try await MirrorProcess.run(base + ["--config", config])
            #expect(file.status == 78, "\(file.stderr)")
            #expect(file.stderr.contains("config file \(config): 'filter' 'type=gif': the type is image or animated"), "\(file.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }
}
