import Foundation
import Testing
@testable import MirrorKit

@Suite("A named file's record until its state row: small enough for the inode", .timeLimit(.minutes(2)))
struct CommitRecordTests {
    /// What the servers mirror meets answer: Imgur's CDN (an MD5 ETag), nginx (mtime-size), and the rest.
    static let shapes: [(url: String, etag: String?, lastModified: String?, length: Int64?)] = [
        ("https://i.imgur.com/AbCdEfG.jpg", "\"d41d8cd98f00b204e9800998ecf8427e\"", "Tue, 24 Nov 2026 10:00:00 GMT", 51_200),
        ("http://127.0.0.1:8080/media/abcdefgb.jpg", "\"6744f3a0-2000\"", "Sun, 01 Nov 2026 10:00:00 GMT", 8192),
        ("https://example.org/a.bin", "W/\"abc\"", nil, 0),
        ("https://example.org/b.bin", nil, "Sunday, 06-Nov-94 08:49:37 GMT", 1),
        ("https://example.org/c.bin", "\"D41D8CD98F00B204E9800998ECF8427E\"", "Thu, 01 Jan 1970 00:00:00 GMT", 1 << 20),
        ("https://example.org/d.bin", "\"é\"", "Wed, 31 Dec 1969 23:59:59 GMT", Int64.max),
        ("https://example.org/e.bin", "", "Tue, 24 Nov 2026 10:00:00 UTC", 127),
        ("https://example.org/f.bin", nil, nil, 128),
        // A weekday that is not the date's (24 Nov 2026 is a Tuesday): kept as sent, never mended.
        ("https://example.org/g.bin", "\"0123456789abcdef0123456789abcdef\"", "Mon, 24 Nov 2026 10:00:00 GMT", 2),
        // Fullwidth digits are no MD5, even in 32 bytes: kept as text.
        ("https://example.org/h.bin", "\"\u{FF10}23456789abcdef0123456789abcdef\"", "Fri, 31 Dec 9999 23:59:59 GMT", 3),
        ("https://example.org/i.bin", "\"" + String(repeating: "e", count: 253) + "\"", nil, 4),
    ]

    @Test(arguments: 0..<shapes.count)
    func theCompactFormReadsBackAsItWasWritten(_ index: Int) throws {
        let shape = Self.shapes[index]
        let record = try CommitRecord(url: shape.url, etag: shape.etag, lastModified: shape.lastModified, length: shape.length)
        let encoded = try #require(record.compactEncoded)
        let decoded = CommitRecord(stored: encoded)
        #expect(decoded == record)
        // Byte for byte, not only as equal strings (`==` on strings is canonical equivalence).
        #expect(decoded?.etag?.utf8.elementsEqual((shape.etag ?? "").utf8) ?? (shape.etag == nil))
        #expect(decoded?.lastModified?.utf8.elementsEqual((shape.lastModified ?? "").utf8) ?? (shape.lastModified == nil))
        #expect(CommitRecord(stored: encoded)?.isFor(shape.url) == true)
        #expect(CommitRecord(stored: encoded)?.isFor(shape.url + "?") == false)
        // Not a partial's record: a partial found carrying it is dropped, never resumed from.
        #expect(PartialRecord(stored: encoded) == nil)
    }

    @Test func imgursAndNginxsRecordsFitInTheInodeTheFullFormDoesNot() throws {
        // Imgur's MD5 ETag as its 16 bytes and the date as its seconds; nginx's ETag as text.
        for (shape, size) in zip(Self.shapes.prefix(2), [36, 35]) {
            let full = PartialRecord(url: shape.url, etag: shape.etag, lastModified: shape.lastModified, totalLength: shape.length)
            let compact = try #require(try CommitRecord(full).compactEncoded)
            #expect(compact.count == size, "\(compact.count) bytes for \(shape.url)")
            #expect(compact.count <= CommitRecord.inodeRoom)
            #expect(full.encoded.count > CommitRecord.inodeRoom)
        }
    }

