import Glibc

/// Reads a descriptor to its end, at most so many bytes: files, standard input, a FIFO.
package enum DescriptorReading {
    package enum Outcome: Equatable {
        case bytes([UInt8])
        /// More than the limit: nothing read is kept.
        case tooLarge
        /// A read failed with this errno.
        case failed(Int32)
        /// The caller stopped it (see ``readToEnd(_:limit:pollInterval:stopped:)``).
        case stopped
    }

    /// The bytes of `fd` up to its end, read a chunk at a time (an interrupted read is tried again).
    /// `stopped` is asked between reads and while nothing comes (a pipe or FIFO whose writer is
    /// silent, a terminal), at least every `pollInterval`: when it says so, the read ends with
    /// ``Outcome/stopped``.
    package static func readToEnd(
        _ fd: Int32, limit: Int, pollInterval: Duration = .milliseconds(100), stopped: () -> Bool = { false }
    ) -> Outcome {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(limit, (1 << 16) - 1) + 1)
        let timeout = Int32(max(pollInterval.inSeconds * 1000, 1))
        while true {
            if stopped() { return .stopped }
            // Wait for bytes (or the end) a while at a time, so that a stop is heard; a regular
            // file is always ready.
            var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waiting, 1, timeout)
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { return .failed(errno) }
            if ready == 0 { continue }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard count >= 0 else { return .failed(errno) }
            if count == 0 { return .bytes(bytes) }
            bytes += chunk[..<count]
            if bytes.count > limit { return .tooLarge }
        }
    }
}

extension DescriptorReading {
    /// A small local file (the client-id file, the config file, netrc) read whole: a regular
    /// file of at most `limit` bytes. A FIFO or device is refused rather than waited on.
    package enum SmallFile: Equatable {
        case bytes([UInt8])
        case missing
        case notARegularFile
        case tooLarge
        case failed(Int32)
    }

    package static func readSmallFile(atPath path: String, limit: Int) -> SmallFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return errno == ENOENT ? .missing : .failed(errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failed(errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .notARegularFile }
        guard info.st_size <= limit else { return .tooLarge }
        switch readToEnd(fd, limit: limit) {
        case .bytes(let bytes): return .bytes(bytes)
        case .tooLarge: return .tooLarge
        case .failed(let code): return .failed(code)
        case .stopped: return .failed(EINTR)
        }
    }
}
