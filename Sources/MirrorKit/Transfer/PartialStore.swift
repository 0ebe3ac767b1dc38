import FoundationEssentials
import Glibc
import Synchronization

/// What is known about a partial download: enough to ask for the rest and to be sure the rest
/// belongs to the same bytes.
struct PartialRecord: Sendable, Codable, Equatable {
    var url: String
    var etag: String?
    var lastModified: String?
    /// The size of the whole resource, once a server has said it.
    var totalLength: Int64?

    /// The validator for If-Range (RFC 9110 §13.1.5): a strong ETag; Last-Modified only when
    /// there is no ETag at all. A weak ETag says the server cannot vouch for byte-identical
    /// versions, so it, or a date beside it, must not splice two responses: nil then, and the
    /// file is fetched whole.
    var ifRangeValidator: String? {
        if let etag {
            return !etag.hasPrefix("W/") && etag.hasPrefix("\"") ? etag : nil
        }
        return lastModified
    }

    /// The record as stored: a line per field, each optional one marked present (`=`) or absent
    /// (`-`). Written for every partial that outlives its first write and for every file over
    /// ``CommitRecord/compactUpTo`` between its commit and its state row, so it costs no JSON.
    /// Header values and URLs hold no line breaks (libcurl refuses them), so a line is a field.
    var encoded: [UInt8] {
        var text = Self.magic + "\n" + url + "\n"
        for field in [etag, lastModified, totalLength.map(String.init)] {
            text += field.map { "=" + $0 } ?? "-"
            text += "\n"
        }
        return Array(text.utf8)
    }

    private static let magic = "mirror-partial 2"

    /// A stored record: this encoding, or the JSON older builds wrote.
    init?(stored bytes: [UInt8]) {
        if bytes.first == UInt8(ascii: "{") {
            guard let record = try? JSONDecoder().decode(PartialRecord.self, from: Data(bytes)) else { return nil }
            self = record
            return
        }
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard lines.count == 6, lines[0] == Self.magic, lines[5].isEmpty, !lines[1].isEmpty else { return nil }
        var fields: [String?] = []
        for line in lines[2...4] {
            switch line.first {
            case "=": fields.append(String(line.dropFirst()))
            case "-" where line.count == 1: fields.append(nil)
            default: return nil
            }
        }
        var total: Int64?
        if let text = fields[2] {
            guard let value = Int64(text), value >= 0 else { return nil }
            total = value
        }
        self.init(url: lines[1], etag: fields[0], lastModified: fields[1], totalLength: total)
    }

    init(url: String, etag: String? = nil, lastModified: String? = nil, totalLength: Int64? = nil) {
        self.url = url
        self.etag = etag
        self.lastModified = lastModified
        self.totalLength = totalLength
    }
}

