import COpenSSL
import FoundationEssentials
import Glibc

/// MD5 through OpenSSL's libcrypto (already linked by libcurl): for partial file names and for
/// checking files against Imgur's MD5 ETags.
enum Digest {
    static func md5Hex(_ bytes: [UInt8]) throws(DigestError) -> String {
        let context = try MD5Context()
        try context.update(bytes)
        return try context.finalizeHex()
    }

    /// The MD5 of a file's contents; nil if it cannot be read.
    static func md5Hex(ofFile fd: Int32) throws(DigestError) -> String? {
        let context = try MD5Context()
        guard try context.update(fromFile: fd, length: nil) else { return nil }
        return try context.finalizeHex()
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

/// OpenSSL would not compute an MD5 (a FIPS-only configuration refuses it, for one): an error,
/// never an empty digest that every input would share.
struct DigestError: Error, Sendable, Equatable, CustomStringConvertible {
    var step: String
    var detail: String

    init(step: String) {
        self.step = step
        // The newest error is the failed step's; older ones may be another library's (libcurl's
        // TLS shares this thread's queue), left unread.
        let code = ERR_peek_last_error()
        var text = [CChar](repeating: 0, count: 256)
        if code != 0 { ERR_error_string_n(code, &text, text.count) }
        detail = code == 0 ? "no reason given" : String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        ERR_clear_error()
    }

    var description: String { "OpenSSL cannot compute MD5 (\(step) failed: \(detail))" }
}

/// A running MD5 (or SHA-1 and SHA-256, for WARC records and WACZ packages). Used by one thread
/// at a time (the engine thread, or a caller).
final class MD5Context {
    enum Algorithm {
        case md5, sha1, sha256
    }

    private let context: OpaquePointer
    private let method: OpaquePointer?
    private let length: UInt32

    init(_ algorithm: Algorithm = .md5) throws(DigestError) {
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { throw DigestError(step: "EVP_MD_CTX_new") }
        self.context = context
        let (method, length): (OpaquePointer?, UInt32) = switch algorithm {
        case .md5: (EVP_md5(), 16)
        case .sha1: (EVP_sha1(), 20)
        case .sha256: (EVP_sha256(), 32)
        }
        self.length = length
        self.method = method
        guard EVP_DigestInit_ex(context, method, nil) == 1 else { throw DigestError(step: "EVP_DigestInit_ex") }
    }

    /// Starts over, as new: a context reused for digest after digest saves an allocation each.
    func restart() throws(DigestError) {
        guard EVP_DigestInit_ex(context, method, nil) == 1 else { throw DigestError(step: "EVP_DigestInit_ex") }
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    func update(_ bytes: UnsafeRawBufferPointer) throws(DigestError) {
        guard EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1 else {
            throw DigestError(step: "EVP_DigestUpdate")
        }
    }

    func update(_ bytes: [UInt8]) throws(DigestError) {
        let result: Result<Void, DigestError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(DigestError) in try update(buffer) }
        }
        try result.get()
    }

    /// Adds the first `length` bytes of the open file `fd` (all of it when nil), read from its
    /// start in 1 MiB blocks; false if the file cannot be read or is shorter.
    func update(fromFile fd: Int32, length: Int64?) throws(DigestError) -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var remaining = length ?? Int64.max
        var offset: Int64 = 0
        while remaining > 0 {
            let want = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(min(Int64(buffer.count), remaining))])
            guard let count = try? Directory.readAll(into: want, from: fd, at: offset, path: "") else { return false }
            if count == 0 { return length == nil }
            try update(UnsafeRawBufferPointer(rebasing: want[0..<count]))
            remaining -= Int64(count)
            offset += Int64(count)
        }
        return true
    }

    func finalizeHex() throws(DigestError) -> String {
        Self.hex(try finalize())
    }

    /// The digest of `bytes`.
    static func hash(of bytes: [UInt8], _ algorithm: Algorithm) throws(DigestError) -> [UInt8] {
        let context = try MD5Context(algorithm)
        try context.update(bytes)
        return try context.finalize()
    }

    func finalize() throws(DigestError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1, length == self.length else {
            throw DigestError(step: "EVP_DigestFinal_ex")
        }
        return Array(digest.prefix(Int(length)))
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
