import Glibc

/// Reads a descriptor to its end, at most so many bytes: files, standard input, a FIFO.
package enum DescriptorReading {
    package enum Outcome: Equatable {
        case bytes([UInt8])
        /// More than the limit: nothing read is kept.
        case tooLarge
        /// A read failed with this errno.
        case failed(Int32)
    }

    /// The bytes of `fd` up to its end, read a chunk at a time (an interrupted read is tried again).
    package static func readToEnd(_ fd: Int32, limit: Int) -> Outcome {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(limit, (1 << 16) - 1) + 1)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return .failed(errno) }
            if count == 0 { return .bytes(bytes) }
            bytes += chunk[..<count]
            if bytes.count > limit { return .tooLarge }
        }
    }
}
