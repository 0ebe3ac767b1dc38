import Foundation
@testable import MirrorKit

/// The Imgur decoders as `ImgurClient` uses them (`ImgurClient.decode` of a tag page and of an
/// album's image list, the message of an error body) under mutated and generated API answers.
enum ImgurFuzzing {
    static let target = FuzzTarget(
        name: "imgur", smokeInputs: 2000, corpus: FuzzCorpus.imgur,
        mutator: FuzzMutator(
            dictionary: FuzzCorpus.jsonTokens,
            nesting: [("[", "]"), ("{\"data\":", "}"), ("{\"items\":[", "]}")].map { (Array($0.utf8), Array($1.utf8)) },
            maxLength: 256 << 10),
        generate: generate, check: check)

    /// What holds for any body: it decodes, or fails with a `DecodingError` that `describe`
    /// turns into a line; what decodes yields media only for plain ids, under safe file names;
    /// and read as an error body it always gives a message.
    @Sendable static func check(_ input: [UInt8]) -> String? {
        do {
            let page = try ImgurClient.decode(ImgurEnvelope<TagPage>.self, from: input).data
            if let problem = problem(with: page.items) { return problem }
        } catch {
            if let problem = problem(decoding: error) { return problem }
        }
        do {
            let images = try ImgurClient.decode(ImgurEnvelope<[ImgurImage]>.self, from: input).data
            if let problem = images.lazy.compactMap(problem(with:)).first { return problem }
        } catch {
            if let problem = problem(decoding: error) { return problem }
        }
        if ImgurError.message(fromBody: input).trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            return "an error body read as an empty message"
        }
        _ = ImgurError.bodyStatus(input)
        return nil
    }

    private static func problem(decoding error: any Error) -> String? {
        guard error is DecodingError else { return "decoding threw \(type(of: error)), not a DecodingError: \(error)" }
        return ImgurClient.describe(error).isEmpty ? "an empty description of \(error)" : nil
    }

    private static func problem(with items: [GalleryItem]) -> String? {
        for item in items {
            switch item {
            case .image(let image):
                if let problem = problem(with: image) { return problem }
            case .album(let album):
                if let complete = album.completeImages, complete.count < (album.imagesCount ?? 0) {
                    return "album \(album.id) complete with \(complete.count) of \(album.imagesCount ?? 0) images"
                }
                if let problem = (album.images ?? []).lazy.compactMap(problem(with:)).first { return problem }
            }
        }
        return nil
    }

    /// Media for plain ids only, named by the id, on the CDN: an id is all that reaches a path.
    private static func problem(with image: ImgurImage) -> String? {
        guard let item = MediaURLBuilder().item(for: image) else {
            return MediaURLBuilder.isPlainID(image.id) ? "no media for the plain id \(image.id)" : nil
        }
        if item.id.isEmpty || !MediaURLBuilder.isPlainID(item.id) { return "media for the id \(item.id.debugDescription)" }
        for name in [item.fullFileName, item.previewFileName].compactMap({ $0 })
        where !name.hasPrefix(image.id) || name.contains("/") || name.hasPrefix(".") {
            return "the unsafe file name \(name.debugDescription)"
        }
        for url in [item.fullURL, item.previewURL].compactMap({ $0 }) where !url.hasPrefix("https://i.imgur.com/\(image.id)") {
            return "the media URL \(url) for \(image.id)"
        }
        return nil
    }

    // MARK: - Generated pages

    /// A tag page of random images and albums whose image fields have the odd values the API
    /// has sent over the years, with what decoding must give: every entry, in order, because
    /// one odd field must not lose a page.
    @Sendable static func generate(_ random: inout FuzzRandom) -> FuzzCase {
        var listedIDs: [String] = []
        var listedMedia: [Bool] = []
        var items: [[String: Any]] = []
        for _ in 0..<random.below(8) {
            if random.oneIn(3) {
                let images = (0..<random.below(4)).map { _ in image(&random) }
                var album: [String: Any] = ["id": id(&random), "is_album": true, "title": "album"]
                if random.oneIn(2) { album["images"] = images.map(\.json) }
                if random.oneIn(2) { album["images_count"] = random.below(6) }
                items.append(album)
                listedIDs.append(album["id"] as! String)
                if album["images"] != nil {
                    listedIDs += images.map(\.id)
                    listedMedia += images.map { MediaURLBuilder.isPlainID($0.id) }
                }
            } else {
                let image = image(&random)
                let isAlbum: Any = random.oneIn(2) ? false : NSNull()
                items.append(image.json.merging(["is_album": isAlbum]) { $1 })
                listedIDs.append(image.id)
                listedMedia.append(MediaURLBuilder.isPlainID(image.id))
            }
        }
        let page: [String: Any] = ["data": ["items": items, "total_items": random.below(1000)], "success": true, "status": 200]
        let input = (try? JSONSerialization.data(withJSONObject: page)).map { Array($0) } ?? []
        let (expectedIDs, expectedMedia) = (listedIDs, listedMedia)
        return FuzzCase(input: input) {
            do {
                let items = try ImgurClient.decode(ImgurEnvelope<TagPage>.self, from: input).data.items
                var ids: [String] = []
                var media: [Bool] = []
                for item in items {
                    ids.append(item.id)
                    let images: [ImgurImage] = switch item {
                    case .image(let image): [image]
                    case .album(let album): album.images ?? []
                    }
                    if case .album = item { ids += images.map(\.id) }
                    media += images.map { MediaURLBuilder().item(for: $0) != nil }
                }
                if ids != expectedIDs { return "expected the ids \(expectedIDs), decoded \(ids)" }
                return media == expectedMedia ? nil : "expected media for \(expectedMedia), got \(media)"
            } catch {
                return "lost a page to \(ImgurClient.describe(error))"
            }
        }
    }

    private static func id(_ random: inout FuzzRandom) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        if random.oneIn(4) { return ["", "a/b", "..", "abc", "abcdefghijk", "ABC12é", "Ab1 2", "\u{0}abcde"][random.below(8)] }
        return String((0..<random.below(6) + 5).map { _ in letters[random.below(letters.count)] })
    }

    /// An image object with any of the shapes its lenient fields tolerate.
    private static func image(_ random: inout FuzzRandom) -> (id: String, json: [String: Any]) {
        func pick(_ values: [Any]) -> Any { values[random.below(values.count)] }
        let id = id(&random)
        var json: [String: Any] = ["id": id]
        json["type"] = pick(["image/jpeg", "image/png", "image/gif", "video/mp4", NSNull(), 42, ""])
        json["animated"] = pick([true, false, "yes", NSNull(), 1])
        json["size"] = pick([1, 48_000, Int64.max, -1, "big", NSNull(), 1.5])
        json["mp4_size"] = pick([0, 5_000_000, "x", NSNull()])
        json["link"] = pick(["https://i.imgur.com/\(id).jpg", "https://i.imgur.com/\(id).gifv", 7, NSNull()])
        json["datetime"] = pick([1_763_801_000, "2026", NSNull()])
        json["nsfw"] = pick([false, NSNull(), "0"])
        json["edited"] = pick(["0", 0, NSNull()])
        json["title"] = pick(["a title", "\u{1F600}\u{202E}", NSNull(), [1, 2]])
        return (id, json)
    }
}