/// Where partial downloads live between attempts and between runs: for each URL a `.part` file
/// with the bytes, named by the URL's MD5 so any URL maps to a safe, fixed-length name, and the
/// record of their validators in that file's extended attribute `user.mirror.partial`. One inode
/// per download: creating and deleting files is what a small download costs most on ext4. Where
/// the file system keeps no extended attributes, the record goes to a `.json` file beside it.
///
/// Everything is reached through the folder's descriptor, never through a link, and a `.part`
/// file with a second name is never written (see ``Directory``).
///
/// The record is written before the first byte of a body, and the `.part` file only ever grows
/// by bytes already written, so whatever kills the process (even SIGKILL) leaves a prefix that the
/// next attempt can resume with `Range` and check with `If-Range`.
package struct PartialStore: Sendable {
    let folder: Directory
    /// Whether any `.json` record may exist (left by an older build, or written where attributes
    /// fail): only then is one looked for when a partial is saved, committed or removed.
    private let recordFiles: RecordFiles

    private final class RecordFiles: Sendable {
        let mayExist: Atomic<Bool>
        init(_ value: Bool) { mayExist = Atomic(value) }
    }

    init(folder: Directory) {
        self.folder = folder
        let names = folder.names()
        // A record whose bytes are gone is of no use: drop it, so it keeps nothing looking for more.
        let parts = Set(names.filter { $0.hasSuffix(".part") }.map { $0.dropLast(5) })
        var records = false
        for name in names where name.hasSuffix(".json") {
            if parts.contains(name.dropLast(5)) {
                records = true
            } else {
                folder.remove(name)
            }
        }
        recordFiles = RecordFiles(records)
    }

    /// The store in `folder`, to be read only (``heldPartials()``): records left without their
    /// bytes stay, since a run may be writing them.
    init(inspecting folder: Directory) {
        self.folder = folder
        recordFiles = RecordFiles(true)
    }

    /// The store in the folder at `directory`, made if missing.
    package init(directory: URL) throws(FileSystemError) {
        self.init(folder: try Directory.open(creating: directory.path))
    }

    /// The name of `url`'s `.part` file.
    func partName(for url: String) throws(DigestError) -> String {
        try Digest.md5Hex(of: url, suffix: ".part")
    }

    /// Where `url`'s bytes are written.
    func location(for url: String) throws(DigestError) -> FileLocation {
        FileLocation(directory: folder, name: try partName(for: url))
    }

    /// The path of `url`'s `.part` file, for messages and tests.
    func partPath(for url: String) -> String {
        folder.path(of: (try? partName(for: url)) ?? "?")
    }

    private func recordName(forPart part: String) -> String {
        part.dropLast(5) + ".json"
    }

    /// The `.part` file of `url` when it is a regular file of ours (one name, not a link).
    private func heldPart(for url: String) -> (name: String, info: stat)? {
        guard let name = try? partName(for: url), let info = folder.status(of: name),
              info.st_mode & S_IFMT == S_IFREG
        else { return nil }
        return (name, info)
    }

    /// Bytes held for `url` (0 when nothing is).
    func length(for url: String) -> Int64 {
        heldPart(for: url).map { Int64($0.info.st_size) } ?? 0
    }

    static let attribute = "user.mirror.partial"

    func record(for url: String) -> PartialRecord? {
        guard let name = try? partName(for: url) else { return nil }
        if let record = record(ofPart: name) { return record.url == url ? record : nil }
        // A whole download whose commit a kill cut short, carrying the compact record: the URL
        // that names the partial is the one the record is of.
        guard let commit = commitRecord(ofPart: name), commit.isFor(url) else { return nil }
        return PartialRecord(url: url, etag: commit.etag, lastModified: commit.lastModified, totalLength: commit.length)
    }

    /// The compact record a partial carries when a kill came between its commit's record and its
    /// name, if it is of the URL the partial is named by.
    private func commitRecord(ofPart part: String) -> CommitRecord? {
        guard let bytes = folder.attribute(Self.attribute, of: part, limit: Self.largestAttribute),
              let record = CommitRecord(compact: bytes), part.hasPrefix(record.urlDigestHex)
        else { return nil }
        return record
    }

    /// Records longer than this go to the `.json` file: file systems cap attribute sizes (ext4 at
    /// about a block), and a signed URL can be long.
    static let largestAttribute = 2048

    /// The record of the `.part` file `part`: its attribute, else the `.json` beside it (when
    /// there may be one).
    private func record(ofPart part: String) -> PartialRecord? {
        if let bytes = folder.attribute(Self.attribute, of: part, limit: Self.largestAttribute),
           let record = PartialRecord(stored: bytes) {
            return record
        }
        guard recordFiles.mayExist.load(ordering: .relaxed),
              let bytes = folder.contents(of: recordName(forPart: part), limit: 64 << 10)
        else { return nil }
        return PartialRecord(stored: bytes)
    }

    /// Puts `record` on the open file `fd` (a partial about to be named), where the file system
    /// keeps attributes and it fits: a kill between naming the file and recording it in the state
    /// then leaves what the next run needs to record it without a request. False when it could not.
    @discardableResult
    static func attach(_ record: PartialRecord, toFile fd: Int32) -> Bool {
        let data = record.encoded
        return data.count <= largestAttribute && Directory.setAttribute(attribute, data, onFile: fd)
    }

    /// Puts on the open file `fd` (a finished download about to be named) what the next run needs
    /// to record it should a kill come before its state row: a small file's compact
    /// ``CommitRecord``, which fits in the inode; a larger file's full record, which keeps it a
    /// partial the next run can resume should the kill come during its sync. False when it could not.
    @discardableResult
    static func attachForCommit(_ record: PartialRecord, toFile fd: Int32) -> Bool {
        if let length = record.totalLength, length <= CommitRecord.compactUpTo,
           let compact = try? CommitRecord(record).compactEncoded {
            return Directory.setAttribute(attribute, compact, onFile: fd)
        }
        return attach(record, toFile: fd)
    }

    /// Writes the record: into the `.part` file's attribute (one call, no new file) when the file
    /// is there and its file system keeps attributes, else atomically into the `.json` file.
    func save(_ record: PartialRecord) throws {
        let part = try partName(for: record.url)
        let fd = try folder.openFile(part, .write(create: false))
        defer { close(fd) }
        if Self.attach(record, toFile: fd) {
            // A record an older build left beside the file would otherwise be read instead.
            if recordFiles.mayExist.load(ordering: .relaxed) { folder.remove(recordName(forPart: part)) }
            return
        }
        // An attribute of an earlier version of these bytes would be read before the file.
        Directory.removeAttribute(Self.attribute, fromFile: fd)
        recordFiles.mayExist.store(true, ordering: .relaxed)
        try folder.replaceContents(of: recordName(forPart: part), with: record.encoded)
    }

    /// Where to resume `url` from: the held length and the validator proving those bytes are
    /// still current. Nil, and whatever was held is dropped, when there is no such validator:
    /// appending to bytes of unknown origin could splice two different files.
    func resumePoint(for url: String) -> (offset: Int64, record: PartialRecord, validator: String)? {
        guard let name = try? partName(for: url) else { return nil }
        return resumePoint(for: url, named: name)
    }

    /// ``resumePoint(for:)`` of the partial `name`, `url`'s part name as the caller made it.
    func resumePoint(for url: String, named name: String) -> (offset: Int64, record: PartialRecord, validator: String)? {
        guard let info = folder.status(of: name) else { return nil }
        // Anything but our own regular file with one name (a link planted under the name, or a
        // partial an older build linked to a mirrored file) must never be written: drop the name.
        guard Directory.problem(withFile: info) == nil, info.st_size > 0 else {
            remove(url)
            return nil
        }
        guard let record = record(for: url), let validator = record.ifRangeValidator else {
            remove(url)
            return nil
        }
        return (Int64(info.st_size), record, validator)
    }

    /// Every partial held, with its record and the bytes held, oldest first.
    func heldPartials() -> [(record: PartialRecord, length: Int64)] {
        var found: [(record: PartialRecord, length: Int64, modified: Int)] = []
        for name in folder.names() where name.hasSuffix(".part") {
            guard let info = folder.status(of: name), info.st_mode & S_IFMT == S_IFREG,
                  let record = record(ofPart: name)
            else { continue }
            found.append((record, Int64(info.st_size), Int(info.st_mtim.tv_sec)))
        }
        return found.sorted { ($0.modified, $0.record.url) < ($1.modified, $1.record.url) }.map { ($0.record, $0.length) }
    }

    /// Deletes the oldest partials until at most `count` files and `bytes` bytes are held (the
    /// newest is always kept), and
    /// anything in the folder that is not a partial of ours (a link, a stray name, a `.part`
    /// without a record): the budget a run keeps for suspended downloads applies to what earlier
    /// runs left too. Returns what it dropped: a partial's URL, or the file's name for a whole
    /// download carrying its commit's compact record, which names no URL.
    @discardableResult
    func purge(keepingAtMost count: Int, bytes: Int64) -> [String] {
        // A whole download carrying its commit's compact record names no URL: nil sorts it first.
        var kept: [(name: String, url: String?, length: Int64, modified: Int)] = []
        for name in folder.names() {
            if name.hasSuffix(".json"), recordFiles.mayExist.load(ordering: .relaxed) { continue }
            guard name.hasSuffix(".part"), let info = folder.status(of: name), Directory.problem(withFile: info) == nil else {
                folder.remove(name)
                continue
            }
            if let record = record(ofPart: name), (try? partName(for: record.url)) == name {
                kept.append((name, record.url, Int64(info.st_size), Int(info.st_mtim.tv_sec)))
            } else if commitRecord(ofPart: name) != nil {
                kept.append((name, nil, Int64(info.st_size), Int(info.st_mtim.tv_sec)))
            } else {
                folder.remove(name)
            }
        }
        kept.sort { ($0.modified, $0.url ?? "") < ($1.modified, $1.url ?? "") }
        var total = kept.reduce(0) { $0 + $1.length }
        var dropped: [String] = []
        for partial in kept.dropLast() where kept.count - dropped.count > count || total > bytes {
            if let url = partial.url { remove(url) } else { folder.remove(partial.name) }
            total -= partial.length
            dropped.append(partial.url ?? partial.name)
        }
        return dropped
    }

    /// Drops the record of `url`'s download once it is a mirrored file: the file (open as `fd`)
    /// carries none of the store's bookkeeping. Done once the file is recorded, so that a kill
    /// before leaves it resumable, and one after only a stray attribute.
    func detachRecord(for url: String, fromFile fd: Int32) {
        Directory.removeAttribute(Self.attribute, fromFile: fd)
        if recordFiles.mayExist.load(ordering: .relaxed), let part = try? partName(for: url) {
            folder.remove(recordName(forPart: part))
        }
    }

    /// The MD5 of the bytes held for `url`; nil when none can be read.
    func md5(for url: String) throws(DigestError) -> String? {
        let name = try partName(for: url)
        guard let fd = try? folder.openFile(name, .read) else { return nil }
        defer { close(fd) }
        return try Digest.md5Hex(ofFile: fd)
    }

    /// Gives `url`'s partial a new inode with the same bytes and record, under the same name: a
    /// writer that still holds the old one open (a worker stopped past its lease, whose claim
    /// another took over) writes, once let go, into a file no name leads to. Nothing to do when
    /// nothing is held.
    func detach(_ url: String) throws(FileSystemError) {
        guard let part = heldPart(for: url), Directory.problem(withFile: part.info) == nil else { return }
        do {
            try folder.replaceWithCopy(part.name)
        } catch where error.errno == ENOENT {
            // Gone since it was found (dropped by whoever held it): nothing is held.
        }
    }

    /// Deletes what is held for `url`.
    func remove(_ url: String) {
        guard let part = try? partName(for: url) else { return }
        folder.remove(part)
        if recordFiles.mayExist.load(ordering: .relaxed) { folder.remove(recordName(forPart: part)) }
    }
}
