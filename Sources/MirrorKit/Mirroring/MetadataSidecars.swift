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
        try earlier(name, adding: source).sources
    }

    /// What sidecar `name` said that a new one must keep: its sources, with `source` added, and
    /// which kinds of file it said were removed upstream, with the files it named.
    func earlier(_ name: String, adding source: String) throws(MirrorError) -> Earlier {
        var earlier = Earlier(sources: [], removedUpstream: [], files: [:])
        if let bytes = try directory.smallFileContents(Self.path(name)),
           let recorded = try? JSONDecoder().decode(Recorded.self, from: Data(bytes)) {
            // An earlier version named a private feed with its password: this one writes it over.
            for recorded in recorded.sources ?? [] {
                let named = URLUserinfo.redacted(recorded)
                if !earlier.sources.contains(named) { earlier.sources.append(named) }
            }
            earlier.removedUpstream = recorded.removedUpstream ?? []
            earlier.files = recorded.files ?? [:]
        }
        if !earlier.sources.contains(source) { earlier.sources.append(source) }
        return earlier
    }

    struct Earlier {
        var sources: [String]
        var removedUpstream: [String]
        var files: [String: String]
    }

    private struct Recorded: Decodable {
        var sources: [String]?
        var removedUpstream: [String]?
        var files: [String: String]?

        enum CodingKeys: String, CodingKey {
            case sources, files
            case removedUpstream = "removed_upstream"
        }
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
