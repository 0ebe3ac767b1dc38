import Foundation
import Testing
@testable import MirrorKit

/// The images a crawl store hands back after queueing a page or an album are the caller's own
/// where a row handed back is one the caller made, not decoded again from it: they must be what
/// decoding the rows handed back gives, field for field.
@Suite("Images handed back by the crawl store", .timeLimit(.minutes(1)))
struct CrawlRecordTests {
    /// Every image of the bundled pages and albums, those of ../shared/real-data when present,
    /// and images with every field odd: each as listed on its own and as listed in an album.
    @Test func theImagesHandedBackAreWhatDecodingTheirRowsGives() throws {
        for image in try Self.allImages() {
            for albumID in [nil, "ZZZZZ"] as [String?] {
                let row = ImgurCrawlStore.found(image, albumID: albumID)
                let decoded = try #require(ImgurCrawlStore.image(row), "\(image.id) decodes")
                let handedBack = ImgurCrawlStore.handedBack([row], listed: [(image, row)])
                #expect(handedBack == [decoded], "\(image.id) in \(albumID ?? "no album")")
            }
        }
    }

    /// Only the rows handed back come back, in the store's order. A row the caller did not make (a
    /// row kept from another listing: the same image, another listing's JSON) is decoded, not
    /// taken for the caller's image of the same id; of two entries with one row, the first.
    @Test func eachRowHandedBackIsTheImageItHolds() throws {
        let a = ImgurImage(id: "Aaaaa", title: "a")
        let inAlbum = ImgurImage(id: "Aaaaa", title: "a, as the album has it")
        let b = ImgurImage(id: "Bbbbb", title: "b")
        let bAgain = ImgurImage(id: "Bbbbb", title: "b")
        let keptElsewhere = ImgurImage(id: "Aaaaa", title: "a, as another listing had it")
        func row(_ image: ImgurImage, _ albumID: String? = nil) -> FoundImage {
            ImgurCrawlStore.found(image, albumID: albumID)
        }
        let listed = [(inAlbum, row(inAlbum, "AAAAA")), (a, row(a)), (b, row(b)), (bAgain, row(bAgain))]
            .map { (image: $0.0, row: $0.1) }
        let rows = [row(b), row(a), row(inAlbum, "AAAAA"), row(keptElsewhere)]
        let handedBack = ImgurCrawlStore.handedBack(rows, listed: listed)
        #expect(handedBack.map(\.title) == ["b", "a", "a, as the album has it", "a, as another listing had it"])
        #expect(handedBack[2].album == ImgurAlbumContext(id: "AAAAA"))
        #expect(handedBack == rows.compactMap(ImgurCrawlStore.image))
        #expect(ImgurCrawlStore.handedBack([], listed: listed).isEmpty)
    }

