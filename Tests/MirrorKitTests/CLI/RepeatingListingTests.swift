import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// An API that answers the same page for every page number, its rate limit never falling: the
/// crawl stops after three pages that show nothing new, not at the budget or the deadline.
@Suite("A listing that repeats itself is stopped", .timeLimit(.minutes(2)))
struct RepeatingListingTests {
    @Test func oneAnswerForEveryPageStopsAfterThreeAndTheNextRunStartsThereAgain() async throws {
        try await TestSupport.withServer { server in
            let page = try String(contentsOf: TestSupport.fixtures.appendingPathComponent("imgur/gallery-t-cats-0.json"), encoding: .utf8)
            let rateLimit = [
                "X-RateLimit-UserLimit": "12500", "X-RateLimit-UserRemaining": "12499", "X-RateLimit-UserReset": "3600",
                "X-RateLimit-ClientLimit": "12500", "X-RateLimit-ClientRemaining": "12499",
            ]
            func listingCalls() -> Int { server.requests.filter { $0.path.hasPrefix("/3/gallery/t/cats/") }.count }
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                for run in 1...2 {
                    for number in 0..<200 {
                        server.inject(.respond(status: 200, headers: rateLimit, body: page), path: "/3/gallery/t/cats/time/all/\(number)", times: 1)
                    }
                    let before = listingCalls()
                    let result = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile))
                    // Data that is not what a listing is: the tag is not complete.
                    #expect(result.status == 65, "run \(run): \(result.stderr)")
                    #expect(result.stderr.contains("the listing of tag cats repeats from page 1: stopped there"), "\(result.stderr)")
                    // The first page, then three that showed only what it had.
                    #expect(listingCalls() - before == 4)
                    server.clearFaults()
                }
                // The images the page does show are mirrored.
                #expect(FileManager.default.fileExists(atPath: out + "/.mirror/state.sqlite3"))
            }
        }
    }
}
