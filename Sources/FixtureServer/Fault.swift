/// A misbehaviour the fixture server acts out on a request, to test the client's handling of it.
public enum Fault: Sendable, Equatable {
    /// Close the connection once this many body bytes are sent.
    case dropAfter(bytes: Int)
    /// Answer a ranged request with 200 and the whole body, as servers without Range support do.
    case ignoreRange
    /// Answer with this status, headers and body instead of the resource.
    case respond(status: Int, headers: [String: String] = [:], body: String = "")
    /// ``respond(status:headers:body:)`` with header lines ("Name: value") sent in this order, a
    /// name more than once if it comes more than once.
    case respondWithLines(status: Int, lines: [String], body: String = "")
    /// Send this many body bytes, then nothing for `seconds`, then close the connection.
    case stall(afterBytes: Int, seconds: Double)
    /// Send the body no faster than this.
    case throttle(bytesPerSecond: Int)
    /// Answer as an HTTP/1.0 server that states no length: the body ends when the connection
    /// closes, after `afterBytes` bytes when given (a cut the client cannot tell from the end).
    case closeDelimited(afterBytes: Int?)
    /// Send the body chunked, without a Content-Length, and close after this many bytes.
    case chunkedDrop(afterBytes: Int)
    /// Answer a ranged request with a 206 whose Content-Range total is `*` (unknown).
    case unknownTotal
    /// Answer 200 with the whole body whatever the request's conditions (If-None-Match,
    /// If-Modified-Since, Range), with this ETag instead of the real one when given: a server
    /// that ignores conditional requests, or a cache that tags the same bytes anew.
    case unconditional(etag: String?)

    /// A 429 as Imgur's API gateway sends it since 2019: an `errors` array and no `data` key.
    public static func imgurGatewayTooManyRequests(retryAfter: Int? = nil) -> Fault {
        .respond(
            status: 429,
            headers: retryAfter.map { ["Retry-After": String($0)] } ?? [:],
            body: #"{"errors":[{"id":"legacy-api-fixture","code":"429","status":"Too Many Requests","detail":"Too Many Requests"}]}"#)
    }

    /// An error in Imgur's legacy envelope: `data.error` as a string.
    public static func imgurLegacyError(status: Int, message: String, headers: [String: String] = [:]) -> Fault {
        .respond(
            status: status, headers: headers,
            body: #"{"data":{"error":"\#(message)","request":"/3/fixture","method":"GET"},"success":false,"status":\#(status)}"#)
    }
}

extension Fault {
    /// Parses the command-line form: `drop-after:BYTES`, `ignore-range`, `status:CODE[:RETRY_AFTER]`,
    /// `stall:BYTES:SECONDS`, `throttle:BYTES_PER_SECOND`, `close-delimited`, `unknown-total`.
    public init?(argument: String) {
        let parts = argument.split(separator: ":").map(String.init)
        switch (parts.first, parts.count) {
        case ("drop-after", 2):
            guard let bytes = Int(parts[1]) else { return nil }
            self = .dropAfter(bytes: bytes)
        case ("ignore-range", 1):
            self = .ignoreRange
        case ("status", 2), ("status", 3):
            guard let status = Int(parts[1]) else { return nil }
            self = .respond(status: status, headers: parts.count == 3 ? ["Retry-After": parts[2]] : [:])
        case ("stall", 3):
            guard let bytes = Int(parts[1]), let seconds = Double(parts[2]) else { return nil }
            self = .stall(afterBytes: bytes, seconds: seconds)
        case ("throttle", 2):
            guard let rate = Int(parts[1]) else { return nil }
            self = .throttle(bytesPerSecond: rate)
        case ("close-delimited", 1):
            self = .closeDelimited(afterBytes: nil)
        case ("unknown-total", 1):
            self = .unknownTotal
        default:
            return nil
        }
    }
}

/// One request as the fixture server saw it.
public struct RecordedRequest: Sendable {
    public var method: String
    public var path: String
    public var headers: [String: String]

    /// The value of a request header, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}
