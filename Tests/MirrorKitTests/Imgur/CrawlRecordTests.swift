import Foundation
import Testing
@testable import MirrorKit

/// The images a crawl store hands back after queueing a page or an album are the caller's own,
/// not decoded again from the rows just written: they must be the images decoding those rows
/// gives (what a later run that finds them pending gets), field for field.
@Suite("Images handed back by the crawl store", .timeLimit(.minutes(1)))
struct CrawlRecordTests {
    /// Every image of the bundled pages and albums, those of ../shared/real-data when present,
    /// and images with every field odd: each as listed on its own and as listed in an album.
    @Test func theImagesHandedBackAreWhatDecodingTheirRowsGives() throws {
        var images = try Self.bundledImages() + Self.realImages()
        images += [
            ImgurImage(id: "Quo1e", type: "image/png", animated: false, title: "\"quoted\" \\ back\\slash \u{0} nul\ttab",
                       description: "line\nbreak, émoji 🐈, \u{7F} and \u{2028}", width: 0, height: -1, tags: []),
            ImgurImage(id: "Big01", type: "video/mp4", animated: true, size: Int64.max, mp4Size: 0,
                       link: "https://i.imgur.com/Big01.mp4?x=1&y=\"2\"", datetime: Int64.min, tags: ["a", "", "ü"]),
            ImgurImage(id: "Alb01", album: ImgurAlbumContext(id: "AAAAA", title: "album \"t\"", tags: ["x"], datetime: 1)),
            ImgurImage(id: "Emp01"),
        ]
        #expect(images.count > 4)
        for image in images {
            for albumID in [nil, "ZZZZZ"] as [String?] {
                let row = try #require(ImgurCrawlStore.found(image, albumID: albumID))
                let decoded = try #require(ImgurCrawlStore.image(row), "\(image.id) decodes")
                let handedBack = ImgurCrawlStore.images([row], listed: [(image, albumID)])
                #expect(handedBack == [decoded], "\(image.id) in \(albumID ?? "no album")")
            }
        }
    }

    /// Only the rows the store took come back, in its order; an image listed twice (on its own and
    /// in an album) comes back as the row it was; a row the caller did not list is decoded.
    @Test func onlyTheRowsTakenComeBackAsTheyWereListed() throws {
        let a = ImgurImage(id: "Aaaaa", title: "a")
        let b = ImgurImage(id: "Bbbbb", title: "b")
        let inAlbum = ImgurImage(id: "Aaaaa", title: "a, as the album has it")
        let stranger = ImgurImage(id: "Ccccc", title: "not listed")
        let listed: [(image: ImgurImage, albumID: String?)] = [(a, nil), (b, nil), (inAlbum, "AAAAA")]
        let rows = try [(b, nil), (inAlbum, "AAAAA"), (stranger, nil)].map { image, albumID in
            try #require(ImgurCrawlStore.found(image, albumID: albumID))
        }
        let handedBack = ImgurCrawlStore.images(rows, listed: listed)
        #expect(handedBack.map(\.id) == ["Bbbbb", "Aaaaa", "Ccccc"])
        #expect(handedBack[1].title == "a, as the album has it")
        #expect(handedBack[1].album == ImgurAlbumContext(id: "AAAAA"))
        #expect(handedBack[2] == stranger)
        #expect(ImgurCrawlStore.images([], listed: listed).isEmpty)
    }

    private static func bundledImages() throws -> [ImgurImage] {
        let folder = TestSupport.fixtures.appendingPathComponent("imgur")
        var images: [ImgurImage] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() {
            images += try Self.images(in: Data(contentsOf: folder.appendingPathComponent(name)), named: name)
        }
        return images
    }

    private static func realImages() throws -> [ImgurImage] {
        guard let realData = TestSupport.realData else { return [] }
        let folder = realData.appendingPathComponent("imgur")
        var images: [ImgurImage] = []
        for name in ["gallery-tag-cats-page.json", "album-images.json", "gallery-album-50-images.json"] {
            guard let data = try? Data(contentsOf: folder.appendingPathComponent(name)) else { continue }
            images += try Self.images(in: data, named: name)
        }
        return images
    }

    private static func images(in data: Data, named name: String) throws -> [ImgurImage] {
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
