import CZlib
import Glibc

/// Writes a ZIP file of stored (uncompressed) entries, as WACZ wants its WARC files: each entry
/// streamed once, its CRC-32 and SHA-256 taken on the way, in a data descriptor after it. ZIP64
/// records are written where a size or an offset needs them (a WACZ of several GiB).
final class ZipWriter {
    private let fd: Int32
    private let path: String
    private var offset: Int64 = 0
    private var entries: [Entry] = []
    /// Every entry and the end in ZIP64 form, needed or not (for tests of that form).
    private let alwaysZip64: Bool
    private let time: (time: UInt16, date: UInt16)

    private struct Entry {
        var name: [UInt8]
        var crc: UInt32
        var size: Int64
        var offset: Int64
        var zip64: Bool
    }

    /// An entry written: its path in the archive, size and SHA-256 (`sha256:` and hex).
    struct Written {
        var name: String
        var bytes: Int64
        var hash: String
    }

    init(fd: Int32, path: String, alwaysZip64: Bool = false) {
        self.fd = fd
        self.path = path
        self.alwaysZip64 = alwaysZip64
        var now = time_t(WARCRecord.now().tv_sec)
        var parts = tm()
        gmtime_r(&now, &parts)
        time = (
            UInt16(parts.tm_hour << 11 | parts.tm_min << 5 | parts.tm_sec / 2),
            UInt16(max(0, parts.tm_year - 80) << 9 | (parts.tm_mon + 1) << 5 | parts.tm_mday))
    }

    /// Adds an entry holding `bytes`.
    func add(_ name: String, bytes: [UInt8]) throws(ArchiveProblem) -> Written {
        try add(name, size: Int64(bytes.count)) { consume throws(ArchiveProblem) in
            let result: Result<Void, ArchiveProblem> = bytes.withUnsafeBytes { buffer in
                Result { () throws(ArchiveProblem) in try consume(buffer) }
            }
            try result.get()
        }
    }

    /// Adds an entry holding the `size` bytes of the open file `source`.
    func add(_ name: String, file source: Int32, size: Int64) throws(ArchiveProblem) -> Written {
        try add(name, size: size) { consume throws(ArchiveProblem) in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            var done: Int64 = 0
            while done < size {
                let count = pread(source, buffer.baseAddress, Int(min(Int64(buffer.count), size - done)), off_t(done))
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw ArchiveProblem("\(name) could not be read whole (\(count < 0 ? String(cString: strerror(errno)) : "it ended early"))") }
                try consume(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                done += Int64(count)
            }
        }
    }

    private func add(
        _ name: String, size: Int64, _ produce: ((UnsafeRawBufferPointer) throws(ArchiveProblem) -> Void) throws(ArchiveProblem) -> Void
    ) throws(ArchiveProblem) -> Written {
        let nameBytes = Array(name.utf8)
        let zip64 = alwaysZip64 || size >= 0xFFFF_FFFF
        let start = offset
        var header = Bytes()
        header.u32(0x0403_4B50)
        header.u16(zip64 ? 45 : 20)
        header.u16(0x0808) // sizes and CRC in a data descriptor; UTF-8 names
        header.u16(0) // stored
        header.u16(time.time)
        header.u16(time.date)
        header.u32(0)
        header.u32(zip64 ? 0xFFFF_FFFF : 0)
        header.u32(zip64 ? 0xFFFF_FFFF : 0)
        header.u16(UInt16(nameBytes.count))
        header.u16(zip64 ? 20 : 0)
        header.bytes += nameBytes
        if zip64 {
            header.u16(0x0001)
            header.u16(16)
            header.u64(0)
            header.u64(0)
        }
        try write(header.bytes)
        var crc = crc32(0, nil, 0)
        let digest: MD5Context
        do {
            digest = try MD5Context(.sha256)
        } catch {
            throw ArchiveProblem("\(error)")
        }
        var written: Int64 = 0
        try produce { buffer throws(ArchiveProblem) in
            crc = crc32(crc, buffer.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(buffer.count))
            do {
                try digest.update(buffer)
            } catch {
                throw ArchiveProblem("\(error)")
            }
            try write(buffer)
            written += Int64(buffer.count)
        }
        guard written == size else { throw ArchiveProblem("\(name) changed while it was packed") }
        var descriptor = Bytes()
        descriptor.u32(0x0807_4B50)
        descriptor.u32(UInt32(crc))
        if zip64 {
            descriptor.u64(UInt64(size))
            descriptor.u64(UInt64(size))
        } else {
            descriptor.u32(UInt32(size))
            descriptor.u32(UInt32(size))
        }
        try write(descriptor.bytes)
        entries.append(Entry(name: nameBytes, crc: UInt32(crc), size: size, offset: start, zip64: zip64))
        let hash: [UInt8]
        do {
            hash = try digest.finalize()
        } catch {
            throw ArchiveProblem("\(error)")
        }
        return Written(name: name, bytes: size, hash: "sha256:" + MD5Context.hex(hash))
    }