    /// Through a real store: what a page's recording hands back is what a later run reads as the
    /// listing's pending images, also for an image listed twice (on its own, then in an album).
    @Test func aRecordedPageHandsBackWhatALaterRunReads() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let state = try StateDatabase(directory: try MirrorDirectory(root: dir))
            let crawl = ImgurCrawlStore(state)
            var cursor = CrawlCursor(source: "imgur tag cats time all")
            cursor.nextPage = 1
            let alone = ImgurImage(id: "Aaaaa", title: "alone", tags: ["cats"])
            let inAlbum = ImgurImage(id: "Aaaaa", title: "in the album", album: ImgurAlbumContext(id: "AAAAA", title: "t"))
            let other = ImgurImage(id: "Bbbbb", datetime: 1_700_000_000, description: "\"b\"")
            let handedBack = try await crawl.recordPage(
                newEntryIDs: ["Aaaaa", "Bbbbb"], images: [(alone, nil), (inAlbum, "AAAAA"), (other, nil)], pendingAlbumIDs: [],
                pendingAlbumContexts: [:], cursor: cursor, source: cursor.source, wants: [])
            let pending = try await crawl.pendingImages(of: "cats", after: 0, limit: 10).images
            #expect(handedBack == pending)
            #expect(handedBack.map(\.title) == ["alone", nil])
        }
    }

    /// The rows, album lists and album contexts written for the crawl store (by hand, not by
    /// `JSONEncoder`) are JSON that `JSONDecoder` reads back as the values written, odd
    /// characters, empty lists and extreme numbers included.
    @Test func theStoredJSONReadsBackAsTheValuesWritten() throws {
        let images = try Self.allImages()
        for image in images {
            let row = ImgurCrawlStore.found(image, albumID: nil)
            #expect(try JSONDecoder().decode(ImgurImage.self, from: Data(row.payload.utf8)) == image, "\(image.id)")
            // Valid JSON to any reader, control characters escaped.
            #expect(try JSONSerialization.jsonObject(with: Data(row.payload.utf8)) is [String: Any], "\(image.id)")
            #expect(!row.payload.unicodeScalars.contains { $0.value < 0x20 }, "\(image.id)")
        }
        #expect(try JSONDecoder().decode([ImgurImage].self, from: Data(ImgurCrawlStore.json(images).utf8)) == images)
        #expect(ImgurCrawlStore.json([] as [ImgurImage]) == "[]")
        // DEL is written as it is, whether or not something else in the string is escaped.
        #expect(ImgurCrawlStore.json(ImgurAlbumContext(id: "a\u{7F}")) == "{\"id\":\"a\u{7F}\"}")
        #expect(ImgurCrawlStore.json(ImgurAlbumContext(id: "a\u{7F}\n")) == "{\"id\":\"a\u{7F}\\n\"}")
        for album in [ImgurAlbumContext(id: "AAAAA"), Self.oddAlbum, ImgurAlbumContext(id: "BBBBB", tags: [], datetime: -1)] {
            #expect(try JSONDecoder().decode(ImgurAlbumContext.self, from: Data(ImgurCrawlStore.json(album).utf8)) == album)
        }
        // What the rows of earlier versions (JSONEncoder's, slashes escaped) hold still reads.
        let earlier = #"{"id":"Old01","animated":false,"link":"https:\/\/i.imgur.com\/Old01.jpg","tags":["a"]}"#
        #expect(ImgurCrawlStore.image(FoundImage(id: "Old01", payload: earlier, albumID: nil))?.link == "https://i.imgur.com/Old01.jpg")
    }

    private static let oddAlbum = ImgurAlbumContext(id: "AAAAA", title: "album \"t\"\u{1} \\ 日本 😀", tags: ["x", "\n"], datetime: Int64.max)

    /// Every image of the bundled pages and albums, those of ../shared/real-data when present,
    /// and images with every field odd.
    private static func allImages() throws -> [ImgurImage] {
        let bundled = try Self.bundledImages()
        #expect(bundled.count >= 10)
        return try bundled + Self.realImages() + [
            ImgurImage(id: "Quo1e", type: "image/png", animated: false, title: "\"quoted\" \\ back\\slash \u{0} nul\ttab",
                       description: "line\nbreak, émoji 🐈, \u{7F} and \u{2028}\u{1F}\r\u{8}\u{C}", width: 0, height: -1, tags: []),
            ImgurImage(id: "Big01", type: "video/mp4", animated: true, size: Int64.max, mp4Size: 0,
                       link: "https://i.imgur.com/Big01.mp4?x=1&y=\"2\"", datetime: Int64.min, tags: ["a", "", "ü"]),
            ImgurImage(id: "Alb01", album: ImgurAlbumContext(id: "AAAAA", title: "album \"t\"", tags: ["x"], datetime: 1)),
            ImgurImage(id: "Alb02", album: Self.oddAlbum),
            ImgurImage(id: "Emp01"),
        ]
    }

    private static func bundledImages() throws -> [ImgurImage] {
        let folder = TestSupport.fixtures.appendingPathComponent("imgur")
        var images: [ImgurImage] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() {
            images += try Self.images(in: Data(contentsOf: folder.appendingPathComponent(name)))
        }
        return images
    }

    private static func realImages() throws -> [ImgurImage] {
        guard let realData = TestSupport.realData else { return [] }
        let folder = realData.appendingPathComponent("imgur")
        var images: [ImgurImage] = []
        for name in ["gallery-tag-cats-page.json", "album-images.json", "gallery-album-50-images.json"] {
            guard let data = try? Data(contentsOf: folder.appendingPathComponent(name)) else { continue }
            images += try Self.images(in: data)
        }
        return images
    }

    private static func images(in data: Data) throws -> [ImgurImage] {
        if let page = try? JSONDecoder().decode(ImgurEnvelope<TagPage>.self, from: data) {
            return page.data.items.flatMap { item -> [ImgurImage] in
                switch item {
                case .image(let image): [image]
                case .album(let album): album.images ?? []
                }
            }
        }
        if let list = try? JSONDecoder().decode(ImgurEnvelope<[ImgurImage]>.self, from: data) { return list.data }
        if let album = try? JSONDecoder().decode(ImgurEnvelope<ImgurAlbum>.self, from: data) { return album.data.images ?? [] }
        return []
    }
}
