import CMirrorSystem
import Glibc

/// Bytes set aside in a file of their own, unnamed in a directory (gone with the process, killed
/// or not), appended a buffer at a time: text too large to hold, read back once it is written.
final class Spool {
    let descriptor: Int32
    /// The directory's path, for errors.
    let path: String
    /// Bytes in the file; those appended since the last ``flush()`` are not counted yet.
    private(set) var length: Int64 = 0
    private var buffer: [UInt8] = []
    private static let bufferSize = 256 << 10

    init(in directory: Directory) throws(FileSystemError) {
        descriptor = mirror_open_unnamed(directory.descriptor)
        guard descriptor >= 0 else { throw FileSystemError.last(path: directory.path) }
        path = directory.path
        buffer.reserveCapacity(Self.bufferSize + (16 << 10))
    }

    deinit {
        close(descriptor)
    }

    func append(_ bytes: some Collection<UInt8>) throws(FileSystemError) {
        buffer += bytes
        if buffer.count >= Self.bufferSize { try flush() }
    }

    func append(_ byte: UInt8) throws(FileSystemError) {
        buffer.append(byte)
        if buffer.count >= Self.bufferSize { try flush() }
    }

    /// Forgets what is buffered and not written: what a failed ``flush()`` left, which no later
    /// write may carry out after other bytes.
    func discardBuffered() {
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes out what is buffered: ``length`` is then the whole.
    func flush() throws(FileSystemError) {
        guard !buffer.isEmpty else { return }
        try Directory.writeAll(buffer, to: descriptor, at: length, path: path)
        length += Int64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Reads the lines of a range of a file, a chunk at a time; each without its newline. A last
/// line without one is a line too.
struct LineReader {
    let fd: Int32
    private var offset: Int64
    private let end: Int64
    private let path: String
    private let chunk: Int
    /// A line longer than this fails the read (a file of no newlines is not held whole).
    private let longestLine: Int?
    private var buffer: [UInt8] = []
    private var position = 0
    /// Where the search for the next newline goes on: the bytes before it hold none.
    private var searched = 0

    init(fd: Int32, range: Range<Int64>, path: String, chunk: Int = 64 << 10, longestLine: Int? = nil) {
        self.fd = fd
        offset = range.lowerBound
        end = range.upperBound
        self.path = path
        self.chunk = chunk
        self.longestLine = longestLine
    }

    mutating func next() throws(FileSystemError) -> [UInt8]? {
        while true {
            if let newline = buffer[max(position, searched)...].firstIndex(of: 0x0A) {
                defer { position = newline + 1 }
                return Array(buffer[position..<newline])
            }
            searched = buffer.count
            if let longestLine, buffer.count - position > longestLine {
                throw FileSystemError(path: path, problem: .lineTooLong(limit: longestLine))
            }
            guard offset < end else {
                guard position < buffer.count else { return nil }
                defer { position = buffer.count }
                return Array(buffer[position...])
            }
            buffer.removeFirst(position)
            searched -= position
            position = 0
            let want = Int(min(Int64(chunk), end - offset))
            let old = buffer.count
            buffer += repeatElement(0, count: want)
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + old, want, off_t(offset)) }
            if count < 0 && errno == EINTR {
                buffer.removeLast(want)
                continue
            }
            guard count > 0 else {
                throw count < 0 ? FileSystemError.last(path: path) : FileSystemError(path: path, problem: .changedMeanwhile)
            }
            buffer.removeLast(want - count)
            offset += Int64(count)
        }
    }
}
