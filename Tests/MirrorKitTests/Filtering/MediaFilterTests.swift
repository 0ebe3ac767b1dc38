import Foundation
import Testing
@testable import MirrorKit

@Suite("Filters: --filter, --since and --until as written and as applied")
struct MediaFilterTests {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func filter(_ expressions: String...) throws -> MediaFilter {
        var filter = MediaFilter()
        for expression in expressions { try filter.add(expression) }
        return filter
    }

    @Test func sizesAreComparedAsWrittenAndAnUnstatedSizePasses() throws {
        // k, M and G count in 1024s, as --max-file-size does.
        let small = try filter("size<10M")
        #expect(small.admits(.init(kind: .image, bytes: 10_485_759)))
        #expect(!small.admits(.init(kind: .image, bytes: 10_485_760)))
        #expect(small.admits(.init(kind: .image, bytes: nil)))
        let band = try filter("size >= 500k", "size<=1M")
        #expect(band.admits(.init(kind: .animated, bytes: 512_000)))
        #expect(band.admits(.init(kind: .animated, bytes: 1_048_576)))
        #expect(!band.admits(.init(kind: .animated, bytes: 511_999)))
        #expect(!band.admits(.init(kind: .animated, bytes: 1_048_577)))
        #expect(try filter("size>0").admits(.init(kind: nil, bytes: 1)))
    }

    @Test func aTypeFilterLeavesOutTheOtherKindAndWhatIsNeither() throws {
        let animated = try filter("type=animated")
        #expect(animated.admits(.init(kind: .animated)))
        #expect(!animated.admits(.init(kind: .image)))
        #expect(!animated.admits(.init(kind: nil)))
        #expect(try filter("TYPE=Image").admits(.init(kind: .image)))
    }

    @Test func aFilterThatCannotBeUsedIsNamedWithWhatItTakes() {
        for (expression, expected) in [
            ("sise<10M", "is not a filter; give type=image"),
            ("type=gif", "the type is image or animated, got 'gif'"),
            ("size=10M", "compare the size with <"),
            ("size<ten", "'ten' is not a size"),
        ] {
            var filter = MediaFilter()
            let error = #expect(throws: FilterError.self) { try filter.add(expression) }
            #expect(error?.description.contains(expected) == true, "\(expression): \(String(describing: error))")
        }
        var contradictory = MediaFilter()
        #expect(throws: FilterError.self) { try contradictory.add("size>2M"); try contradictory.add("size<1M") }
        var twoTypes = MediaFilter()
        #expect(throws: FilterError.self) { try twoTypes.add("type=image"); try twoTypes.add("type=animated") }
    }

    @Test func datesAreDaysMomentsOrSpansBackAndUntilIsExclusive() throws {
        var filter = MediaFilter()
        try filter.bound(since: "2026-01-01", until: "2026-02-01T00:00:00Z", now: now)
        let day = { (text: String) in ISO8601DateFormatter().date(from: text)! }
        #expect(filter.admits(.init(kind: .image, date: day("2026-01-01T00:00:00Z"))))
        #expect(filter.admits(.init(kind: .image, date: day("2026-01-31T23:59:59Z"))))
        #expect(!filter.admits(.init(kind: .image, date: day("2026-02-01T00:00:00Z"))))
        #expect(!filter.admits(.init(kind: .image, date: day("2025-12-31T23:59:59Z"))))
        #expect(filter.admits(.init(kind: .image, date: nil)), "an undated file passes")

        var recent = MediaFilter()
        try recent.bound(since: "30d", until: nil, now: now)
        #expect(recent.since == now.addingTimeInterval(-30 * 86_400))
        var offset = MediaFilter()
        try offset.bound(since: "2026-01-01T12:00:00+02:00", until: nil, now: now)
        #expect(offset.since == day("2026-01-01T10:00:00Z"))

        var longAgo = MediaFilter()
        try longAgo.bound(since: "400d", until: nil, now: now)
        #expect(longAgo.since == now.addingTimeInterval(-400 * 86_400), "a span may reach back more than a year")
        for bad in ["2026", "yesterday", "2026-13-01", "", "106751991167300d106751991167300d"] {
            var filter = MediaFilter()
            #expect(throws: FilterError.self, "\(bad)") { try filter.bound(since: bad, until: nil, now: now) }
        }
        var backwards = MediaFilter()
        let error = #expect(throws: FilterError.self) { try backwards.bound(since: "2026-02-01", until: "2026-01-01", now: now) }
        #expect(error?.description.contains("is not before until") == true)
    }

    @Test func feedEnclosuresAreWeighedByTypeStatedSizeAndEntryDate() {
        let rss = FeedEnclosure(url: "https://example.org/a.mp3", length: 0, type: "audio/mpeg", updated: "Fri, 14 Aug 2026 12:31:23 +0000")
        #expect(rss.candidate.bytes == nil, "RSS's 0 is an unknown length")
        #expect(rss.candidate.kind == nil)
        #expect(rss.candidate.date == ISO8601DateFormatter().date(from: "2026-08-14T12:31:23Z"))
        let atom = FeedEnclosure(url: "https://example.org/clip", length: 5, type: "video/mp4", updated: "2026-11-01T09:00:00+01:00")
        #expect(atom.candidate.kind == .animated && atom.candidate.bytes == 5)
        #expect(atom.candidate.date == ISO8601DateFormatter().date(from: "2026-11-01T08:00:00Z"))
        #expect(FeedEnclosure(url: "https://example.org/p/photo.JPG").candidate.kind == .image)
        #expect(FeedEnclosure(url: "https://example.org/p/anim.gif", type: "image/gif").candidate.kind == .animated)
        #expect(FeedDate.parse("Sun, 31 May 2026 16:29:32 GMT") == ISO8601DateFormatter().date(from: "2026-05-31T16:29:32Z"))
        #expect(FeedDate.parse("not a date") == nil)
    }
}
