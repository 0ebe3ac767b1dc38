import CMirrorSystem
import CZlib
import Glibc

/// Writes gzip members at the end of a file as their bytes come: a WARC record each, so that a
/// reader can start at any record, and a file cut by a kill is cut at a member's end
/// (``GzipMembers/wholeMembers(of:headBytes:each:)``) by the next run. One writer serves every member
/// of an archive, its zlib state reset between them.
///
/// Output goes through a 256 KiB buffer, written when full and at ``flush()``: the records of a
/// batch reach the file in one write, not several writes per record.
final class GzipMemberWriter {
    private let stream: UnsafeMutablePointer<z_stream>
    private let output: UnsafeMutableRawBufferPointer
    private var buffered = 0
    private var fd: Int32 = -1
    private var path = ""
    /// Where the buffer's first byte goes in the file: everything before it is written.
    private var bufferStart: Int64 = 0
    /// Where the member being written starts.
    private var memberStart: Int64 = 0
    /// A write failed part way: what the file holds past ``bufferStart`` is not known.
    private(set) var damaged = false
    /// Where the written bytes whose writeback has not been asked for begin.
    private var writebackStart: Int64 = 0

    /// Where the next compressed bytes go: the file's end, once the buffer is written.
    var end: Int64 { bufferStart + Int64(buffered) }

    init() {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        output = .allocate(byteCount: 256 << 10, alignment: 16)
        // zlib fails this only without memory, which Swift's own allocations would hit first.
        precondition(mirror_deflate_init_gzip(stream, 6) == Z_OK, "zlib could not start a gzip stream")
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
        output.deallocate()
    }

    /// Writes from now on at `offset` of `fd`, a file just opened: what the buffer held for the
    /// file before (flushed by then, or given up) is dropped.
    func attach(to fd: Int32, at offset: Int64, path: String) {
        self.fd = fd
        self.path = path
        bufferStart = offset
        memberStart = offset
        writebackStart = offset
        buffered = 0
        damaged = false
    }

    /// Begins a member at the end. `compresses` false stores its bytes in deflate's stored
    /// blocks (still gzip, and read as any other): media does not compress, and trying would cost
    /// the run more than the archive saves.
    func begin(compresses: Bool) {
        memberStart = end
        deflateReset(stream)
        deflateParams(stream, compresses ? 6 : 0, Z_DEFAULT_STRATEGY)
    }

    func add(_ bytes: UnsafeRawBufferPointer) throws(FileSystemError) {
        guard !bytes.isEmpty else { return }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: bytes.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(bytes.count)
        try run(flush: Z_NO_FLUSH)
    }

    func add(_ bytes: [UInt8]) throws(FileSystemError) {
        let result: Result<Void, FileSystemError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(FileSystemError) in try add(buffer) }
        }
        try result.get()
    }

    /// The CRC-32 of what the member holds so far (gzip keeps it as it deflates).
    var crc: UInt32 { UInt32(truncatingIfNeeded: stream.pointee.adler) }

    /// Ends the member; the file ends with it once the buffer is written.
    func finish() throws(FileSystemError) {
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
        try run(flush: Z_FINISH)
    }

    /// Drops what was written of the member begun last (a record that failed part way), so that
    /// the file still ends with a whole one.
    func abandonMember() {
        guard !damaged else { return }
        if memberStart >= bufferStart {
            buffered = Int(memberStart - bufferStart)
        } else {
            buffered = 0
            bufferStart = memberStart
            writebackStart = min(writebackStart, memberStart)
            if ftruncate(fd, off_t(memberStart)) != 0 { damaged = true }
        }
    }

    /// Writes what the buffer holds and, past each megabyte, asks the kernel to start writing it
    /// back, so that the sync at close finds little left. A write that fails leaves the writer ``damaged``.
    func flush() throws(FileSystemError) {
        guard buffered > 0 else { return }
        // Nothing more goes to a file whose end is not known (and a full buffer is never emptied
        // by a silent return).
        guard !damaged else { throw FileSystemError(path: path, problem: .system(EIO)) }
        var written = 0
        do {
            try Directory.writeAll(UnsafeRawBufferPointer(rebasing: output[0..<buffered]), to: fd, at: bufferStart, path: path, written: &written)
        } catch {
            damaged = true
            throw error
        }
        bufferStart += Int64(buffered)
        buffered = 0
        // Writeback is asked for a megabyte at a time: asked at every batch (an exchange or two
        // when the archive keeps up), it cost a sixth of the archive's thread on small files.
        if bufferStart - writebackStart >= 1 << 20 {
            _ = mirror_start_writeback(fd, off_t(writebackStart), off_t(bufferStart - writebackStart))
            writebackStart = bufferStart
        }
    }

    private func run(flush: Int32) throws(FileSystemError) {
        while true {
            stream.pointee.next_out = (output.baseAddress! + buffered).assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(output.count - buffered)
            let result = deflate(stream, flush)
            buffered = output.count - Int(stream.pointee.avail_out)
            if flush == Z_FINISH {
                if result == Z_STREAM_END { return }
            } else if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 {
                return
            }
            guard result == Z_OK || result == Z_BUF_ERROR else { throw FileSystemError(path: path, problem: .system(EIO)) }
            if stream.pointee.avail_out == 0 { try self.flush() }
        }
    }
}

/// Reading a file of gzip members back.
enum GzipMembers {
    /// A whole member: where it lies in the file, and the first bytes it holds.
    struct Member {
        var offset: Int64
        var length: Int64
        var head: [UInt8]
    }

    /// Hands `each` the file's leading members that are whole, in order, each with up to
    /// `headBytes` of what it holds (a WARC record's header and an HTTP head), and returns their
    /// length: where a file a kill cut short is to be cut back to. Reads the file once, inflating
    /// into a scratch buffer; holds one member's head at a time.
    @discardableResult
    static func wholeMembers(of fd: Int32, headBytes: Int = 16 << 10, each: (Member) -> Void) -> Int64 {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer {
            inflateEnd(stream)
            stream.deallocate()
            input.deallocate()
            scratch.deallocate()
        }
        guard mirror_inflate_init_gzip(stream) == Z_OK else { return 0 }
        var whole: Int64 = 0
        var readOffset: Int64 = 0
        var head: [UInt8] = []
        while true {
            let count = pread(fd, input.baseAddress, input.count, off_t(readOffset))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return whole }
            let blockStart = readOffset
            readOffset += Int64(count)
            stream.pointee.next_in = input.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_in = uInt(count)
            while stream.pointee.avail_in > 0 {
                stream.pointee.next_out = scratch.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(scratch.count)
                let result = inflate(stream, Z_NO_FLUSH)
                let produced = scratch.count - Int(stream.pointee.avail_out)
                if head.count < headBytes && produced > 0 {
                    head += UnsafeRawBufferPointer(rebasing: scratch[0..<min(produced, headBytes - head.count)])
                }
                if result == Z_STREAM_END {
                    let end = blockStart + Int64(count) - Int64(stream.pointee.avail_in)
                    each(Member(offset: whole, length: end - whole, head: head))
                    whole = end
                    head = []
                    inflateReset(stream)
                } else if result != Z_OK && result != Z_BUF_ERROR {
                    return whole
                }
            }
        }
    }
}
