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

    /// The URL (its userinfo, if any, shown as `***`), the path, or `standard input`: for
    /// messages and the state database.
    package var description: String {
        switch self {
        case .url(let url): URLUserinfo.redacted(url)
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
        // A pipe or FIFO whose writer is silent would hold the read (and the run) until it ends:
        // the read looks for a cancel (--max-duration, SIGINT) while it waits.
        let cancelled = CancellationFlag()
        let read = await withTaskCancellationHandler { () async -> Result<[UInt8], FeedError> in
            await BlockingIO.resultApart { () throws(FeedError) -> [UInt8] in
                let fd: Int32
                if let path {
                    // Without O_NONBLOCK, opening a FIFO waits for its writer, where no cancel is heard.
                    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
                    if fd >= 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
                } else {
                    fd = STDIN_FILENO
                }
                guard fd >= 0 else {
                    throw FeedError(url: label, problem: "cannot be read: \(String(cString: strerror(errno)))", isFetchFailure: true)
                }
                defer { if path != nil { close(fd) } }
                switch DescriptorReading.readToEnd(fd, limit: limit, stopped: { cancelled.isSet }) {
                case .bytes(let bytes):
                    return bytes
                case .tooLarge:
                    throw FeedError(url: label, problem: "is larger than \(MirrorSummary.formatBytes(Int64(limit))); no feed is that large")
                case .failed(let code):
                    throw FeedError(url: label, problem: "cannot be read: \(String(cString: strerror(code)))", isFetchFailure: true)
                case .stopped:
                    throw FeedError(url: label, problem: "reading stopped: the run was cancelled", isFetchFailure: true)
                }
            }
        } onCancel: {
            cancelled.set()
        }
        return try read.get()
    }
}
