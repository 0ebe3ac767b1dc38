import Foundation
import Glibc
import Testing
@testable import MirrorKit

/// A folder's entries as `readdir` gives them: each record only as long as its name.
@Suite("Reading a folder's entries")
struct DirectoryEntryTests {
    /// The last record of readdir's buffer, placed against a page nobody may read: reading a
    /// byte past the record (a copy of the whole `dirent`, or of its 256-byte `d_name`) crashes
    /// the test run, as it crashed `mirror` where the buffer ended its thread's heap.
    @Test func anEntryEndingItsBufferIsReadWithinItsRecord() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let mapped = mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        let region = try #require(mapped == MAP_FAILED ? nil : mapped)
        defer { munmap(region, 2 * page) }
        try #require(mprotect(region + page, page, PROT_NONE) == 0)

        let name = Array("ab.jpg".utf8)
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        // As the kernel lays them out: the name and its NUL, rounded up to 8 bytes.
        let length = (nameOffset + name.count + 1 + 7) & ~7
        #expect(length < MemoryLayout<dirent>.size)
        let record = region + page - length
        record.initializeMemory(as: UInt8.self, repeating: 0, count: length)
        record.storeBytes(of: UInt16(length), toByteOffset: MemoryLayout<dirent>.offset(of: \dirent.d_reclen)!, as: UInt16.self)
        record.storeBytes(of: UInt8(DT_REG), toByteOffset: MemoryLayout<dirent>.offset(of: \dirent.d_type)!, as: UInt8.self)
        for (index, byte) in name.enumerated() { record.storeBytes(of: byte, toByteOffset: nameOffset + index, as: UInt8.self) }

        var entries = [UnsafePointer(record.assumingMemoryBound(to: dirent.self))]
        var listed: [(String, UInt8)] = []
        Directory.forEachEntry(readingWith: { entries.popLast() }) { listed.append(($0, $1)) }
        #expect(listed.map(\.0) == ["ab.jpg"])
        #expect(listed.map(\.1) == [UInt8(DT_REG)])
    }

    /// A folder of thousands of names, the longest a name can be among them, listed whole.
    @Test func everyNameOfALargeFolderIsListedOnceWithItsKind() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            var files = Set((0..<5_000).map { "B\(String(format: "%06d", $0))m.jpg" })
            files.insert(String(repeating: "n", count: 255))
            for name in files { try #require(FileManager.default.createFile(atPath: dir.appendingPathComponent(name).path, contents: nil)) }
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("sub"), withIntermediateDirectories: false)

            let directory = try Directory.open(existing: dir.path)
            var listed: [String: UInt8] = [:]
            var repeated = 0
            directory.forEachEntry { name, kind in
                if listed.updateValue(kind, forKey: name) != nil { repeated += 1 }
            }
            #expect(repeated == 0)
            #expect(Set(listed.keys) == files.union(["sub"]))
            #expect(listed["sub"] == UInt8(DT_DIR) || listed["sub"] == UInt8(DT_UNKNOWN))
            #expect(listed.filter { $0.key != "sub" }.values.allSatisfy { $0 == UInt8(DT_REG) || $0 == UInt8(DT_UNKNOWN) })
        }
    }
}
