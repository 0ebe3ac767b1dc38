import Foundation

/// What is known about a partial download: enough to ask for the rest and to be sure the rest
/// belongs to the same bytes.
public struct PartialRecord: Sendable, Codable, Equatable {
    public var url: String
    public var etag: String?
    public var lastModified: String?
    /// The size of the whole resource, once a server has said it.
    public var totalLength: Int64?

    /// The validator for If-Range: a strong ETag, else Last-Modified (RFC 9110 §13.1.5 forbids
    /// weak ETags there).
    public var ifRangeValidator: String? {
        if let etag, !etag.hasPrefix("W/"), etag.hasPrefix("\"") { return etag }
        return lastModified
    }
}

/// Where partial downloads live between attempts and between runs: for each URL a `.part` file
/// with the bytes and a `.json` record of their validators, both named by the URL's MD5 so any URL
/// maps to a safe, fixed-length name.
///
/// The record is written before the first byte of a body, and the `.part` file only ever grows
/// by bytes already written, so whatever kills the process (even SIGKILL) leaves a prefix that the
/// next attempt can resume with `Range` and check with `If-Range`.
public struct PartialStore: Sendable {
    public let directory: URL

    public init(directory: URL) throws(MirrorError) {
        self.directory = directory
        try MirrorDirectory.createDirectory(directory)
    }

    /// The `.part` file for `url`.
    public func partPath(for url: String) -> String {
        directory.appendingPathComponent(key(url) + ".part").path
    }

    private func recordPath(for url: String) -> String {
        directory.appendingPathComponent(key(url) + ".json").path
    }

    private func key(_ url: String) -> String {
        Digest.md5Hex(Array(url.utf8))
    }

    /// Bytes held for `url` (0 when nothing is).
    public func length(for url: String) -> Int64 {
        var info = stat()
        return stat(partPath(for: url), &info) == 0 ? Int64(info.st_size) : 0
    }

    public func record(for url: String) -> PartialRecord? {
        guard let data = FileManager.default.contents(atPath: recordPath(for: url)),
              let record = try? JSONDecoder().decode(PartialRecord.self, from: data), record.url == url
        else { return nil }
        return record
    }

    /// Writes the record atomically (a temporary file renamed over the old one).
    public func save(_ record: PartialRecord) throws(MirrorError) {
        let path = recordPath(for: record.url)
        guard let data = try? JSONEncoder().encode(record) else { return }
        do {
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw .fileSystem(path: path, errno: EIO)
        }
    }

    /// Where to resume `url` from: the held length and the validator proving those bytes are
    /// still current. Nil, and whatever was held is dropped, when there is no such validator:
    /// appending to bytes of unknown origin could splice two different files.
    public func resumePoint(for url: String) -> (offset: Int64, record: PartialRecord, validator: String)? {
        let length = length(for: url)
        guard length > 0 else { return nil }
        guard let record = record(for: url), let validator = record.ifRangeValidator else {
            remove(url)
            return nil
        }
        return (length, record, validator)
    }

    /// Every partial held, with its record and the bytes held, oldest first.
    public func heldPartials() -> [(record: PartialRecord, length: Int64)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var found: [(record: PartialRecord, length: Int64, modified: Int)] = []
        for name in names where name.hasSuffix(".json") {
            let path = directory.appendingPathComponent(name).path
            guard let data = FileManager.default.contents(atPath: path),
                  let record = try? JSONDecoder().decode(PartialRecord.self, from: data)
            else { continue }
            var info = stat()
            let modified = stat(path, &info) == 0 ? Int(info.st_mtim.tv_sec) : 0
            found.append((record, length(for: record.url), modified))
        }
        return found.sorted { ($0.modified, $0.record.url) < ($1.modified, $1.record.url) }.map { ($0.record, $0.length) }
    }

    /// Deletes what is held for `url`.
    public func remove(_ url: String) {
        unlink(partPath(for: url))
        unlink(recordPath(for: url))
    }
}
