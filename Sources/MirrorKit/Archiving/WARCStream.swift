import CMirrorSystem
import CZlib
import Dispatch
import Glibc
import Synchronization

/// A response large enough (``WARCArchive/streamsFrom``, 64 MiB by default: a Dash docset, a
/// video) to be archived as its body arrives, into a WARC file of its own, rather than read back
/// whole once its transfer has ended.
///
/// Read back, such a body was archived after the transfers, one body after another, doubling the
/// run's time on large files; streamed, it is written beside its transfer and what is left at the
/// end is a sync. The bytes are read from the transfer's file as its sink writes them out (no copy
/// is held in memory), digested, and written as deflate's stored blocks of a gzip member this
/// type frames itself: the record's header goes first with placeholders for its two digests,
/// which are written over it once known, and the member's CRC-32 is then made whole with
/// `crc32_combine`. A file a kill cuts mid-record ends with a member without its trailer, which
/// the next run cuts off, as any torn record.
///
/// A stream is given up (its file removed) when what arrived is not what its header declared (a
/// body cut short, a longer one), and the archive then writes the exchange as any other; when the
/// payload was archived before, the archive writes a `revisit` in its own file instead.
final class WARCStream: Sendable {
    /// The body's length, as its head declared it.
    let length: Int64
    /// Where the body is archived (internal: a test holds it to be the slow disk).
    let queue = DispatchQueue(label: "mirror.warc.stream")
    /// Touched on `queue`, and by the archive once the queue's work is done (``bodyFile(crc:)``)
    /// or the stream is let go (`deinit`).
    private let state: Mutex<State>
    private let archive: WARCArchive
    /// Given up: work queued before is skipped, rather than archiving a body that will go.
    private let abandoned = Atomic<Bool>(false)

    private struct State: ~Copyable {
        var fd: Int32 = -1
        var name = ""
        var source: Int32
        var sourceOffset: Int64
        /// The record's header as first written, with placeholder digests, and where it lies.
        var header: [UInt8]
        var headerOffset: Int64 = 0
        var head: [UInt8]
        var memberStart: Int64 = 0
        var end: Int64 = 0
        var streamed: Int64 = 0
        var bodyCRC = crc32(0, nil, 0)
        let payload: MD5Context
        let block: MD5Context
        let buffer = StreamBuffer()
        var failure: FileSystemError?
        /// Closed or given up: nothing more is written.
        var done = false
        /// Whole to its last member (named or not): kept, whatever happens next.
        var whole = false
    }

