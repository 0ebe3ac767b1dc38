import FoundationEssentials

/// The Imgur Client-ID, read from a file so it stays out of shell history and crontabs.
package enum ClientIDFile {
    package static let defaultPath = "~/.config/mirror/client-id"

    package static func read(_ path: String) throws(MirrorError) -> String {
        let expanded = HomeDirectory.expandingTilde(in: path)
        guard let data = FileManager.default.contents(atPath: expanded) else {
            let exists = FileManager.default.fileExists(atPath: expanded)
            throw .clientIDFile(path: expanded, problem: exists ? "cannot be read" : "does not exist")
        }
        let id = String(decoding: data, as: UTF8.self).trimming(.spacesAndNewlines)
        guard !id.isEmpty else { throw .clientIDFile(path: expanded, problem: "is empty") }
        // It goes into a request header: nothing but a plain token may pass.
        guard id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw .clientIDFile(path: expanded, problem: "does not hold a Client-ID (letters, digits, - _ . only)")
        }
        return id
    }
}
