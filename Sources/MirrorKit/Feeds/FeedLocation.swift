import FoundationEssentials
import Glibc

/// Where a feed is read from: a URL, a local file, or standard input.
package enum FeedLocation: Sendable, Equatable, CustomStringConvertible {
    case url(String)
    case file(String)
    case standardInput

    /// `-` is standard input, an http(s) URL is fetched, anything else is a file's path.
    package init(argument: String) {
        if argument == "-" {
            self = .standardInput
        } else if HTTPURL.isValid(argument) {
            self = .url(argument)
        } else {
            self = .file(argument)
        }
    }

    /// The URL, the path, or `standard input`: for messages and the state database.
    package var description: String {
        switch self {
        case .url(let url): url
        case .file(let path): path
        case .standardInput: "standard input"
        }
    }

    /// The bytes of a feed in a file or on standard input: at most `limit`, else an error.
    func readLocally(limit: Int) async throws(FeedError) -> [UInt8] {
        let label = description
        let path: String?
        switch self {
        case .url: preconditionFailure("a URL is fetched, not read")
        case .file(let file): path = file
        case .standardInput: path = nil
        }
        return try await BlockingIO.run { () throws(FeedError) -> [UInt8] in
            let fd = path.map { open($0, O_RDONLY | O_CLOEXEC) } ?? STDIN_FILENO
            guard fd >= 0 else {
                throw FeedError(url: label, problem: "cannot be read: \(String(cString: strerror(errno)))", isFetchFailure: true)
            }
            defer { if path != nil { close(fd) } }
            switch DescriptorReading.readToEnd(fd, limit: limit) {
            case .bytes(let bytes):
                return bytes
            case .tooLarge:
                throw FeedError(url: label, problem: "is larger than \(MirrorSummary.formatBytes(Int64(limit))); no feed is that large")
            case .failed(let code):
                throw FeedError(url: label, problem: "cannot be read: \(String(cString: strerror(code)))", isFetchFailure: true)
            }
        }
    }
}
