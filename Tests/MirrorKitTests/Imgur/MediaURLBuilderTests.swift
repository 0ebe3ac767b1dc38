import Foundation
import Testing
@testable import MirrorKit

@Suite("Media URLs from image ids", .timeLimit(.minutes(1)))
struct MediaURLBuilderTests {
    let builder = MediaURLBuilder(mediaBase: "https://i.imgur.com/", thumbnail: .large)

    @Test func buildsFullAndPreviewURLsFromTheID() throws {
        let item = try #require(builder.item(for: ImgurImage(id: "abc1234", type: "image/png", size: 99)))
        #expect(item.fullURL == "https://i.imgur.com/abc1234.png")
        #expect(item.fullFileName == "abc1234.png")
        #expect(item.previewURL == "https://i.imgur.com/abc1234l.jpg")
        #expect(item.previewFileName == "abc1234l.jpg")
        #expect(item.expectedSize == 99)
    }

    @Test func fetchesAnimatedImagesAsMP4NeverTrustingTheirLink() throws {
        // A large GIF as the 2015 API listed it: `link` points at the huge thumbnail.
        let gif = ImgurImage(
            id: "gxGXwq6", type: "image/gif", animated: true, size: 62_506_070, mp4Size: 3_000_000,
            link: "http://i.imgur.com/gxGXwq6h.gif")
        let item = try #require(builder.item(for: gif))
        #expect(item.fullURL == "https://i.imgur.com/gxGXwq6.mp4")
        #expect(item.expectedSize == 3_000_000)
    }

    @Test func withoutPreviewsAnItemHasOnlyItsFullSizeFile() throws {
        let item = try #require(MediaURLBuilder(thumbnail: .skipped).item(for: ImgurImage(id: "abc1234", type: "image/png")))
        #expect(item.previewURL == nil && item.previewFileName == nil)
        #expect(item.fullURL == "https://i.imgur.com/abc1234.png")
    }

    @Test func preferringGIFsFetchesTheGIFAsUploadedButAVideoStaysAVideo() throws {
        let builder = MediaURLBuilder(animated: .gif)
        let gif = try #require(builder.item(for: ImgurImage(
            id: "gxGXwq6", type: "image/gif", animated: true, size: 62_506_070, mp4Size: 3_000_000)))
        #expect(gif.fullURL == "https://i.imgur.com/gxGXwq6.gif")
        #expect(gif.expectedSize == 62_506_070)
        // Uploaded as a video, it has no GIF to prefer.
        let video = try #require(builder.item(for: ImgurImage(id: "Wx7yZ8a", type: "video/mp4", animated: true, size: 300_000)))
        #expect(video.fullFileName == "Wx7yZ8a.mp4")
    }

    @Test func anAnimatedGIFWithoutAnMP4SizeHasNoExpectedSize() throws {
        let item = try #require(builder.item(for: ImgurImage(id: "abcde", type: "image/gif", animated: true, size: 500)))
        #expect(item.fullFileName == "abcde.mp4")
        #expect(item.expectedSize == nil)
    }

    @Test(arguments: ["../../etc/passwd", "abc/def", "ab", "abcdefghijk", "abc d12", "äbcdefg", ""])
    func rejectsIDsThatAreNotPlainImgurIDs(_ id: String) {
        #expect(builder.item(for: ImgurImage(id: id, type: "image/jpeg")) == nil)
    }

    @Test(.needsRealData) func noRealImageIsFetchedAsAThumbnailOrAWebPage() throws {
        let realData = try #require(TestSupport.realData)
        let data = try Data(contentsOf: realData.appendingPathComponent("imgur/gallery-tag-cats-page.json"))
        let items = try JSONDecoder().decode(ImgurEnvelope<TagPage>.self, from: data).data.items
        var checked = 0
        for case .image(let image) in items {
            let item = try #require(builder.item(for: image))
            #expect(item.fullURL == "https://i.imgur.com/\(image.id).\(item.fullFileName.split(separator: ".").last!)")
            #expect(!item.fullURL.hasSuffix(".gifv"))
            #expect(!item.fullURL.hasSuffix("h.gif"))
            if image.animated { #expect(item.fullURL.hasSuffix(".mp4")) }
            checked += 1
        }
        #expect(checked == 47)
    }

    /// The files these settings make, as a sweep asks of every file the mirror holds: every
    /// full-size file, and thumbnails of the size asked for only (none with previews off).
    @Test func makesFullSizeFilesAndThumbnailsOfItsOwnSizeOnly() {
        for path in ["full/abc1234.png", "full/x", "preview/abc1234l.jpg", "preview/l.jpg"] {
            #expect(builder.makes(path), "\(path)")
        }
        for path in ["preview/abc1234m.jpg", "preview/abc1234l.png", "preview/abc1234l.jpgx", "preview/.jpg", "fullx/a.png",
                     "Full/a.png", "previews/abc1234l.jpg", "abc1234l.jpg", ""] {
            #expect(!builder.makes(path), "\(path)")
        }
        let large = MediaURLBuilder(thumbnail: .huge)
        #expect(large.makes("preview/abc1234h.jpg") && !large.makes("preview/abc1234l.jpg"))
        let none = MediaURLBuilder(thumbnail: .skipped)
        #expect(none.makes("full/abc1234.png") && !none.makes("preview/abc1234l.jpg") && !none.makes("preview/abc1234none.jpg"))
    }
}
