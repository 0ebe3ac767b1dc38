import FoundationEssentials

/// Where a transfer puts the body of a successful response.
enum TransferDestination: Sendable {
    /// Keep the body in memory, failing the transfer once it grows beyond `limit` bytes.
    case memory(limit: Int)
    /// Write the body into the file at `location`, asking the server for the bytes from `offset`
    /// on, as they are (`Accept-Encoding: identity`).
    ///
    /// With an `offset` above zero the request carries `Range: bytes=offset-`; a 206 whose
    /// Content-Range starts at `offset` is appended there, a 200 replaces the file from byte 0,
    /// and any other status leaves the file as it was.
    case file(FileLocation, offset: Int64)

    /// The file at `path`.
    static func file(path: String, offset: Int64) -> TransferDestination {
        .file(FileLocation(path: path), offset: offset)
    }
}

/// One HTTP GET for the ``TransferEngine``.
struct TransferRequest: Sendable {
    var url: String
    /// Extra request headers, sent in this order.
    var headers: [(name: String, value: String)]
    var destination: TransferDestination
    /// A validator for `If-Range`, sent only with a ranged request.
    var ifRange: String?
    /// For a ranged request: the size the whole resource had when the partial was started. A 206
    /// whose Content-Range total differs is refused before a byte is written.
    var expectedEntityLength: Int64?
    /// For a file destination: the most bytes the whole file may have. A response that says it
    /// is larger is refused before a byte is written, one that grows past it is cut off there.
    var maxLength: Int64?
    /// For a file destination: the bytes the body is expected to have, when known before asking.
    /// Sizes libcurl's receive buffer only: a body of another length arrives all the same.
    var expectedBodyLength: Int64?
    /// Looks at a 2xx body as it arrives and may end the transfer early.
    var inspector: (any BodyInspector)?
    /// The login this request carries whatever the engine's store says (a feed's own URL's).
    var credentials: URLCredentials?
    /// For a file destination: compute the MD5 of the whole file as it is written, whatever the
    /// ETag (the response's ``TransferResponse/bodyMD5``).
    var hashesBody = false
    /// For a file destination: called on the engine thread with the response's head before the
    /// first bytes of its body reach the file, unless they reach it whole, in the body's last
    /// write (then nothing of it was on disk before it was complete, and there is nothing to
    /// resume). What a later attempt needs to resume the file is recorded here.
    var beforeFirstPartialWrite: (@Sendable (TransferResponse) -> Void)?

    init(
        url: String,
        headers: [(name: String, value: String)] = [],
        destination: TransferDestination = .memory(limit: 16 << 20),
        ifRange: String? = nil,
        expectedEntityLength: Int64? = nil,
        maxLength: Int64? = nil,
        inspector: (any BodyInspector)? = nil
    ) {
        self.maxLength = maxLength
        self.url = url
        self.headers = headers
        self.destination = destination
        self.ifRange = ifRange
        self.expectedEntityLength = expectedEntityLength
        self.inspector = inspector
    }
}

/// What the server answered, as far as a transfer got.
package struct TransferResponse: Sendable {
    /// The HTTP status of the final response, after redirects.
    var status: Int
    /// The headers of the final response.
    var headers: HTTPHeaders
    /// The URL the final response came from.
    var finalURL: String
    /// The body, for ``TransferDestination/memory(limit:)``.
    var body: [UInt8]
    /// For a file destination: where this response's body began in the file (the requested offset
    /// after a 206, 0 after a 200).
    var bodyOffset: Int64
    /// Body bytes this response delivered.
    var bytesReceived: Int64
    /// For a file destination: the file's length once the transfer ended, every byte written.
    var fileLength: Int64
    /// The MD5 of the whole file, when the response's ETag is an MD5 or the request asked for it
    /// (``TransferRequest/hashesBody``), and the body arrived in full: computed as the bytes were
    /// written, so checking it costs no second read.
    var bodyMD5: String?
    /// The message's framing proved its body whole: a Content-Length, the last chunk of a chunked
    /// body, or the end of an HTTP/2 stream. An HTTP/1 body ended by closing the connection
    /// proves nothing: a cut connection looks the same.
    var isDelimited = false

    var isSuccess: Bool { (200..<300).contains(status) }
    var etag: String? { headers["ETag"] }
    var lastModified: String? { headers["Last-Modified"] }

    /// The size of the whole resource: the Content-Range total after a 206 or 416, the
    /// Content-Length after a 200.
    var entityLength: Int64? {
        if let range = headers["Content-Range"].flatMap(ContentRange.init(header:)) {
            return range.total
        }
        guard status == 200 else { return nil }
        // Header values are trimmed as they are parsed; one set by hand may not be.
        return headers["Content-Length"].flatMap { Int64($0) ?? Int64($0.trimming(.spaces)) }
    }
}

/// Progress of one transfer, in bytes of the whole resource.
package struct TransferProgress: Sendable, Equatable {
    /// Bytes of the resource now held: the resumed prefix plus what this response delivered.
    var completed: Int64
    /// The size of the resource, once the server has told it.
    var total: Int64?
}
