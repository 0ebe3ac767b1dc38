import FoundationEssentials

/// What a source said of each file, as a JSON sidecar under `meta/` (`--metadata`). Each kind of
/// source decides what its sidecars hold (see `ImageSidecar`, `EnclosureSidecar`); this writes
/// them through the mirror's directory, and keeps the list of sources that listed each file.
///
/// A sidecar holds only what its sources said, never when it was written, so it is rewritten
/// (whole, by a rename) exactly when that changes: a title edited on Imgur shows up the next time a
/// page lists the image.
struct MetadataSidecars: Sendable {
    let directory: MirrorDirectory

    static let folder = "meta"

    /// The sidecar `name` (`<image id>.json`, `enclosures/<file>.json`) as a path in the mirror.
    static func path(_ name: String) -> String { "\(folder)/\(name)" }

    /// The sources an existing sidecar says listed its file, and `source` after them when it is
    /// not among them: an image a tag and an album both list names both.
    func sources(of name: String, adding source: String) throws(MirrorError) -> [String] {
        var sources: [String] = []
        if let bytes = try directory.smallFileContents(Self.path(name)),
           let recorded = try? JSONDecoder().decode(RecordedSources.self, from: Data(bytes)) {
            // An earlier version named a private feed with its password: this one writes it over.
            for recorded in recorded.sources ?? [] {
                let named = URLUserinfo.redacted(recorded)
                if !sources.contains(named) { sources.append(named) }
            }
        }
        if !sources.contains(source) { sources.append(source) }
        return sources
    }

    private struct RecordedSources: Decodable {
        var sources: [String]?
    }

    /// Whether sidecar `name` exists.
    func exists(_ name: String) throws(MirrorError) -> Bool {
        try directory.fileExists(Self.path(name))
    }

    /// Writes `fields` as sidecar `name` unless it already says the same; true when it was
    /// written. `replacing` false writes only a missing one: a file resumed from an earlier run
    /// carries what its source said then, older than what a listing read since may have written.
    @discardableResult
    func write(_ fields: some Encodable, as name: String, replacing: Bool = true) throws(MirrorError) -> Bool {
        // Strings, integers and booleans only: nothing here can fail to encode.
        let data = (try? Self.encoder.encode(fields)) ?? Data("{}".utf8)
        // Sidecars are published with the mirror: no link a source or feed named keeps a password.
        let text = URLUserinfo.redacting(in: String(decoding: data, as: UTF8.self))
        return try directory.replaceSmallFile(Self.path(name), with: Array(text.utf8) + [UInt8(ascii: "\n")], replacing: replacing)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return encoder
    }()
}
