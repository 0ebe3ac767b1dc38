import Foundation
import Testing
@testable import MirrorKit

@Suite("Decoding Imgur API responses", .timeLimit(.minutes(1)))
struct ImgurDecodingTests {
    static let fixtureFiles: [String] = {
        let dir = TestSupport.fixtures.appendingPathComponent("imgur")
        // A missing folder is a failure, not zero cases that all pass.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? ["the folder \(dir.path) is missing.json"]
        return names.filter { $0.hasSuffix(".json") }.sorted()
    }()

    private func load(_ url: URL) throws -> Data {
        try Data(contentsOf: url)
    }

    @Test(arguments: fixtureFiles)
    func decodesEveryBundledFixture(_ name: String) throws {
        let data = try load(TestSupport.fixtures.appendingPathComponent("imgur/\(name)"))
        if name.hasPrefix("gallery-t-") {
            let page = try JSONDecoder().decode(ImgurEnvelope<TagPage>.self, from: data)
            #expect(!page.data.items.isEmpty)
        } else if name.hasPrefix("album-") {
            let images = try JSONDecoder().decode(ImgurEnvelope<[ImgurImage]>.self, from: data)
            #expect(!images.data.isEmpty)
        } else if name == "removed.json" {
            try checkRemovedList(data)
        } else {
            Issue.record("\(name): a fixture this test does not know how to check")
        }
    }