    /// Blocks of deflate's stored form, each a 5-byte head and up to 65,535 bytes, four at a time.
    private final class StreamBuffer {
        static let blockBytes = 65_535
        static let blocks = 4
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: blocks * (blockBytes + 5), alignment: 16)
        deinit { bytes.deallocate() }
    }

    static let placeholderDigest = "sha1:" + String(repeating: "A", count: 32)

    /// Begins the stream of `record` (a 200 response whose body, `length` bytes, is being written
    /// at `offset` of `source`, a descriptor the stream closes); nil when its header would not fit
    /// the first stored block.
    init?(archive: WARCArchive, record: WARCRecord, date: timespec, length: Int64, source: Int32, offset: Int64) {
        var withPlaceholders = record
        withPlaceholders.fields += [("WARC-Payload-Digest", Self.placeholderDigest), ("WARC-Block-Digest", Self.placeholderDigest)]
        let header = withPlaceholders.header(date: WARCRecord.date(date), bodyLength: length)
        guard header.count <= StreamBuffer.blockBytes, let payload = try? MD5Context(.sha1), let block = try? MD5Context(.sha1) else {
            Glibc.close(source)
            return nil
        }
        self.length = length
        self.archive = archive
        state = Mutex(State(source: source, sourceOffset: offset, header: header, head: record.head, payload: payload, block: block))
        archive.streams.enter()
        queue.async { [self] in
            state.withLock { state in
                do throws(FileSystemError) {
                    try begin(&state)
                } catch {
                    state.failure = error
                }
            }
        }
    }

    deinit {
        state.withLock { state in
            Glibc.close(state.source)
            giveUp(&state, removing: !state.whole)
        }
    }

    /// The transfer's file holds the body's first `flushed` bytes: they are archived, in turn.
    func advance(to flushed: Int64) {
        queue.async { [self] in
            state.withLock { state in pump(&state, to: min(flushed, length)) }
        }
    }

    /// Archives what is left of the body, once its transfer has ended, and returns the record's
    /// digests; throws when the body could not be archived, or is not the `crc` it arrived as.
    func finish(crc: UInt32) throws(FileSystemError) -> (payload: String, block: String) {
        let result: Result<(payload: String, block: String), FileSystemError> = queue.sync {
            state.withLock { state in
                pump(&state, to: length)
                if let failure = state.failure { return .failure(failure) }
                guard state.streamed == length, UInt32(truncatingIfNeeded: state.bodyCRC) == crc else {
                    return .failure(FileSystemError(path: archive.directory.path(of: state.name + ".open"), problem: .changedMeanwhile))
                }
                do throws(DigestError) {
                    return .success((WARCRecord.digestLabel(sha1: try state.payload.finalize()), WARCRecord.digestLabel(sha1: try state.block.finalize())))
                } catch {
                    return .failure(FileSystemError(path: archive.directory.path(of: state.name + ".open"), problem: .system(EIO)))
                }
            }
        }
        return try result.get()
    }

    /// Writes `record` (this stream's, with its digests) over the placeholders, ends its member
    /// and closes the file: synced, named, its index beside it.
    func close(_ record: WARCRecord, date: String) throws(FileSystemError) {
        let result: Result<Void, FileSystemError> = queue.sync {
            state.withLock { state in Result { () throws(FileSystemError) in try end(record, date: date, &state) } }
        }
        try result.get()
    }

    /// Gives the stream up: its file goes.
    func discard() {
        abandoned.store(true, ordering: .relaxed)
        queue.async { [self] in state.withLock { giveUp(&$0, removing: !$0.whole) } }
    }

    /// Whether the stream's file ends with its whole record (named or not).
    var isWhole: Bool { state.withLock { $0.whole } }

    /// The body as the transfer's file holds it, for the archive to read back instead (the
    /// stream failed): a descriptor of its own; nil if none can be had.
    func bodyFile(crc: UInt32) -> BodyFile? {
        let (source, offset) = state.withLock { ($0.source, $0.sourceOffset) }
        let fd = fcntl(source, F_DUPFD_CLOEXEC, 0)
        return fd < 0 ? nil : BodyFile(fd: fd, offset: offset, length: length, crc: crc)
    }

    // MARK: - On the queue

    private func begin(_ state: inout State) throws(FileSystemError) {
        (state.fd, state.name) = try archive.createFile()
        let info = archive.warcinfo(named: state.name)
        var first = Self.storedMember(of: info.header(date: WARCRecord.date(WARCRecord.now())) + info.head + Array("\r\n\r\n".utf8))
        state.memberStart = Int64(first.count)
        state.headerOffset = state.memberStart + 10 + 5
        first += Self.gzipHeader + Self.storedBlock(state.header) + Self.storedBlocks(of: state.head)
        try Directory.writeAll(first, to: state.fd, at: 0, path: archive.directory.path(of: state.name + ".open"))
        state.end = Int64(first.count)
        do throws(DigestError) {
            try state.block.update(state.head)
        } catch {
            throw FileSystemError(path: archive.directory.path(of: state.name + ".open"), problem: .system(EIO))
        }
    }

    /// Reads the body from its file up to `target`, digests it and writes it as stored blocks.
    private func pump(_ state: inout State, to target: Int64) {
        guard state.failure == nil, !state.done, state.fd >= 0, !abandoned.load(ordering: .relaxed), !archive.hasFailed else { return }
        let buffer = state.buffer.bytes
        let path = archive.directory.path(of: state.name + ".open")
        while state.streamed < target {
            var filled = 0
            var taken: Int64 = 0
            for _ in 0..<StreamBuffer.blocks where state.streamed + taken < target {
                let want = Int(min(Int64(StreamBuffer.blockBytes), target - state.streamed - taken))
                let data = buffer.baseAddress! + filled + 5
                do throws(FileSystemError) {
                    let read = try Directory.readAll(
                        into: UnsafeMutableRawBufferPointer(start: data, count: want), from: state.source,
                        at: state.sourceOffset + state.streamed + taken, path: path)
                    // The transfer's file is shorter than what its sink wrote out: cut since.
                    guard read == want else { throw FileSystemError(path: path, problem: .changedMeanwhile) }
                } catch {
                    state.failure = error
                    return
                }
                Self.storeBlockHead(length: want, final: false, at: buffer.baseAddress! + filled)
                let bytes = UnsafeRawBufferPointer(start: data, count: want)
                do throws(DigestError) {
                    try state.payload.update(bytes)
                    try state.block.update(bytes)
                } catch {
                    state.failure = FileSystemError(path: path, problem: .system(EIO))
                    return
                }
                state.bodyCRC = crc32(state.bodyCRC, data.assumingMemoryBound(to: Bytef.self), uInt(want))
                filled += want + 5
                taken += Int64(want)
            }
            var written = 0
            do throws(FileSystemError) {
                try Directory.writeAll(UnsafeRawBufferPointer(rebasing: buffer[0..<filled]), to: state.fd, at: state.end, path: path, written: &written)
            } catch {
                state.failure = error
                return
            }
            _ = mirror_start_writeback(state.fd, off_t(state.end), off_t(filled))
            state.end += Int64(filled)
            state.streamed += taken
        }
    }

    private func end(_ record: WARCRecord, date: String, _ state: inout State) throws(FileSystemError) {
        let path = archive.directory.path(of: state.name + ".open")
        let header = record.header(date: date)
        guard !state.done, state.failure == nil, state.streamed == length, header.count == state.header.count else {
            throw state.failure ?? FileSystemError(path: path, problem: .changedMeanwhile)
        }
        let tail = Array("\r\n\r\n".utf8)
        // The member's CRC-32: the header as it now reads, then the head, the body and the tail.
        var crc = crc32(0, header, uInt(header.count))
        crc = crc32_combine(crc, crc32(0, state.head, uInt(state.head.count)), off_t(state.head.count))
        crc = crc32_combine(crc, state.bodyCRC, off_t(length))
        crc = crc32_combine(crc, crc32(0, tail, uInt(tail.count)), off_t(tail.count))
        let size = UInt32(truncatingIfNeeded: Int64(header.count + state.head.count + tail.count) + length)
        var last = [UInt8](repeating: 0, count: 5)
        last.withUnsafeMutableBytes { Self.storeBlockHead(length: tail.count, final: true, at: $0.baseAddress!) }
        last += tail + Self.littleEndian(UInt32(truncatingIfNeeded: crc)) + Self.littleEndian(size)
        try Directory.writeAll(header, to: state.fd, at: state.headerOffset, path: path)
        try Directory.writeAll(last, to: state.fd, at: state.end, path: path)
        state.end += Int64(last.count)
        // From here the file ends with a whole record: one that cannot be synced or named stays
        // `.open`, for the next run to close, as the archive's own file does.
        state.whole = true
        guard fsync(state.fd) == 0 else { throw FileSystemError.last(path: path) }
        try WARCArchive.giveName(state.name, in: archive.directory)
        let index = CDXJIndex(spillingInto: nil)
        index.add(WARCArchive.indexed(record, date: date), offset: state.memberStart, length: state.end - state.memberStart, file: state.name)
        giveUp(&state, removing: false)
        try archive.directory.replaceContents(of: WARCArchive.indexName(of: state.name), writing: index.write)
    }

    /// Lets the file go, removing it when `removing` (its lock goes with its descriptor), and
    /// tells the archive the stream is settled.
    private func giveUp(_ state: inout State, removing: Bool) {
        if state.fd >= 0 {
            if removing { archive.directory.remove(state.name + ".open") }
            Glibc.close(state.fd)
            state.fd = -1
        }
        // `done` is set here alone: the archive is told once.
        if !state.done { archive.streams.leave() }
        state.done = true
    }

    // MARK: - gzip's stored form (RFC 1951 3.2.4, RFC 1952)

    /// A gzip member's header: deflate, no name, no time, from Unix.
    private static let gzipHeader: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3]

    /// A whole member holding `bytes` in stored blocks.
    static func storedMember(of bytes: [UInt8]) -> [UInt8] {
        var member = gzipHeader + storedBlocks(of: bytes)
        member += [1, 0, 0, 0xFF, 0xFF]  // the last block: empty
        member += littleEndian(UInt32(truncatingIfNeeded: crc32(0, bytes, uInt(bytes.count))))
        member += littleEndian(UInt32(truncatingIfNeeded: bytes.count))
        return member
    }

    /// `bytes` as stored blocks, none the last.
    private static func storedBlocks(of bytes: [UInt8]) -> [UInt8] {
        var blocks: [UInt8] = []
        var start = 0
        while start < bytes.count {
            let end = min(start + StreamBuffer.blockBytes, bytes.count)
            blocks += storedBlock(Array(bytes[start..<end]))
            start = end
        }
        return blocks
    }

    private static func storedBlock(_ bytes: [UInt8]) -> [UInt8] {
        var head = [UInt8](repeating: 0, count: 5)
        head.withUnsafeMutableBytes { storeBlockHead(length: bytes.count, final: false, at: $0.baseAddress!) }
        return head + bytes
    }

    /// A stored block's head, begun on a byte boundary: BFINAL and BTYPE 00, then LEN and NLEN.
    private static func storeBlockHead(length: Int, final: Bool, at pointer: UnsafeMutableRawPointer) {
        let length = UInt16(length)
        pointer.storeBytes(of: final ? 1 : 0, as: UInt8.self)
        pointer.storeBytes(of: UInt8(length & 0xFF), toByteOffset: 1, as: UInt8.self)
        pointer.storeBytes(of: UInt8(length >> 8), toByteOffset: 2, as: UInt8.self)
        pointer.storeBytes(of: UInt8(~length & 0xFF), toByteOffset: 3, as: UInt8.self)
        pointer.storeBytes(of: UInt8(~length >> 8), toByteOffset: 4, as: UInt8.self)
    }

    private static func littleEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}
