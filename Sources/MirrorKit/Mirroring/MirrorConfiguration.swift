import Foundation

/// Settings read from a JSON config file (`--config`); every key is optional and command-line
/// options win over it. config.example.json lists every key.
public struct MirrorConfiguration: Sendable, Equatable, Decodable {
    public var apiBase: String?
    public var mediaBase: String?
    public var clientIdFile: String?
    public var sort: GallerySort?
    public var window: GalleryWindow?
    public var pages: Int?
    public var thumbnail: ThumbnailSize?
    public var mode: DownloadMode?
    public var concurrency: Int?
    /// Most API calls per second.
    public var maxApiRate: Double?
    /// Most bytes per second for all downloads together, as `2M`, `500k` or a number.
    public var maxBandwidth: String?
    /// The longest wait, in seconds, for a rate limit before stopping with exit status 75.
    public var maxWait: Int?
    /// Attempts per file, the first included.
    public var retries: Int?
    /// How long a run may take, as `50m`: at the deadline it stops starting work and exits,
    /// and the next run carries on.
    public var maxDuration: String?
    /// The most bytes a file may have unless the API states its size, as `4G` or a number.
    public var maxFileSize: String?

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case apiBase, mediaBase, clientIdFile, sort, window, pages, thumbnail, mode, concurrency
        case maxApiRate, maxBandwidth, maxWait, retries, maxDuration, maxFileSize
    }

    /// Reads and checks a config file. Unknown keys are errors, not silently ignored: a typo in a
    /// cron job's config should fail loudly once rather than quietly do the wrong thing forever.
    public static func load(from path: String) throws(MirrorError) -> MirrorConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .configuration("config file \(path): cannot be read")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw .configuration("config file \(path): not valid JSON")
        }
        guard let keys = (object as? [String: Any])?.keys else {
            throw .configuration("config file \(path): expected a JSON object at the top level")
        }
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        if let unknown = keys.sorted().first(where: { !known.contains($0) }) {
            throw .configuration("config file \(path): unknown key '\(unknown)'")
        }
        let configuration: MirrorConfiguration
        do {
            configuration = try JSONDecoder().decode(MirrorConfiguration.self, from: data)
        } catch {
            throw .configuration("config file \(path): \(ImgurClient.describe(error))")
        }
        try configuration.validate(source: "config file \(path)")
        return configuration
    }

    func validate(source: String) throws(MirrorError) {
        if let pages, pages < 1 { throw .configuration("\(source): 'pages' must be at least 1") }
        if let concurrency, !(1...64).contains(concurrency) {
            throw .configuration("\(source): 'concurrency' must be between 1 and 64")
        }
        if let maxApiRate, !(maxApiRate > 0) { throw .configuration("\(source): 'maxApiRate' must be above 0") }
        if let maxBandwidth, (ByteCount.parse(maxBandwidth) ?? 0) <= 0 {
            throw .configuration("\(source): 'maxBandwidth' must be a rate such as 2M or 500k, got '\(maxBandwidth)'")
        }
        if let maxFileSize, (ByteCount.parse(maxFileSize) ?? 0) <= 0 {
            throw .configuration("\(source): 'maxFileSize' must be a size such as 4G or 500M, got '\(maxFileSize)'")
        }
        if let maxWait, maxWait < 0 { throw .configuration("\(source): 'maxWait' must be 0 or more seconds") }
        if let retries, !(1...100).contains(retries) {
            throw .configuration("\(source): 'retries' must be between 1 and 100")
        }
        if let maxDuration, DurationText.parse(maxDuration) == nil {
            throw .configuration("\(source): 'maxDuration' must be a duration such as 50m, 90s or 1h30m, got '\(maxDuration)'")
        }
        for (key, value) in [("apiBase", apiBase), ("mediaBase", mediaBase)] {
            if let value, !Self.isHTTPURL(value) {
                throw .configuration("\(source): '\(key)' must be an http or https URL, got '\(value)'")
            }
        }
    }

    public static func isHTTPURL(_ text: String) -> Bool {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return false }
        return true
    }
}

/// The Imgur Client-ID, read from a file so it stays out of shell history and crontabs.
public enum ClientIDFile {
    public static let defaultPath = "~/.config/mirror/client-id"

    public static func read(_ path: String) throws(MirrorError) -> String {
        let expanded = NSString(string: path).expandingTildeInPath
        guard let data = FileManager.default.contents(atPath: expanded) else {
            let exists = FileManager.default.fileExists(atPath: expanded)
            throw .clientIDFile(path: expanded, problem: exists ? "cannot be read" : "does not exist")
        }
        let id = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !id.isEmpty else { throw .clientIDFile(path: expanded, problem: "is empty") }
        // It goes into a request header: nothing but a plain token may pass.
        guard id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw .clientIDFile(path: expanded, problem: "does not hold a Client-ID (letters, digits, - _ . only)")
        }
        return id
    }
}
