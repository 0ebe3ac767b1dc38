import CMirrorSystem
import FoundationEssentials
import Glibc

/// Writes a response body into a file at a given offset through one large buffer.
///
/// libcurl hands over at most 16 KiB per write callback; a `write(2)` per chunk costs more than the
/// network on loopback, so chunks collect here and reach the file in writes of `capacity` bytes.
/// `flushedLength` counts only bytes the kernel has taken, so a crash never leaves a hole that a
/// later resume would take for data.
///
/// The buffer is sized to the body when its length is known, so a small file reaches the disk in
/// one write, at the end: nothing of it is on disk before it is complete.
final class FileSink {
    let location: FileLocation
    private let descriptor: Int32
    private let buffer: UnsafeMutableRawBufferPointer
    private var buffered = 0
    /// The file offset the next flushed byte goes to.
    private(set) var flushedLength: Int64
    /// Where the writeback this sink started ends (see ``flush(isLast:)``).
    private var writebackStartedTo: Int64
    /// A running MD5 of the file from byte 0, when asked for.
    private var digest: MD5Context?
    /// Runs once, before the first bytes reach the file while more of the body may follow (what
    /// a resume needs is recorded then): a body written whole in its last write never needs it.
    var beforeFirstPartialWrite: (() -> Void)?

    /// A body up to this size reaches the file in one write, when it is whole.
    static let largestBuffer = 1 << 20

    /// The buffer for a body of `remaining` bytes (unknown: nil): never more than `largest`.
    static func capacity(forRemaining remaining: Int64?, largest: Int = largestBuffer) -> Int {
        guard let remaining else { return largest }
        return Int(min(max(remaining, 4096), Int64(largest)))
    }

    init(location: FileLocation, offset: Int64, capacity: Int = largestBuffer) throws(TransferError.Reason) {
        let folder: Directory
        var fd: Int32
        var info: stat
        do throws(FileSystemError) {
            folder = try location.folder()
            do {
                (fd, info) = try folder.openFileWithStatus(location.name, .write(create: true))
            } catch where offset == 0 && error.isSomeoneElses {
                // Another name shares these bytes (a mirrored file, linked by an older build), or
                // the name is a link or something else not ours: never write through it; start a
                // file of our own.
                folder.remove(location.name)
                (fd, info) = try folder.openFileWithStatus(location.name, .write(create: true, exclusive: true))
            }
        } catch where error.isSomeoneElses {
            throw .rangeMismatch(requested: offset, received: "a partial that is not ours (\(error))")
        } catch {
            throw .fileWrite(error)
        }
        if Int64(info.st_size) < offset {
            // The partial shrank (or vanished) since the offset was taken: appending at `offset`
            // would leave a hole of zeros in the file.
            close(fd)
            throw .rangeMismatch(requested: offset, received: "a local partial of only \(info.st_size) bytes")
        }
        // Anything past the offset is not ours to keep: the request asked for bytes from `offset`
        // (a new file has nothing past it).
        guard Int64(info.st_size) == offset || ftruncate(fd, off_t(offset)) == 0 else {
            let code = errno
            close(fd)
            throw .fileWrite(FileSystemError(path: location.path, errno: code))
        }
        self.location = location
        descriptor = fd
        flushedLength = offset
        writebackStartedTo = offset
        buffer = .allocate(byteCount: capacity, alignment: 16)
    }

    /// A descriptor of the file of its own (-1 with errno where none can be had), for the WARC
    /// archive to read the body back from, whatever becomes of this sink or the file's name.
    func duplicateDescriptor() -> Int32 {
        fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
    }

    deinit {
        close(descriptor)
        buffer.deallocate()
    }

    /// Bytes held, flushed or not.
    var length: Int64 { flushedLength + Int64(buffered) }

    func append(_ bytes: UnsafeRawBufferPointer) throws(TransferError.Reason) {
        var remaining = bytes
        while !remaining.isEmpty {
            if buffered == buffer.count { try flush(isLast: false) }
            let count = min(remaining.count, buffer.count - buffered)
            UnsafeMutableRawBufferPointer(rebasing: buffer[buffered..<(buffered + count)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: remaining[0..<count]))
            buffered += count
            remaining = UnsafeRawBufferPointer(rebasing: remaining[count...])
        }
    }

    /// Keeps an MD5 of the whole file from now on, starting with the bytes already on disk.
    func hashContents() throws(TransferError.Reason) {
        let context: MD5Context
        let whole: Bool
        do throws(DigestError) {
            context = try MD5Context()
            whole = flushedLength == 0 ? true : try context.update(fromFile: descriptor, length: flushedLength)
        } catch {
            throw .digest(error.description)
        }
        guard whole else { throw .fileWrite(FileSystemError(path: location.path, errno: EIO)) }
        digest = context
    }

    /// The MD5 of everything written, once flushed; nil unless ``hashContents()`` was called.
    func finishDigest() throws(TransferError.Reason) -> String? {
        defer { digest = nil }
        do throws(DigestError) {
            return try digest?.finalizeHex()
        } catch {
            throw .digest(error.description)
        }
    }

    /// Writes out what is buffered. `isLast`: the body is complete, and these are its last bytes.
    func flush(isLast: Bool) throws(TransferError.Reason) {
        if buffered > 0, let first = beforeFirstPartialWrite {
            beforeFirstPartialWrite = nil
            if !isLast { first() }
        }
        do throws(DigestError) {
            try digest?.update(UnsafeRawBufferPointer(rebasing: buffer[0..<buffered]))
        } catch {
            throw .digest(error.description)
        }
        var written = 0
        do throws(FileSystemError) {
            try Directory.writeAll(
                UnsafeRawBufferPointer(rebasing: buffer[0..<buffered]), to: descriptor, at: flushedLength,
                path: location.path, written: &written)
        } catch {
            // Keep what did reach the file countable; drop what did not.
            flushedLength += Int64(written)
            buffered = 0
            throw .fileWrite(error)
        }
        flushedLength += Int64(buffered)
        buffered = 0
        startWriteback(isLast: isLast)
    }

    /// The data on its way to disk while the rest arrives, not all of it at the fsync that comes
    /// before the file gets its name: that fsync then waits for the tail only.
    ///
    /// Only what lies ``writebackLag`` behind the end while more may follow: the page cache holds
    /// a file in folios of up to megabytes, and one whose writeback has begun, which the next
    /// write extends, cost that write many times its copy. Started at the end of every 1 MiB
    /// write, a 1 GiB body took 1.4 to 4.5 s of system time on the benchmarks' machine against
    /// 0.25 s lagging 8 MiB behind (`benchmarks/`, BENCHMARKS.md, 2026-12-07). The last bytes go
    /// at once: the commit's fsync comes later, from another thread, and nothing follows them.
    /// (For a small file, one write and then this, the early start costs and saves nothing
    /// measurable either way: BENCHMARKS.md, "what bounds the small run".)
    private func startWriteback(isLast: Bool) {
        let end = isLast ? flushedLength : flushedLength - Self.writebackLag
        guard end - writebackStartedTo >= (isLast ? 1 : Self.writebackLag) else { return }
        mirror_start_writeback(descriptor, off_t(writebackStartedTo), off_t(end - writebackStartedTo))
        writebackStartedTo = end
    }

    /// How far behind the end of the file its early writeback stays while more may follow.
    static let writebackLag: Int64 = 8 << 20
}
