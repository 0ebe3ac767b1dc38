import FoundationEssentials
import Glibc

/// The Imgur Client-ID, read from a file so it stays out of shell history and crontabs.
package enum ClientIDFile {
    package static let defaultPath = "~/.config/mirror/client-id"

    /// The most a client-id file may hold: an id is 15 characters.
    static let maximumBytes = 4 << 10

    package static func read(_ path: String) throws(MirrorError) -> String {
        let expanded = HomeDirectory.expandingTilde(in: path)
        let bytes: [UInt8]
        switch DescriptorReading.readSmallFile(atPath: expanded, limit: maximumBytes) {
        case .bytes(let read): bytes = read
        case .missing: throw .clientIDFile(path: expanded, problem: "does not exist")
        case .notARegularFile: throw .clientIDFile(path: expanded, problem: "is not a regular file")
        case .tooLarge: throw .clientIDFile(path: expanded, problem: "is larger than 4 KiB; a Client-ID is one short line")
        case .failed(let code): throw .clientIDFile(path: expanded, problem: "cannot be read: \(String(cString: strerror(code)))")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.trimming(.spacesAndNewlines).split(whereSeparator: \.isNewline).count <= 1 else {
            throw .clientIDFile(path: expanded, problem: "holds more than one line; a Client-ID is one line")
        }
        let id = text.trimming(.spacesAndNewlines)
        guard !id.isEmpty else { throw .clientIDFile(path: expanded, problem: "is empty") }
        // It goes into a request header: nothing but a plain token may pass.
        guard id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw .clientIDFile(path: expanded, problem: "does not hold a Client-ID (letters, digits, - _ . only)")
        }
        return id
    }
}
