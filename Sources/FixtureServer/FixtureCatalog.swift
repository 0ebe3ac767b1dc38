import Foundation

/// A media file the fixture server can serve.
struct MediaResource: Sendable {
    var size: Int
    var contentType: String
    /// Bumped to change the content (and so the ETag) between two requests.
    var version = 0
    /// Another path whose bytes (and version) this one serves: a mirror of the same file.
    var sameAs: String?
}

/// What Fixtures/ describes: Imgur API pages and the media they name, feeds, and other files.
struct FixtureCatalog: Sendable {
    /// Media by URL path ("/abc1234.jpg").
    var media: [String: MediaResource] = [:]
    /// Image IDs whose media the CDN answers with a redirect to /removed.png.
    var removedIDs: Set<String> = []
    /// What the single-object endpoints answer.
    var objects = APIObjects()
    let directory: URL

    static let thumbnailLetters = ["s", "b", "t", "m", "l", "h"]

    init(directory: URL) throws {
        self.directory = directory
        let imgur = directory.appendingPathComponent("imgur")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: imgur.path)) ?? []
        var bodies: [String: Any] = [:]
        for file in files.sorted() where file.hasSuffix(".json") {
            let data = try Data(contentsOf: imgur.appendingPathComponent(file))
            if file == "removed.json" {
                removedIDs.formUnion(try JSONSerialization.jsonObject(with: data) as? [String] ?? [])
            } else {
                let body = try JSONSerialization.jsonObject(with: data)
                registerImages(in: body)
                bodies[file] = body
            }
        }
        objects = APIObjects(files: bodies)
        let manifest = directory.appendingPathComponent("media.json")
        if let data = try? Data(contentsOf: manifest),
           let entries = try JSONSerialization.jsonObject(with: data) as? [String: Int] {
            for (path, size) in entries {
                media["/" + path] = MediaResource(size: size, contentType: Self.contentType(forPath: path))
            }
        }
        media["/removed.png"] = MediaResource(size: 503, contentType: "image/png")
        // A download mirror serves the very bytes of the file it mirrors.
        for path in media.keys where path.hasPrefix("/mirror-") {
            let original = "/files/" + path.split(separator: "/").dropFirst().joined(separator: "/")
            if media[original] != nil { media[path]?.sameAs = original }
        }
    }

    /// Walks any API body and registers the media of every image object in it: the full-size
    /// file, sized as the JSON says, and all six thumbnails.
    private mutating func registerImages(in json: Any) {
        if let array = json as? [Any] {
            array.forEach { registerImages(in: $0) }
            return
        }
        guard let object = json as? [String: Any] else { return }
        if let id = object["id"] as? String, let type = object["type"] as? String,
           let size = object["size"] as? Int {
            let animated = object["animated"] as? Bool ?? false
            if animated {
                let mp4Size = object["mp4_size"] as? Int ?? size
                media["/\(id).mp4"] = MediaResource(size: mp4Size, contentType: "video/mp4")
                // Imgur serves the GIF as uploaded beside its MP4.
                if type == "image/gif" { media["/\(id).gif"] = MediaResource(size: size, contentType: type) }
            } else {
                let ext = Self.fileExtension(forMIMEType: type)
                media["/\(id).\(ext)"] = MediaResource(size: size, contentType: type)
            }
            registerThumbnails(of: id)
        }
        if let cover = object["cover"] as? String { registerThumbnails(of: cover) }
        for value in object.values where value is [Any] || value is [String: Any] {
            registerImages(in: value)
        }
    }

    private mutating func registerThumbnails(of id: String) {
        for letter in Self.thumbnailLetters {
            let path = "/\(id)\(letter).jpg"
            let size = 2048 + Int(DeterministicContent.seed(path) % 12_288)
            media[path] = MediaResource(size: size, contentType: "image/jpeg")
        }
    }

    /// The image ID a media path names, thumbnail letter removed: "/abc1234m.jpg" → "abc1234".
    static func imageID(ofMediaPath path: String) -> String? {
        let name = path.dropFirst().split(separator: ".").first.map(String.init) ?? ""
        guard (5...8).contains(name.count), name.allSatisfy({ $0.isLetter || $0.isNumber }) else { return nil }
        if name.count == 6 || name.count == 8, let last = name.last, thumbnailLetters.contains(String(last)) {
            return String(name.dropLast())
        }
        return name
    }

    static func fileExtension(forMIMEType type: String) -> String {
        switch type {
        case "image/jpeg": "jpg"
        case "image/png": "png"
        case "image/gif": "gif"
        case "video/mp4": "mp4"
        default: type.split(separator: "/").last.map(String.init) ?? "bin"
        }
    }

    static func contentType(forPath path: String) -> String {
        switch path.split(separator: ".").last ?? "" {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "gif": "image/gif"
        case "mp4": "video/mp4"
        case "tgz", "gz": "application/x-gzip"
        case "xml", "atom": "application/atom+xml"
        default: "application/octet-stream"
        }
    }
}
