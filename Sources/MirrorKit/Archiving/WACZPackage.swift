import FoundationEssentials
import Glibc

/// `mirror warc pack DIR --out FILE.wacz`: the closed WARC files of an archive directory and their
/// indexes in one WACZ 1.1.1 file (what ReplayWeb.page opens in a browser): `archive/` the WARC
/// files as they are (stored, not compressed again), `indexes/index.cdxj` their indexes merged,
/// `pages/pages.jsonl` every file captured whole, and `datapackage.json` with each entry's
/// SHA-256, itself hashed in `datapackage-digest.json`.
package enum WACZPackage {
    package struct Summary: Sendable {
        package var files: Int
        package var pages: Int
        package var bytes: Int64
        /// WARC files still being written, or left by a killed run (a run with `--warc` closes
        /// those): not packed.
        package var open: [String]
    }

    package static func pack(directory path: String, to output: String) throws(ArchiveProblem) -> Summary {
        try pack(directory: path, to: output, alwaysZip64: false)
    }

    static func pack(directory path: String, to output: String, alwaysZip64: Bool) throws(ArchiveProblem) -> Summary {
        let directory: Directory
        do {
            directory = try Directory.open(existing: path)
        } catch {
            throw ArchiveProblem("\(error)")
        }
        let names = directory.names()
        let warcs = names.filter { $0.hasSuffix(".warc.gz") }.sorted()
        let open = names.filter { $0.hasSuffix(".warc.gz.open") }.sorted()
        guard !warcs.isEmpty else { throw ArchiveProblem("\(path) holds no closed WARC file (mirror-….warc.gz) to pack", isNothingToRead: true) }

        let (parent, name) = Self.split(output)
        let target: Directory
        do {
            target = try Directory.open(existing: parent)
        } catch {
            throw ArchiveProblem("\(error)")
        }
        guard !target.contains(name) else { throw ArchiveProblem("\(output) exists; pack writes a new file") }
        let temporary = ".\(name).\(getpid()).part"
        let fd: Int32
        do {
            fd = try target.openFile(temporary, .write(create: true, exclusive: true))
        } catch {
            throw ArchiveProblem("\(error)")
        }
        var kept = false
        defer {
            close(fd)
            if !kept { target.remove(temporary) }
        }
        let zip = ZipWriter(fd: fd, path: target.path(of: temporary), alwaysZip64: alwaysZip64)
        var written: [ZipWriter.Written] = []
        var total: Int64 = 0
        // The files' indexes are merged on disk, beside the package being written: an archive of
        // millions of records packs in the memory of one.
        let lines = ExternalLineSort(spillingInto: target)
        for warc in warcs {
            let source: Int32
            let info: stat
            do {
                (source, info) = try directory.openFileWithStatus(warc, .read)
            } catch {
                throw ArchiveProblem("\(error)")
            }
            defer { close(source) }
            do throws(FileSystemError) {
                if try !Self.appendIndex(named: WARCArchive.indexName(of: warc), in: directory, to: lines) {
                    try CDXJIndex.of(file: source, named: warc, spillingInto: target).index.forEachLine { lines.append(line: $0) }
                }
            } catch {
                throw ArchiveProblem("\(error)")
            }
            written.append(try zip.add("archive/" + warc, file: source, size: Int64(info.st_size)))
            total += Int64(info.st_size)
        }
        let index: Spool
        let pageList: Spool
        var pages = PageList()
        do throws(FileSystemError) {
            index = try Spool(in: target)
            pageList = try Spool(in: target)
            try pageList.append(PageList.header)
            try lines.merge { (line: [UInt8]) throws(FileSystemError) in
                try index.append(line)
                try index.append(0x0A)
                if let page = pages.page(forIndexLine: line) { try pageList.append(page) }
            }
            lines.removeAll()
            try index.flush()
            try pageList.flush()
        } catch {
            throw ArchiveProblem("\(error)")
        }
        written.append(try zip.add("indexes/index.cdxj", file: index.descriptor, size: index.length))
        written.append(try zip.add("pages/pages.jsonl", file: pageList.descriptor, size: pageList.length))
        let package = Self.datapackage(written)
        _ = try zip.add("datapackage.json", bytes: package)
        let digest: String
        do {
            digest = "sha256:" + MD5Context.hex(try MD5Context.hash(of: package, .sha256))
        } catch {
            throw ArchiveProblem("\(error)")
        }
        _ = try zip.add("datapackage-digest.json", bytes: Array("{\"path\": \"datapackage.json\", \"hash\": \"\(digest)\"}\n".utf8))
        try zip.finish()
        guard fsync(fd) == 0 else { throw ArchiveProblem("\(output): \(String(cString: strerror(errno)))") }
        do {
            guard try target.move(temporary, to: target, as: name) else { throw ArchiveProblem("\(output) exists; pack writes a new file") }
            kept = true
            try target.sync()
        } catch let problem as ArchiveProblem {
            throw problem
        } catch {
            throw ArchiveProblem("\(error)")
        }
        return Summary(files: warcs.count, pages: pages.count, bytes: total, open: open)
    }

    /// Appends the lines of the index file `name` beside a WARC file (as the archive wrote it,
    /// or anyone); false when there is none to read, and the index is made from the WARC file.
    private static func appendIndex(named name: String, in directory: Directory, to lines: ExternalLineSort) throws(FileSystemError) -> Bool {
        guard let (fd, info) = try? directory.openFileWithStatus(name, .read) else { return false }
        defer { close(fd) }
        var reader = LineReader(fd: fd, range: 0..<Int64(info.st_size), path: directory.path(of: name), longestLine: 1 << 20)
        while let line = try reader.next() {
            if !line.isEmpty { lines.append(line: line) }
        }
        return true
    }

    private static func datapackage(_ entries: [ZipWriter.Written]) -> [UInt8] {
        let created = String(WARCRecord.date(WARCRecord.now()).prefix(19)) + "Z"
        let resources = entries.map { entry in
            let name = entry.name.split(separator: "/").last.map { $0.lowercased() } ?? entry.name
            return "    {\"name\": \(JSONText.quoted(name)), \"path\": \(JSONText.quoted(entry.name)), "
                + "\"hash\": \"\(entry.hash)\", \"bytes\": \(entry.bytes)}"
        }
        let text = """
            {
              "profile": "data-package",
              "wacz_version": "1.1.1",
              "title": "mirror archive",
              "software": "mirror/\(MirrorVersion.number)",
              "created": "\(created)",
              "resources": [
            \(resources.joined(separator: ",\n"))
              ]
            }

            """
        return Array(text.utf8)
    }

    private static func split(_ path: String) -> (parent: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let parent = String(path[..<slash])
        return (parent.isEmpty ? "/" : parent, String(path[path.index(after: slash)...]))
    }
}

