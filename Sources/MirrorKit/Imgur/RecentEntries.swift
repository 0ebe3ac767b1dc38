/// The entries a tag's listing showed on the last pages of a run, to tell a listing that repeats
/// itself (a server that answers one page for every number) from one that goes on.
///
/// Only recent pages are kept. New posts push a listing down while it is read, so an entry shows
/// again a page or two later, never tens of pages later; a run that kept every entry it was shown
/// held 2 MiB of hashes at 100,000 entries, and more with every page. A server cycling through
/// more pages than are kept is not caught here; the budget or the deadline ends its run.
struct RecentEntries {
    /// Pages remembered: a listing shifted by this many pages while it was read would need over
    /// 3,000 new posts in the middle of a run.
    static let pagesKept = 64

    /// Each kept page's entries (as hashes), oldest at `oldest` once the ring is full.
    private var pages: [[Int]] = []
    private var oldest = 0
    /// How many kept pages show each entry.
    private var shown: [Int: Int] = [:]

    /// Entries remembered.
    var count: Int { shown.count }

    /// Remembers one page's entries, forgetting the oldest page kept; whether any of them was not
    /// on the pages kept before it.
    mutating func remember(_ ids: some Sequence<String>) -> Bool {
        var page: [Int] = []
        var somethingNew = false
        for id in ids {
            let hash = id.hashValue
            page.append(hash)
            if shown[hash, default: 0] == 0 { somethingNew = true }
            shown[hash, default: 0] += 1
        }
        if pages.count < Self.pagesKept {
            pages.append(page)
        } else {
            for hash in pages[oldest] {
                let left = shown[hash, default: 1] - 1
                shown[hash] = left > 0 ? left : nil
            }
            pages[oldest] = page
            oldest = (oldest + 1) % Self.pagesKept
        }
        return somethingNew
    }
}
