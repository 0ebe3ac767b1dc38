import COpenSSL
import FoundationEssentials
import Glibc

/// MD5 through OpenSSL's libcrypto (already linked by libcurl): for partial file names and for
/// checking files against Imgur's MD5 ETags.
enum Digest {
    static func md5Hex(_ bytes: [UInt8]) throws(DigestError) -> String {
        guard let hex = bytes.withUnsafeBytes({ md5Hex(of: $0, suffix: "") }) else { throw DigestError(step: "EVP_Digest") }
        return hex
    }

    /// The MD5 of `text`'s UTF-8, in hex, followed by `suffix`: a partial's name, made for every
    /// file more than once, in one call to OpenSSL and one Swift allocation (the string).
    static func md5Hex(of text: String, suffix: StaticString) throws(DigestError) -> String {
        var text = text
        guard let hex = text.withUTF8({ md5Hex(of: UnsafeRawBufferPointer($0), suffix: suffix) }) else {
            throw DigestError(step: "EVP_Digest")
        }
        return hex
    }

    /// The first 8 bytes of the MD5 of `text`'s UTF-8, big-endian: a URL's short identity, made
    /// for every file committed, with no allocation on Swift's side.
    static func md5Prefix(of text: String) throws(DigestError) -> UInt64 {
        var text = text
        let prefix = text.withUTF8 { utf8 in
            md5(of: UnsafeRawBufferPointer(utf8)) { digest in digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }
        }
        guard let prefix else { throw DigestError(step: "EVP_Digest") }
        return prefix
    }

    /// Nil when OpenSSL would not compute it; its error is left for ``DigestError`` to read.
    private static func md5Hex(of bytes: UnsafeRawBufferPointer, suffix: StaticString) -> String? {
        md5(of: bytes) { digest in
            suffix.withUTF8Buffer { suffixBytes in
                String(unsafeUninitializedCapacity: 32 + suffixBytes.count) { text in
                    MD5Context.writeHex(digest, into: text)
                    for (index, byte) in suffixBytes.enumerated() { text[32 + index] = byte }
                    return 32 + suffixBytes.count
                }
            }
        }
    }

    /// `body` of the MD5 of `bytes`, in a buffer on the stack, in one call to OpenSSL; nil when
    /// OpenSSL would not compute it.
    private static func md5<T>(of bytes: UnsafeRawBufferPointer, _ body: (UnsafeMutableBufferPointer<UInt8>) -> T) -> T? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { digest -> T? in
            var length: UInt32 = 0
            ERR_clear_error()
            // An empty buffer may have no address; OpenSSL reads no byte of it then.
            let input = bytes.baseAddress ?? UnsafeRawPointer(digest.baseAddress!)
            guard EVP_Digest(input, bytes.count, digest.baseAddress, &length, FetchedMD5.method, nil) == 1, length == 16 else {
                return nil
            }
            return body(digest)
        }
    }

    /// The MD5 of a file's contents; nil if it cannot be read.
    static func md5Hex(ofFile fd: Int32) throws(DigestError) -> String? {
        let context = try MD5Context()
        guard try context.update(fromFile: fd, length: nil) else { return nil }
        return try context.finalizeHex()
    }

    /// The MD5 a quoted 32-hex ETag states (S3 and Imgur's CDN use them); nil for any other form.
    static func md5(inETag etag: String) -> String? {
        // Read as bytes (every response's ETag is looked at several times); ASCII hex alone:
        // `Character.isHexDigit` also takes fullwidth digits.
        etag.withUTF8Bytes { bytes -> String? in
            guard bytes.count == 34, bytes[0] == UInt8(ascii: "\""), bytes[33] == UInt8(ascii: "\""),
                  bytes[1..<33].allSatisfy({ String.hexValue($0) != nil })
            else { return nil }
            return String(decoding: bytes[1..<33].lazy.map(\.asciiLowercased), as: UTF8.self)
        }
    }
}

/// MD5 as fetched from OpenSSL's provider once for the process. `EVP_md5()` names the algorithm
/// without an implementation: every digest begun with it fetches one again from the provider's
/// store (a name lookup under a lock), and a file's partial name is digested several times.
private enum FetchedMD5 {
    /// `@unchecked Sendable` is sound: an `EVP_MD` is immutable once fetched, and OpenSSL
    /// documents fetched algorithms as safe to use from several threads at once; this one is
    /// never freed, so no use outlives it.
    private struct Method: @unchecked Sendable {
        let pointer: OpaquePointer?
    }

    /// Nil when the provider has none (a FIPS-only configuration): `EVP_md5()` then, whose
    /// digests fail with OpenSSL's own error for ``DigestError`` to report.
    private static let fetched = Method(pointer: EVP_MD_fetch(nil, "MD5", nil))

    static var method: OpaquePointer? { fetched.pointer ?? EVP_md5() }
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
        case .md5: (FetchedMD5.method, 16)
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
        var length: UInt32 = 0
        let digest = [UInt8](unsafeUninitializedCapacity: Int(EVP_MAX_MD_SIZE)) { buffer, count in
            count = EVP_DigestFinal_ex(context, buffer.baseAddress, &length) == 1 ? Int(length) : 0
        }
        guard digest.count == Int(self.length) else { throw DigestError(step: "EVP_DigestFinal_ex") }
        return digest
    }

    /// Lower-case hex, without `String(format:)`: a digest is made for every partial's name, and
    /// the formatter costs more than the hashing.
    static func hex(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            writeHex(bytes, into: text)
            return bytes.count * 2
        }
    }

    /// Writes `bytes` in lower-case hex at the start of `text`, which holds twice as many.
    static func writeHex(_ bytes: some Collection<UInt8>, into text: UnsafeMutableBufferPointer<UInt8>) {
        var position = 0
        for byte in bytes {
            text[position] = hexDigit(byte >> 4)
            text[position + 1] = hexDigit(byte & 0x0F)
            position += 2
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