    /// removed.json is no API answer but the fixture server's list of image ids whose media it
    /// redirects to removed.png: it must decode as plain ids, each one an image the fixture tag
    /// lists (or no test reaches the removed-media path), and must not pass for an API envelope.
    private func checkRemovedList(_ data: Data) throws {
        let ids = try JSONDecoder().decode([String].self, from: data)
        #expect(!ids.isEmpty)
        #expect(ids.allSatisfy(MediaURLBuilder.isPlainID), "\(ids)")
        let listed = try ["gallery-t-cats-0.json", "gallery-t-cats-1.json"].flatMap { file in
            let page = try load(TestSupport.fixtures.appendingPathComponent("imgur/\(file)"))
            return try JSONDecoder().decode(ImgurEnvelope<TagPage>.self, from: page).data.items
        }
        let listedImageIDs = Set(listed.compactMap { if case .image(let image) = $0 { image.id } else { nil } })
        let unlisted = Set(ids).subtracting(listedImageIDs)
        #expect(unlisted.isEmpty, "removed ids the cats tag does not list: \(unlisted)")
        let notAnEnvelope = #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ImgurEnvelope<TagPage>.self, from: data)
        }
        #expect(notAnEnvelope.map(ImgurClient.describe) == "expected Dictionary<String, Any> at top level")
    }

    @Test func bundledFixturesCoverBothAlbumShapes() throws {
        let data = try load(TestSupport.fixtures.appendingPathComponent("imgur/gallery-t-cats-0.json"))
        let items = try JSONDecoder().decode(ImgurEnvelope<TagPage>.self, from: data).data.items
        let albums = items.compactMap { if case .album(let album) = $0 { album } else { nil } }
        #expect(albums.contains { $0.images == nil })
        #expect(albums.contains { $0.images != nil && $0.completeImages == nil })
        #expect(albums.contains { $0.completeImages != nil })
    }

    @Test(.needsRealData) func decodesTheRealTagPage() throws {
        let realData = try #require(TestSupport.realData)
        let data = try load(realData.appendingPathComponent("imgur/gallery-tag-cats-page.json"))
        let items = try JSONDecoder().decode(ImgurEnvelope<TagPage>.self, from: data).data.items
        #expect(items.count == 60)
        let albums = items.filter { if case .album = $0 { true } else { false } }
        #expect(albums.count == 13)
        // 2015-era albums carry no embedded images: all must come from the album endpoint.
        for case .album(let album) in items {
            #expect(album.completeImages == nil)
            #expect((album.imagesCount ?? 0) > 0)
        }
    }

    @Test(.needsRealData) func decodesTheRealAlbumPostAndAnimatedImage() throws {
        let realData = try #require(TestSupport.realData)
        let post = try JSONDecoder().decode(
            ImgurEnvelope<GalleryItem>.self, from: load(realData.appendingPathComponent("imgur/gallery-album-post.json")))
        guard case .album(let album) = post.data else {
            Issue.record("expected an album")
            return
        }
        #expect(album.completeImages?.isEmpty == false)
        let image = try JSONDecoder().decode(
            ImgurEnvelope<ImgurImage>.self, from: load(realData.appendingPathComponent("imgur/image-animated-mp4.json")))
        #expect(image.data.animated)
        #expect(image.data.mp4Size != nil)
    }

    /// `/3/album/{id}/images` answers a bare array, of 2013-era images with 5-character ids: every
    /// one makes a media item (the client decodes it as `[ImgurImage]`).
    @Test(.needsRealData) func decodesTheRealAlbumImageList() throws {
        let realData = try #require(TestSupport.realData)
        let data = try load(realData.appendingPathComponent("imgur/album-images.json"))
        let images = try ImgurClient.decode(ImgurEnvelope<[ImgurImage]>.self, from: Array(data)).data
        #expect(images.count == 11)
        #expect(images.allSatisfy { $0.id.count == 5 })
        let urls = MediaURLBuilder(mediaBase: "https://i.imgur.com")
        let items = images.compactMap(urls.item(for:))
        #expect(items.count == images.count)
        #expect(items.first?.fullURL == "https://i.imgur.com/Ziz25.jpg")
        #expect(items.first?.expectedSize == 919_391)
    }

    @Test(.needsRealData) func readsEveryRealErrorShape() throws {
        let realData = try #require(TestSupport.realData)
        let expected = [
            "error-403-over-capacity.json": "Imgur is temporarily over capacity. Please try again later.",
            "error-429-daily-client-limit.json": "Daily client requests exceeded",
            "error-429-errors-array.json": "Too Many Requests",
        ]
        for (file, message) in expected {
            let body = try Array(load(realData.appendingPathComponent("imgur/\(file)")))
            #expect(ImgurError.message(fromBody: body) == message, "\(file)")
        }
        let gateway = try Array(load(realData.appendingPathComponent("imgur/error-429-errors-array.json")))
        #expect(ImgurError.bodyStatus(gateway) == 429)
    }

    /// Every file in ../shared/real-data/imgur either decodes as an API payload or yields an error message.
    @Test(.needsRealData) func everyRealFileIsUnderstood() throws {
        let realData = try #require(TestSupport.realData)
        let dir = realData.appendingPathComponent("imgur")
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".json") {
            let data = try load(dir.appendingPathComponent(name))
            if name.hasPrefix("error-") {
                #expect(ImgurError.message(fromBody: Array(data)) != "no error message in the body", "\(name)")
            } else {
                #expect(throws: Never.self, "\(name)") {
                    try JSONDecoder().decode(ImgurEnvelope<GalleryItemOrPage>.self, from: data)
                }
            }
        }
    }

    @Test func readsAnErrorObjectAndNonJSONBodies() {
        let object = #"{"data":{"error":{"code":500,"message":"Could not complete request","type":"ImgurException","exception":{}}},"success":false,"status":500}"#
        #expect(ImgurError.message(fromBody: Array(object.utf8)) == "Could not complete request")
        let overCapacity = #"{"data":{"error":"Imgur is over capacity. Please try again."},"success":false,"status":1203}"#
        #expect(ImgurError.bodyStatus(Array(overCapacity.utf8)) == 1203)
        #expect(ImgurError.message(fromBody: Array("<html>\n<b>429</b></html>".utf8)) == "non-JSON body: <html> <b>429</b></html>")
        #expect(ImgurError.message(fromBody: []) == "empty body")
    }

    /// The in-body status is `status` when a whole number, else the first error's `code` when a
    /// string of digits; anything else in either place is no status.
    @Test func theInBodyStatusIsReadFromItsTwoPlacesAlone() {
        let cases: [(String, Int?)] = [
            (#"{"data": [1, {"deep": [true]}], "success": true, "status": 200}"#, 200),
            (#"{"status": 1203.0}"#, 1203),
            (#"{"status": 403.5, "errors": [{"code": "429"}]}"#, 429),
            (#"{"status": true, "errors": [{"code": "1203", "detail": {"x": 1}}, 7]}"#, 1203),
            (#"{"status": "200", "errors": [7, {"code": "429"}]}"#, nil),
            (#"{"errors": [{"code": 429}]}"#, nil),
            (#"{"errors": {"code": "429"}}"#, nil),
            (#"[{"status": 200}]"#, nil),
            (#"{"status": 200"#, nil),
            // Only the two places are read: a string JSON does not allow elsewhere leaves the status.
            (#"{"status": 200, "title": "\ud800"}"#, 200),
        ]
        for (body, status) in cases {
            #expect(ImgurError.bodyStatus(Array(body.utf8)) == status, "\(body)")
        }
    }

    @Test func toleratesNullsAndOddTypesInImageFields() throws {
        let json = #"{"id":"abcdefg","type":null,"animated":"yes","size":"big","nsfw":null,"edited":"0","datetime":1}"#
        let image = try JSONDecoder().decode(ImgurImage.self, from: Data(json.utf8))
        #expect(image.id == "abcdefg")
        #expect(image.type == nil && image.size == nil && !image.animated)
    }

    /// Found by the fuzzer: Foundation's JSONDecoder traps (in JSONError.SourceLocation) on a
    /// body that ends just past its 512-level nesting limit, and the API server chooses the body.
    /// In a child process, so that a trap fails this test instead of ending the whole run.
    @Test func aBodyNestedDeeperThanAnyAnswerIsRefusedNotACrash() async throws {
        await #expect(processExitsWith: .success) {
            for body in [String(repeating: "[", count: 513), "[" + String(repeating: #"{"items":["#, count: 256)] {
                let error = #expect(throws: DecodingError.self) {
                    try ImgurClient.decode(ImgurEnvelope<TagPage>.self, from: Array(body.utf8))
                }
                #expect(error.map(ImgurClient.describe) == "invalid JSON at top level: nested deeper than 64 levels")
            }
        }
        // As deep as the limit is still read: API answers are far shallower.
        let deep = #"{"data":{"items":[],"extra":"# + String(repeating: "[", count: 62)
            + String(repeating: "]", count: 62) + "}}"
        #expect(try ImgurClient.decode(ImgurEnvelope<TagPage>.self, from: Array(deep.utf8)).data.items.isEmpty)
    }

    @Test func namesTheFieldThatIsWrong() {
        let json = #"{"data":{"items":[{"is_album":false,"title":"no id"}]}}"#
        let error = #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ImgurEnvelope<TagPage>.self, from: Data(json.utf8))
        }
        #expect(error.map(ImgurClient.describe) == "missing key 'id' at data.items[0]")
    }
}

/// Whatever a non-error real sample holds: a tag page, an item or an image.
private enum GalleryItemOrPage: Decodable {
    case page(TagPage)
    case item(GalleryItem)
    /// `/3/album/{id}/images`: `data` is a bare array of images.
    case albumImages([ImgurImage])

    init(from decoder: any Decoder) throws {
        if let images = try? [ImgurImage](from: decoder) {
            self = .albumImages(images)
        } else if let page = try? TagPage(from: decoder) {
            self = .page(page)
        } else {
            self = .item(try GalleryItem(from: decoder))
        }
    }
}
