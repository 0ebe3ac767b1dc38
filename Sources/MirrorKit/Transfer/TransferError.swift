import FoundationEssentials

/// Why a transfer ended without a complete response.
struct TransferError: Error, Sendable, CustomStringConvertible {
    enum Reason: Error, Sendable, Equatable {
        /// libcurl gave up: connection refused or dropped, timeout, TLS, refused redirect, …
        case transport(code: Int32, message: String)
        /// The body would not fit the memory destination's limit.
        case bodyTooLarge(limit: Int)
        /// A 206 whose Content-Range does not start where we asked.
        case rangeMismatch(requested: Int64, received: String)
        /// Writing the body to disk failed.
        case fileWrite(FileSystemError)
        /// The body is larger than the file may be (its known size, or the size cap).
        case fileTooLarge(limit: Int64)
        /// The server encoded the body (gzip, …) though the file was asked for as it is: the
        /// header that says so, as `Content-Encoding: gzip`.
        case contentEncoded(String)
        /// The server stated a length that is not one, as `Content-Length: 1e3`: nothing proves
        /// where the body ends (see ``HTTPHeaders/invalidContentLength``).
        case invalidLength(String)
        /// OpenSSL failed to hash the body.
        case digest(String)
        /// The transfer was cancelled by its caller.
        case cancelled
        /// The request's ``BodyInspector`` refused the body, for this reason.
        case refused(String)
    }

    var url: String
    var reason: Reason
    /// What the server had answered before the failure, if it answered.
    var response: TransferResponse?

    init(url: String, reason: Reason, response: TransferResponse? = nil) {
        self.url = url
        self.reason = reason
        self.response = response
    }

    /// Whether trying again (from the bytes already on disk) may succeed.
    var isRetryable: Bool {
        switch reason {
        case .transport(let code, _):
            return Self.retryableCurlCodes.contains(code)
        case .rangeMismatch:
            return true
        case .bodyTooLarge, .fileWrite, .fileTooLarge, .contentEncoded, .invalidLength, .digest, .cancelled, .refused:
            return false
        }
    }

    /// curl codes for faults of the network or the peer, not of the request or this machine:
    /// couldn't resolve (6) or connect (7), HTTP/2 (16), partial file (18), timeout (28),
    /// TLS handshake (35), got nothing (52), send (55) and receive (56) errors, HTTP/2 stream (92).
    static let retryableCurlCodes: Set<Int32> = [6, 7, 16, 18, 28, 35, 52, 55, 56, 92]

    /// How the host failed to answer, when it did not answer at all: no connection was made
    /// (couldn't resolve the proxy (5) or host (6), couldn't connect (7), a connect timeout (28),
    /// TLS handshake (35) or certificate (60) failures), or the connection died before a response
    /// (an empty reply (52), a reset (55, 56), a timeout once connected (28)). Nil when a response
    /// arrived or the failure is of another kind.
    var unanswered: HostHealth.Unanswered? {
        guard response == nil, case .transport(let code, let message) = reason else { return nil }
        switch code {
        // After a redirect the name that did not resolve may be another host's.
        case 6: return message.contains(URLComponents(string: url)?.host ?? url) ? .notResolved : .notConnected
        case 5, 7, 35, 60: return .notConnected
        // curl says "Connection timed out" or "Failed to connect" for the connect phase.
        case 28 where message.contains("onnect"): return .notConnected
        case 28, 52, 55, 56: return .droppedBeforeAnswer
        default: return nil
        }
    }


    var description: String {
        switch reason {
        case .transport(_, let message):
            return "\(url): \(message)"
        case .bodyTooLarge(let limit):
            return "\(url): response larger than \(limit) bytes"
        case .rangeMismatch(let requested, let received):
            return "\(url): asked for bytes from \(requested), server sent Content-Range '\(received)'"
        case .fileWrite(let error):
            return "\(url): writing to disk failed: \(error)"
        case .fileTooLarge(let limit):
            return "\(url): the file is larger than \(limit) bytes, its known size or the --max-file-size cap"
        case .contentEncoded(let encoding):
            return "\(url): the server sent the file encoded (\(encoding)) though it was asked for as is; refusing to save encoded bytes"
        case .invalidLength(let field):
            return "\(url): the server sent a length that is not a number of bytes (\(field)); refusing a body whose end nothing proves"
        case .digest(let message):
            return "\(url): \(message)"
        case .cancelled:
            return "\(url): cancelled"
        case .refused(let reason):
            return "\(url): \(reason)"
        }
    }
}

extension TransferError {
    /// The reason alone, without the URL (for messages that name the URL themselves).
    var reasonText: String {
        switch reason {
        case .transport(_, let message), .refused(let message): message
        default: description
        }
    }
}
