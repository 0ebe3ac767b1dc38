import Testing
@testable import MirrorKit

/// What a run remembers of the listing's pages to tell one that repeats itself: the last pages,
/// not every entry of the run.
@Suite("Entries of the last pages of a listing")
struct RecentEntriesTests {
    static func page(_ number: Int, size: Int = 60) -> [String] {
        (0..<size).map { "p\(number)e\($0)" }
    }

    @Test func aPageShownAgainShowsNothingNewAndOneEntryMoreIsNew() {
        var recent = RecentEntries()
        func shows(_ ids: [String]) -> Bool { recent.remember(ids) }
        #expect(shows(Self.page(0)))
        #expect(shows(Self.page(1)))
        #expect(!shows(Self.page(0)))
        // A listing pushed down by new posts: the next page is half the last one again.
        #expect(shows(Array(Self.page(1).suffix(30)) + Array(Self.page(2).prefix(30))))
        #expect(!shows(Self.page(1).shuffled()))
        #expect(shows(Self.page(1) + ["new"]))
    }

    /// Memory bounded by the pages kept: a run of 2,000 pages (120,000 entries) remembers at most
    /// 64 pages of them, and a page from before those counts as new again.
    @Test func onlyTheLastPagesAreRememberedHoweverLongTheRun() {
        var recent = RecentEntries()
        func shows(_ ids: [String]) -> Bool { recent.remember(ids) }
        var most = 0
        for number in 0..<2_000 {
            #expect(shows(Self.page(number)))
            most = max(most, recent.count)
        }
        #expect(most == RecentEntries.pagesKept * 60)
        #expect(!shows(Self.page(1_999 - RecentEntries.pagesKept + 1)))
        #expect(shows(Self.page(0)))
    }

    /// An entry on two kept pages is known until both have been forgotten.
    @Test func anEntryOnTwoPagesIsKnownUntilTheLaterLeaves() {
        var recent = RecentEntries()
        func shows(_ ids: [String]) -> Bool { recent.remember(ids) }
        #expect(shows(["shared", "a"]))
        for number in 1..<RecentEntries.pagesKept - 1 { #expect(shows(Self.page(number, size: 1))) }
        #expect(shows(["shared", "b"]))
        // The first page is forgotten now; the second showing of "shared" is still kept.
        #expect(shows(Self.page(1_000, size: 1)))
        #expect(!shows(["shared"]))
        #expect(shows(["a"]))
    }
}
