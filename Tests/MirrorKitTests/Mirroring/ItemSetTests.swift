import Testing
@testable import MirrorKit

/// The hashes of a run's items: every one inserted is found, none twice, across the merges of
/// the recent ones into the sorted block.
@Suite("The items of a run, as hashes")
struct ItemSetTests {
    @Test func everyHashInsertedIsFoundOnceAcrossMerges() {
        var hashes = SortedHashes()
        var reference = Set<Int>()
        var generator = SystemRandomNumberGenerator()
        // Small values collide often, so insertions repeat within and across batches.
        for round in 0..<(5 * SortedHashes.batch + 17) {
            let hash = round % 3 == 0 ? Int.random(in: -50_000...50_000, using: &generator) : Int.random(in: .min ... .max, using: &generator)
            let inserted = hashes.insert(hash)
            #expect(inserted == reference.insert(hash).inserted, "hash \(hash) at \(round)")
        }
        let count = hashes.count
        #expect(count == reference.count)
        let missing = reference.filter { !hashes.contains($0) }
        #expect(missing.isEmpty)
        let absent = [Int.min, .max, 0, 50_001, -50_001].filter { !reference.contains($0) }
        let found = absent.filter { hashes.contains($0) }
        #expect(found.isEmpty)
    }

    @Test func itemsAreFoundAfterTheBatchHasBeenMerged() {
        let items = ItemSet()
        let urls = (0..<(SortedHashes.batch * 2 + 1)).map { "https://i.example/\($0).jpg" }
        for url in urls { items.insert(url) }
        #expect(urls.allSatisfy(items.contains))
        #expect(!items.inserted(urls[0]) && !items.inserted(urls.last!))
        #expect(items.inserted("https://i.example/new.jpg"))
        #expect(!items.contains("https://i.example/other.jpg"))
    }
}
