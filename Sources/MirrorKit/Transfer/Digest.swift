import COpenSSL
import Foundation

/// MD5 through OpenSSL's libcrypto (already linked by libcurl): for partial file names and for
/// checking files against Imgur's MD5 ETags.
enum Digest {
    static func md5Hex(_ bytes: [UInt8]) -> String {
        let context = MD5Context()
        bytes.withUnsafeBytes { context.update($0) }
        return context.finalizeHex()
    }

    /// The MD5 of a file's contents; nil if it cannot be read.
    static func md5Hex(ofFile path: String) -> String? {
        let context = MD5Context()
        guard context.update(fromFile: path, length: nil) else { return nil }
        return context.finalizeHex()
    }

    /// The MD5 a quoted 32-hex ETag states (S3 and Imgur's CDN use them); nil for any other form.
    static func md5(inETag etag: String) -> String? {
        let inner = etag.dropFirst().dropLast()
        guard etag.hasPrefix("\""), etag.hasSuffix("\""), inner.count == 32,
              inner.allSatisfy({ $0.isHexDigit })
        else { return nil }
        return inner.lowercased()
    }
}

/// A running MD5. Used by one thread at a time (the engine thread, or a caller).
final class MD5Context {
    private let context: OpaquePointer

    init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_md5(), nil)
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }

    /// Adds the first `length` bytes of a file (all of it when nil), read in 1 MiB blocks; false if
    /// the file cannot be read or is shorter.
    func update(fromFile path: String, length: Int64?) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var remaining = length ?? Int64.max
        while remaining > 0 {
            let count = read(fd, buffer.baseAddress, Int(min(Int64(buffer.count), remaining)))
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return false }
            if count == 0 { return length == nil }
            update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            remaining -= Int64(count)
        }
        return true
    }

    func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return Self.hex(digest.prefix(Int(length)))
    }

    /// Lower-case hex, without `String(format:)`: a digest is made for every partial's name, and
    /// the formatter costs more than the hashing.
    static func hex(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
