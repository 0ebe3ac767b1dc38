import COpenSSL
import Foundation

/// Where partial downloads live between attempts and between runs: one `.part` file per URL,
/// named by the URL's MD5 so any URL maps to a safe, fixed-length file name.
public struct PartialStore: Sendable {
    public let directory: URL

    public init(directory: URL) throws(MirrorError) {
        self.directory = directory
        try MirrorDirectory.createDirectory(directory)
    }

    /// The `.part` file for `url`.
    public func partPath(for url: String) -> String {
        directory.appendingPathComponent(Digest.md5Hex(Array(url.utf8)) + ".part").path
    }

    /// Bytes held for `url` (0 when nothing is).
    public func length(for url: String) -> Int64 {
        var info = stat()
        return stat(partPath(for: url), &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Deletes what is held for `url`.
    public func remove(_ url: String) {
        unlink(partPath(for: url))
    }
}

/// MD5 through OpenSSL's libcrypto (already linked by libcurl): for partial file names and for
/// checking files against Imgur's MD5 ETags.
enum Digest {
    static func md5Hex(_ bytes: [UInt8]) -> String {
        let context = MD5Context()
        bytes.withUnsafeBytes { context.update($0) }
        return context.finalizeHex()
    }

    /// The MD5 of a file's contents, read in 1 MiB blocks; nil if it cannot be read.
    static func md5Hex(ofFile path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let context = MD5Context()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer.baseAddress, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            context.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        return context.finalizeHex()
    }
}

struct MD5Context: ~Copyable {
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

    consuming func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return digest.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
    }
}
