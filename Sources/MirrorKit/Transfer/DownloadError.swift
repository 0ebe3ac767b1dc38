import Logging
/// Why one file could not be mirrored.
package struct DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Reason: Sendable, Equatable {
        /// The server answered with a status other than 2xx.
        case httpStatus(Int)
        /// The transfer failed (network, timeout, disk).
        case transfer(TransferError.Reason)
        /// The file's size is not what the API or the server said.
        case sizeMismatch(expected: Int64, actual: Int64)
        /// The server stated no length, and the body it ended cleanly is not the length the feed
        /// declares: not asked for again this run (each attempt would fetch it whole).
        case declaredSizeMismatch(declared: Int64, actual: Int64)
        /// The file's MD5 is not the one its ETag states.
        case checksumMismatch(expected: String, actual: String)
        /// The media was removed from the host (Imgur redirects it to removed.png).
        case removed
        /// The server answered 2xx with no bytes at all.
        case emptyBody
        /// The server answered with a web page where a file was expected.
        case htmlPage
        /// Storing the file failed.
        case storage(String)
        /// Nobody stated the file's size and the server did not prove the body whole (an HTTP/1
        /// body ended by closing the connection, a 206 with an unknown total): the bytes stay a
        /// partial, never a file under a final name.
        case lengthUnproven(held: Int64)
        /// The host is down or throttling this run (see ``HostHealth``): the file is left for a
        /// later run, not failed.
        case hostUnavailable(String)
    }

    var url: String
    var reason: Reason

    var isCancellation: Bool { reason == .transfer(.cancelled) }

    init(url: String, reason: Reason) {
        self.url = url
        self.reason = reason
    }

    /// The fields a structured log line carries: the URL, and the HTTP status where there is one.
    var logFields: Logger.Metadata {
        var fields: Logger.Metadata = ["url": "\(url)"]
        if case .httpStatus(let status) = reason { fields["status"] = "\(status)" }
        return fields
    }

    package var description: String {
        switch reason {
        case .httpStatus(let status): "\(url): HTTP \(status)"
        case .transfer(let reason): TransferError(url: url, reason: reason).description
        case .sizeMismatch(let expected, let actual): "\(url): expected \(expected) bytes, got \(actual)"
        case .declaredSizeMismatch(let declared, let actual):
            "\(url): the feed declares \(declared) bytes; the server, stating no length, sent \(actual)"
        case .checksumMismatch(let expected, let actual): "\(url): MD5 \(actual) does not match ETag \(expected)"
        case .removed: "\(url): removed from the server"
        case .emptyBody: "\(url): the server sent an empty body"
        case .htmlPage: "\(url): the server sent a web page (text/html), not a file"
        case .storage(let message): "\(url): \(message)"
        case .lengthUnproven(let held):
            "\(url): the server never stated the file's size and did not prove its body whole; "
                + "the \(held) bytes received are kept as a partial, not saved"
        case .hostUnavailable(let verdict): "\(url): not tried: \(verdict)"
        }
    }
}

extension DownloadError.Reason {
    /// The file arrived but is not the file the server described.
    var isVerificationFailure: Bool {
        switch self {
        case .sizeMismatch, .checksumMismatch: true
        default: false
        }
    }
}
