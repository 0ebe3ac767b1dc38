import COpenSSL
import NIOCore

/// The bytes the fixture server serves for a media path: the same for the same path and version,
/// different for a different version, and incompressible (so sizes on the wire are real).
enum DeterministicContent {
    static func make(path: String, version: Int, size: Int) -> ByteBuffer {
        var state = seed(path) &+ UInt64(version) &* 0x9E37_79B9_7F4A_7C15
        var buffer = ByteBufferAllocator().buffer(capacity: size)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
            let words = size / 8
            let wordPointer = raw.baseAddress!.bindMemory(to: UInt64.self, capacity: words)
            for index in 0..<words {
                wordPointer[index] = next(&state)
            }
            var tail = next(&state)
            for index in (words * 8)..<size {
                raw[index] = UInt8(truncatingIfNeeded: tail)
                tail >>= 8
            }
            return size
        }
        return buffer
    }

    /// A quoted lowercase MD5 of the bytes, the form of Imgur's CDN ETags.
    static func md5ETag(_ buffer: ByteBuffer) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        buffer.withUnsafeReadableBytes { raw in
            _ = EVP_Digest(raw.baseAddress, raw.count, &digest, &length, EVP_md5(), nil)
        }
        return "\"" + digest.map { hex($0) }.joined() + "\""
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }

    /// FNV-1a of the path: a stable seed, unlike `Hasher`, which changes every run.
    static func seed(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3
        }
        return hash
    }

    /// splitmix64.
    private static func next(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
