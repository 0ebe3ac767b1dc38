import Foundation

/// The API's objects by id, as `/3/gallery/{id}`, `/3/album/{id}` and `/3/image/{id}` answer
/// them: built from the tag pages and album image lists under Fixtures/imgur, and from the
/// generated tags.
struct APIObjects: Sendable {
    /// Entries of the tag pages, albums with their images embedded (as a gallery post has them).
    private(set) var posts: [String: Data] = [:]
    /// Albums with an image list, their images embedded.
    private(set) var albums: [String: Data] = [:]
    /// Every image object, in a page or an album.
    private(set) var images: [String: Data] = [:]

    init() {}

    /// Reads `files` (name → parsed JSON) of Fixtures/imgur.
    init(files: [String: Any]) {
        var entries: [String: [String: Any]] = [:]
        var albumImages: [String: [[String: Any]]] = [:]
        for (name, json) in files {
            if name.hasPrefix("gallery-t-"), let data = (json as? [String: Any])?["data"] as? [String: Any],
               let items = data["items"] as? [[String: Any]] {
                for item in items {
                    guard let id = item["id"] as? String else { continue }
                    entries[id] = item
                }
            } else if name.hasPrefix("album-"), name.hasSuffix("-images.json"),
                      let list = (json as? [String: Any])?["data"] as? [[String: Any]] {
                let id = String(name.dropFirst("album-".count).dropLast("-images.json".count))
                albumImages[id] = list
            }
        }
        for (id, list) in albumImages {
            var album = entries[id] ?? ["id": id, "is_album": true, "title": "album \(id)"]
            album["images"] = list
            album["images_count"] = list.count
            albums[id] = Self.envelope(album)
            if entries[id] != nil { entries[id] = album }
            for image in list { if let imageID = image["id"] as? String { images[imageID] = Self.envelope(image) } }
        }
        for (id, entry) in entries {
            posts[id] = Self.envelope(entry)
            if entry["is_album"] as? Bool != true { images[id] = Self.envelope(entry) }
        }
    }

    static func envelope(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: ["data": object, "success": true, "status": 200])) ?? Data()
    }
}

extension ServerState {
    /// `/3/gallery/{id}`, `/3/album/{id}` or `/3/image/{id}` for a generated tag's entry. A
    /// generated album's own endpoint embeds no images (its `/images` list has them), as older
    /// answers do; its gallery post embeds them all.
    func generatedObjectBody(kind: String, id: String) -> Data? {
        switch kind {
        case "image":
            guard let size = generatedImageSizes[id] else { return nil }
            return APIObjects.envelope(GeneratedTag.imageObject(id, size: size))
        case "album":
            guard let images = generatedAlbums[id] else { return nil }
            return APIObjects.envelope(["id": id, "is_album": true, "title": "album \(id)", "images_count": images.count])
        case "gallery":
            if let images = generatedAlbums[id] {
                return APIObjects.envelope([
                    "id": id, "is_album": true, "title": "album \(id)", "images_count": images.count,
                    "images": images.map { GeneratedTag.imageObject($0, size: generatedImageSizes[$0] ?? 0) },
                ])
            }
            guard generatedTags.values.contains(where: { $0.entries.contains { $0.id == id } }),
                  let size = generatedImageSizes[id] else { return nil }
            return APIObjects.envelope(GeneratedTag.imageObject(id, size: size).merging(["is_album": false]) { $1 })
        default:
            return nil
        }
    }
}
