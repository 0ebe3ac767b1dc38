import CMirrorSystem
import Foundation
import Synchronization

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
/// with the bytes, named by the URL's MD5 so any URL maps to a safe, fixed-length name, and the
/// record of their validators in that file's extended attribute `user.mirror.partial`. One inode
/// per download: creating and deleting files is what a small download costs most on ext4. Where
/// the file system keeps no extended attributes, the record goes to a `.json` file beside it.
///
/// The record is written before the first byte of a body, and the `.part` file only ever grows
/// by bytes already written, so whatever kills the process (even SIGKILL) leaves a prefix that the
/// next attempt can resume with `Range` and check with `If-Range`.
public struct PartialStore: Sendable {
    public let directory: URL
    /// Whether any `.json` record may exist (left by an older build, or written where attributes
    /// fail): only then is one looked for when a partial is saved, committed or removed.
    private let recordFiles: RecordFiles
    /// `directory`'s path as a string: paths are built for every download, and URLs cost more.
    private let directoryPath: String

    private final class RecordFiles: Sendable {
        let mayExist: Atomic<Bool>
        init(_ value: Bool) { mayExist = Atomic(value) }
    }

    public init(directory: URL) throws(MirrorError) {
        self.directory = directory
        directoryPath = directory.path
        try MirrorDirectory.createDirectory(directory)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        // A record whose bytes are gone is of no use: drop it, so it keeps nothing looking for more.
        let parts = Set(names.filter { $0.hasSuffix(".part") }.map { $0.dropLast(5) })
        var records = false
        for name in names where name.hasSuffix(".json") {
            if parts.contains(name.dropLast(5)) {
                records = true
            } else {
                unlink(directoryPath + "/" + name)
            }
        }
        recordFiles = RecordFiles(records)
    }

    /// The `.part` file for `url`.
    public func partPath(for url: String) -> String {
        directoryPath + "/" + key(url) + ".part"
    }

    private func recordPath(for url: String) -> String {
        directoryPath + "/" + key(url) + ".json"
    }

    private func key(_ url: String) -> String {
        Digest.md5Hex(Array(url.utf8))
    }

    /// Bytes held for `url` (0 when nothing is).
    public func length(for url: String) -> Int64 {
        var info = stat()
        return stat(partPath(for: url), &info) == 0 ? Int64(info.st_size) : 0
    }

    static let attribute = "user.mirror.partial"

    public func record(for url: String) -> PartialRecord? {
        let recordPath = recordFiles.mayExist.load(ordering: .relaxed) ? recordPath(for: url) : nil
        guard let record = Self.record(partPath: partPath(for: url), recordPath: recordPath), record.url == url
        else { return nil }
        return record
    }

    /// Records longer than this go to the `.json` file: file systems cap attribute sizes (ext4 at
    /// about a block), and a signed URL can be long.
    static let largestAttribute = 2048

    /// The record of the `.part` file at `partPath`: its attribute, else the `.json` beside it
    /// (when there may be one).
    private static func record(partPath: String, recordPath: String?) -> PartialRecord? {
        let decoder = JSONDecoder()
        var buffer = [UInt8](repeating: 0, count: largestAttribute)
        let count = buffer.withUnsafeMutableBytes { mirror_getxattr(partPath, attribute, $0.baseAddress, $0.count) }
        if count > 0, let record = try? decoder.decode(PartialRecord.self, from: Data(buffer[..<count])) {
            return record
        }
        guard let recordPath, let data = FileManager.default.contents(atPath: recordPath) else { return nil }
        return try? decoder.decode(PartialRecord.self, from: data)
    }

    /// Writes the record: into the `.part` file's attribute (one call, no new file) when the file
    /// is there and its file system keeps attributes, else atomically into the `.json` file.
    public func save(_ record: PartialRecord) throws(MirrorError) {
        guard let data = try? JSONEncoder().encode(record) else { return }
        let part = partPath(for: record.url)
        let stored = data.count <= Self.largestAttribute
            && data.withUnsafeBytes { mirror_setxattr(part, Self.attribute, $0.baseAddress, $0.count) } == 0
        if stored {
            // A record an older build left beside the file would otherwise be read instead.
            if recordFiles.mayExist.load(ordering: .relaxed) { unlink(recordPath(for: record.url)) }
            return
        }
        // An attribute of an earlier version of these bytes would be read before the file.
        mirror_removexattr(part, Self.attribute)
        recordFiles.mayExist.store(true, ordering: .relaxed)
        let path = recordPath(for: record.url)
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
        var info = stat()
        guard stat(partPath(for: url), &info) == 0, info.st_size > 0 else { return nil }
        let length = Int64(info.st_size)
        // A partial that shares its inode with another name (an older build killed between link
        // and unlink) must not be written to: that would change the mirrored file.
        guard info.st_nlink == 1 else {
            remove(url)
            return nil
        }
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
        for name in names where name.hasSuffix(".part") {
            let part = directoryPath + "/" + name
            let json = directoryPath + "/" + name.dropLast(5) + ".json"
            guard let record = Self.record(partPath: part, recordPath: json) else { continue }
            var info = stat()
            guard stat(part, &info) == 0 else { continue }
            found.append((record, Int64(info.st_size), Int(info.st_mtim.tv_sec)))
        }
        return found.sorted { ($0.modified, $0.record.url) < ($1.modified, $1.record.url) }.map { ($0.record, $0.length) }
    }

    /// Takes the record of `url`'s download off the file it became (at `path`, its final name):
    /// the mirror's files carry none of its bookkeeping. Done after the rename, so that a kill
    /// before it leaves a resumable partial, and one after it only a stray attribute.
    public func detachRecord(for url: String, movedTo path: String) {
        mirror_removexattr(path, Self.attribute)
        if recordFiles.mayExist.load(ordering: .relaxed) { unlink(recordPath(for: url)) }
    }

    /// Deletes what is held for `url`.
    public func remove(_ url: String) {
        unlink(partPath(for: url))
        if recordFiles.mayExist.load(ordering: .relaxed) { unlink(recordPath(for: url)) }
    }
}