extension CDXJIndex {
    /// The index of a WARC file read back from it (one a killed run left, or one whose index is
    /// missing).
    /// The index of the whole records at the start of `fd`, and their length.
    /// `records` counts them, indexed or not.
    static func of(file fd: Int32, named name: String, spillingInto directory: Directory? = nil) -> (index: CDXJIndex, length: Int64, records: Int) {
        let index = CDXJIndex(spillingInto: directory)
        var records = 0
        let length = GzipMembers.wholeMembers(of: fd) { member in
            records += 1
            guard let record = IndexedRecord(recordHead: member.head) else { return }
            index.add(record, offset: member.offset, length: member.length, file: name)
        }
        return (index, length, records)
    }
}

/// Every URL captured whole (a 200, or a resource), once, as ReplayWeb.page lists pages, made
/// from the merged index a line at a time. The lines of one URL are together, since they share
/// its SURT key: only the URLs of the key at hand are kept to tell a repeat.
struct PageList {
    static let header = Array("{\"format\": \"json-pages-1.0\", \"id\": \"pages\", \"title\": \"All pages\"}\n".utf8)
    private(set) var count = 0
    private var key: [UInt8] = []
    private var seenUnderKey: Set<String> = []

    /// The page line (with its newline) of the index line `line`, when it is a URL's first whole capture.
    mutating func page(forIndexLine line: [UInt8]) -> [UInt8]? {
        let parts = line.split(separator: 0x20, maxSplits: 2)
        guard parts.count == 3, let fields = try? JSONDocument.decode(PageFields.self, from: Array(parts[2])),
              let url = fields.url
        else { return nil }
        if !parts[0].elementsEqual(key) {
            key = Array(parts[0])
            seenUnderKey.removeAll(keepingCapacity: true)
        }
        guard fields.status == "200" || (fields.status == nil && fields.mime != "warc/revisit") else { return nil }
        let stamp = Array(parts[1])
        guard stamp.count == 14, seenUnderKey.insert(url).inserted else { return nil }
        count += 1
        let digits = String(decoding: stamp, as: UTF8.self)
        func slice(_ from: Int, _ count: Int) -> String { String(digits.dropFirst(from).prefix(count)) }
        let ts = "\(slice(0, 4))-\(slice(4, 2))-\(slice(6, 2))T\(slice(8, 2)):\(slice(10, 2)):\(slice(12, 2))Z"
        return Array("{\"id\": \"\(count)\", \"url\": \(JSONText.quoted(url)), \"ts\": \"\(ts)\"}\n".utf8)
    }
}

/// What the pages list reads of an index line's JSON: each field a string, or taken as absent.
/// Decoded as itself rather than as any JSON (``JSONValue``), whose trials of each value's type
/// took three quarters of a pack.
private struct PageFields: Decodable {
    var url: String?
    var status: String?
    var mime: String?

    private enum CodingKeys: String, CodingKey {
        case url, status, mime
    }

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        url = try? fields.decodeIfPresent(String.self, forKey: .url)
        status = try? fields.decodeIfPresent(String.self, forKey: .status)
        mime = try? fields.decodeIfPresent(String.self, forKey: .mime)
    }
}