    /// Writes the central directory and the end records.
    func finish() throws(ArchiveProblem) {
        let directoryStart = offset
        for entry in entries {
            let bigSize = entry.zip64 || entry.size >= 0xFFFF_FFFF
            let bigOffset = alwaysZip64 || entry.offset >= 0xFFFF_FFFF
            var extra = Bytes()
            if bigSize {
                extra.u64(UInt64(entry.size))
                extra.u64(UInt64(entry.size))
            }
            if bigOffset { extra.u64(UInt64(entry.offset)) }
            var record = Bytes()
            record.u32(0x0201_4B50)
            record.u16(3 << 8 | 45) // made by Unix, ZIP 4.5
            record.u16(bigSize || bigOffset ? 45 : 20)
            record.u16(0x0808)
            record.u16(0)
            record.u16(time.time)
            record.u16(time.date)
            record.u32(entry.crc)
            record.u32(bigSize ? 0xFFFF_FFFF : UInt32(entry.size))
            record.u32(bigSize ? 0xFFFF_FFFF : UInt32(entry.size))
            record.u16(UInt16(entry.name.count))
            record.u16(extra.bytes.isEmpty ? 0 : UInt16(4 + extra.bytes.count))
            record.u16(0)
            record.u16(0)
            record.u16(0)
            record.u32(UInt32(0o100644) << 16)
            record.u32(bigOffset ? 0xFFFF_FFFF : UInt32(entry.offset))
            record.bytes += entry.name
            if !extra.bytes.isEmpty {
                record.u16(0x0001)
                record.u16(UInt16(extra.bytes.count))
                record.bytes += extra.bytes
            }
            try write(record.bytes)
        }
        let directorySize = offset - directoryStart
        let zip64End = alwaysZip64 || entries.count >= 0xFFFF || directoryStart >= 0xFFFF_FFFF || directorySize >= 0xFFFF_FFFF
            || entries.contains { $0.zip64 || $0.offset >= 0xFFFF_FFFF }
        var end = Bytes()
        if zip64End {
            let recordStart = offset
            end.u32(0x0606_4B50)
            end.u64(44)
            end.u16(3 << 8 | 45)
            end.u16(45)
            end.u32(0)
            end.u32(0)
            end.u64(UInt64(entries.count))
            end.u64(UInt64(entries.count))
            end.u64(UInt64(directorySize))
            end.u64(UInt64(directoryStart))
            end.u32(0x0706_4B50)
            end.u32(0)
            end.u64(UInt64(recordStart))
            end.u32(1)
        }
        end.u32(0x0605_4B50)
        end.u16(0)
        end.u16(0)
        end.u16(zip64End ? 0xFFFF : UInt16(entries.count))
        end.u16(zip64End ? 0xFFFF : UInt16(entries.count))
        end.u32(zip64End ? 0xFFFF_FFFF : UInt32(directorySize))
        end.u32(zip64End ? 0xFFFF_FFFF : UInt32(directoryStart))
        end.u16(0)
        try write(end.bytes)
    }

    private func write(_ bytes: [UInt8]) throws(ArchiveProblem) {
        let result: Result<Void, ArchiveProblem> = bytes.withUnsafeBytes { buffer in
            Result { () throws(ArchiveProblem) in try write(buffer) }
        }
        try result.get()
    }

    private func write(_ buffer: UnsafeRawBufferPointer) throws(ArchiveProblem) {
        var written = 0
        do {
            try Directory.writeAll(buffer, to: fd, at: offset, path: path, written: &written)
        } catch {
            throw ArchiveProblem("\(error)")
        }
        offset += Int64(buffer.count)
    }

    /// Little-endian fields.
    private struct Bytes {
        var bytes: [UInt8] = []

        mutating func u16(_ value: UInt16) { bytes += [UInt8(value & 0xFF), UInt8(value >> 8)] }
        mutating func u32(_ value: UInt32) { (0..<4).forEach { bytes.append(UInt8((value >> (8 * $0)) & 0xFF)) } }
        mutating func u64(_ value: UInt64) { (0..<8).forEach { bytes.append(UInt8((value >> (8 * UInt64($0))) & 0xFF)) } }
    }
}

/// Why an archive could not be packed.
package struct ArchiveProblem: Error, Sendable, CustomStringConvertible {
    package var description: String
    /// There was nothing to read (no closed WARC file), as opposed to something that failed.
    package var isNothingToRead = false

    init(_ description: String, isNothingToRead: Bool = false) {
        self.description = description
        self.isNothingToRead = isNothingToRead
    }
}