    @Test func theFullFormOlderBuildsLeftStillReads() throws {
        let full = PartialRecord(url: "https://i.test/a.jpg", etag: "\"e1\"", lastModified: "Sun, 01 Nov 2026 10:00:00 GMT", totalLength: 1234)
        for stored in [full.encoded, Array(try JSONEncoder().encode(full))] {
            let record = try #require(CommitRecord(stored: stored))
            #expect(record.isFor(full.url) && !record.isFor("https://i.test/b.jpg"))
            #expect(record.etag == full.etag && record.lastModified == full.lastModified && record.length == 1234)
        }
    }

    @Test func aDamagedRecordIsNoRecord() throws {
        let record = try CommitRecord(
            url: "https://i.test/a.jpg", etag: "\"6744f3a0-2000\"", lastModified: "Sun, 01 Nov 2026 10:00:00 GMT", length: 300)
        let encoded = try #require(record.compactEncoded)
        for cut in 0..<encoded.count {
            #expect(CommitRecord(stored: Array(encoded.prefix(cut))) == nil, "cut at \(cut)")
        }
        #expect(CommitRecord(stored: encoded + [0]) == nil)
        let header = [UInt8(ascii: "m"), 3] + [UInt8](repeating: 7, count: 8)
        for damaged: [UInt8] in [
            header + [0x80, 0x00, 0, 0],  // a length with a needless zero byte
            header + [UInt8](repeating: 0xFF, count: 9) + [0x02, 0, 0],  // a length past 64 bits
            header + [UInt8](repeating: 0xFF, count: 9) + [0x01, 0, 0],  // past Int64.max
            header + [5, 3, 0],  // an unknown tag
            header + [5, 0, 2, 4, 0x41],  // a text shorter than it says
            header + [5, 0, 2, 1, 0xFF],  // a text that is not UTF-8
            header + [5, 1] + [UInt8](repeating: 0xFF, count: 8) + [0x7F, 0],  // seconds near Int64.max
            header + [5, 1, 0x80, 0x83, 0xD1, 0xFF, 0xAF, 0x07, 0],  // the first second of the year 10000
        ] {
            #expect(CommitRecord(stored: damaged) == nil, "\(damaged)")
        }
    }

    @Test func aLongValidatorOrAnUnknownLengthKeepsTheFullForm() throws {
        let long = try CommitRecord(url: "u", etag: "\"" + String(repeating: "e", count: 300) + "\"", lastModified: nil, length: 10)
        #expect(long.compactEncoded == nil)
        #expect(try CommitRecord(url: "u", etag: nil, lastModified: nil, length: nil).compactEncoded == nil)
        #expect(try CommitRecord(url: "u", etag: nil, lastModified: nil, length: -1).compactEncoded == nil)
        let longest = "\"" + String(repeating: "e", count: 253) + "\""
        #expect(try CommitRecord(url: "u", etag: longest, lastModified: nil, length: 1).compactEncoded != nil)
        #expect(try CommitRecord(url: "u", etag: longest + "e", lastModified: nil, length: 1).compactEncoded == nil)
    }

    /// A partial found carrying the compact form (a kill during its commit's sync) is whole: read
    /// by the URL that names it, it is resumed from (a ranged request brings no byte again) and
    /// kept by the budget's sweep. One carrying another URL's compact record is not ours.
    @Test func aPartialCarryingTheCompactFormIsReadByTheURLThatNamesIt() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
            func partial(_ url: String, carrying record: PartialRecord) throws {
                try TestSupport.write([UInt8](repeating: 1, count: 100), to: partials.partPath(for: url))
                let fd = try partials.folder.openFile(try partials.partName(for: url), .write(create: false))
                let attached = PartialStore.attachForCommit(record, toFile: fd)
                close(fd)
                #expect(attached)
            }
            let url = "https://i.test/whole.jpg"
            let record = PartialRecord(url: url, etag: "\"e\"", lastModified: "Sun, 01 Nov 2026 10:00:00 GMT", totalLength: 100)
            try partial(url, carrying: record)
            let stray = "https://i.test/stray.jpg"
            try partial(stray, carrying: PartialRecord(url: "https://i.test/other.jpg", etag: "\"e\"", totalLength: 100))
            #expect(partials.purge(keepingAtMost: 10, bytes: 1 << 20).isEmpty)
            #expect(partials.length(for: url) == 100, "kept")
            #expect(partials.length(for: stray) == 0, "not ours: gone")
            #expect(partials.record(for: url) == record)
            let resume = partials.resumePoint(for: url)
            #expect(resume?.offset == 100 && resume?.validator == "\"e\"")
            #expect(partials.record(for: "https://i.test/else.jpg") == nil)

