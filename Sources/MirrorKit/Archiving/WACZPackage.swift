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
        var lines: [[UInt8]] = []
        var total: Int64 = 0
        for warc in warcs {
            let source: Int32
            let info: stat
            do {
                (source, info) = try directory.openFileWithStatus(warc, .read)
            } catch {
                throw ArchiveProblem("\(error)")
            }
            defer { close(source) }
            let indexName = WARCArchive.indexName(of: warc)
            var index = directory.contents(of: indexName, limit: 1 << 30)
            if index == nil {
                do {
                    index = try CDXJIndex.of(file: source, named: warc).index.text()
                } catch {
                    throw ArchiveProblem("\(error)")
                }
            }
            guard let index else { continue }
            lines += index.split(separator: 0x0A).map(Array.init)
            written.append(try zip.add("archive/" + warc, file: source, size: Int64(info.st_size)))
            total += Int64(info.st_size)
        }
        lines.sort { $0.lexicographicallyPrecedes($1) }
        written.append(try zip.add("indexes/index.cdxj", bytes: lines.flatMap { $0 + [0x0A] }))
        let pages = Self.pages(fromIndex: lines)
        written.append(try zip.add("pages/pages.jsonl", bytes: Array(pages.text.utf8)))
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

    /// Every URL captured whole (a 200, or a resource), once, as ReplayWeb.page lists pages.
    private static func pages(fromIndex lines: [[UInt8]]) -> (text: String, count: Int) {
        var text = "{\"format\": \"json-pages-1.0\", \"id\": \"pages\", \"title\": \"All pages\"}\n"
        var seen = Set<String>()
        for line in lines {
            let parts = line.split(separator: 0x20, maxSplits: 2)
            guard parts.count == 3, case .object(let fields)? = JSONValue.parse(parts[2]),
                  case .string(let url)? = fields["url"]
            else { continue }
            let status = fields["status"].flatMap { if case .string(let value) = $0 { value } else { nil } }
            let mime = fields["mime"].flatMap { if case .string(let value) = $0 { value } else { nil } }
            guard status == "200" || (status == nil && mime != "warc/revisit"), seen.insert(url).inserted else { continue }
            let stamp = Array(parts[1])
            guard stamp.count == 14 else { continue }
            let digits = String(decoding: stamp, as: UTF8.self)
            func slice(_ from: Int, _ count: Int) -> String { String(digits.dropFirst(from).prefix(count)) }
            let ts = "\(slice(0, 4))-\(slice(4, 2))-\(slice(6, 2))T\(slice(8, 2)):\(slice(10, 2)):\(slice(12, 2))Z"
            text += "{\"id\": \"\(seen.count)\", \"url\": \(CDXJIndex.quoted(url)), \"ts\": \"\(ts)\"}\n"
        }
        return (text, seen.count)
    }

    private static func datapackage(_ entries: [ZipWriter.Written]) -> [UInt8] {
        let created = String(WARCRecord.date(WARCRecord.now()).prefix(19)) + "Z"
        let resources = entries.map { entry in
            let name = entry.name.split(separator: "/").last.map { $0.lowercased() } ?? entry.name
            return "    {\"name\": \(CDXJIndex.quoted(name)), \"path\": \(CDXJIndex.quoted(entry.name)), "
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