            // Over the budget, the older goes first, named by its file: the compact record names
            // no URL.
            let newer = "https://i.test/newer.jpg"
            try partial(newer, carrying: PartialRecord(url: newer, etag: "\"n\"", totalLength: 100))
            var past = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, partials.partPath(for: url), &past, 0) == 0)
            #expect(partials.purge(keepingAtMost: 1, bytes: 1 << 20) == [try partials.partName(for: url)])
            #expect(partials.length(for: url) == 0, "dropped")
            #expect(partials.length(for: newer) == 100, "the newest is kept")
        }
    }

    /// Whether the file system in `/tmp` puts a small attribute in the inode and the full record
    /// in a block of its own: ext4 with the default 256-byte inodes. Elsewhere (tmpfs and btrfs
    /// count no blocks for attributes, ext4 with 128-byte inodes has no room, XFS room for both)
    /// the two forms cost the same.
    static var attributesShowTheInodesRoom: Bool {
        let path = NSTemporaryDirectory() + "mirror-inode-room-\(getpid())"
        guard let folder = try? Directory.open(creating: path) else { return false }
        defer { try? FileManager.default.removeItem(atPath: path) }
        func blocks(_ value: [UInt8]) -> Int? {
            guard let fd = try? folder.openFile("probe", .write(create: true)) else { return nil }
            defer {
                close(fd)
                folder.remove("probe")
            }
            var info = stat()
            guard Directory.setAttribute(PartialStore.attribute, value, onFile: fd), fstat(fd, &info) == 0 else { return nil }
            return Int(info.st_blocks)
        }
        return blocks([1]) == 0 && (blocks([UInt8](repeating: 1, count: 120)) ?? 0) > 0
    }

    /// On ext4 with room in its inodes (the default 256 bytes), a small file's record takes no block.
    @Test(.enabled(if: attributesShowTheInodesRoom, "the file system of /tmp shows no difference"))
    func aSmallFilesRecordTakesNoBlockOfItsOwnOnExt4() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let folder = try Directory.open(creating: dir.path)
            func blocks(afterAttaching attach: (Int32) -> Bool, _ name: String) throws -> Int {
                try TestSupport.write([], to: dir.appendingPathComponent(name).path)
                let fd = try folder.openFile(name, .write(create: false))
                defer { close(fd) }
                let attached = attach(fd)
                #expect(attached)
                var info = stat()
                #expect(fstat(fd, &info) == 0)
                return Int(info.st_blocks)
            }
            let shape = Self.shapes[0]
            let full = PartialRecord(url: shape.url, etag: shape.etag, lastModified: shape.lastModified, totalLength: shape.length)
            var large = full
            large.totalLength = CommitRecord.compactUpTo + 1
            // Each call outside `#expect`: a closure passed through the macro's expansion was seen
            // to reach a later call of `blocks` in its stead.
            let fullForm = try blocks(afterAttaching: { fd in PartialStore.attach(full, toFile: fd) }, "full")
            #expect(fullForm > 0)
            let compact = try blocks(afterAttaching: { fd in PartialStore.attachForCommit(full, toFile: fd) }, "compact")
            #expect(compact == 0)
            // A file over the compact form's size keeps the full record, a partial's.
            let largeForm = try blocks(afterAttaching: { fd in PartialStore.attachForCommit(large, toFile: fd) }, "large")
            #expect(largeForm > 0)
            let stored = folder.attribute(PartialStore.attribute, of: "large", limit: 4096)
            #expect(stored.flatMap(PartialRecord.init(stored:)) == large)
        }
    }
}
