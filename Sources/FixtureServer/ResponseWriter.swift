import NIOCore
import NIOHTTP1

/// Writes one response, acting out the delivery faults: a dropped connection, a stall, a throttle.
///
/// Each body write is awaited until it reaches the socket, so the byte counters and the point
/// where a connection drops are exact.
struct ResponseWriter: Sendable {
    let server: FixtureServer
    let channel: any Channel
    let path: String
    let keepAlive: Bool
    let sendsBody: Bool
    let fault: Fault?

    func send(status: Int, headers: HTTPHeaders, body: ByteBuffer) async {
        var headers = headers
        var version = HTTPVersion.http1_1
        var keepAlive = keepAlive
        switch fault {
        case .closeDelimited?:
            // No length and no chunks: an HTTP/1.0 body runs until the connection closes.
            version = .http1_0
            keepAlive = false
        case .chunkedDrop?:
            // Without a Content-Length NIO sends an HTTP/1.1 body chunked.
            break
        default:
            // A Transfer-Encoding a fault sets frames the body instead (NIO chunks it).
            if !headers.contains(name: "Transfer-Encoding") {
                headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes))
            }
        }
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: status), headers: headers)
        do {
            try await channel.writeAndFlush(HTTPServerResponsePart.head(head))
            if sendsBody, try await writeBody(body) == false {
                try await channel.close()
                return
            }
            try await channel.writeAndFlush(HTTPServerResponsePart.end(nil))
            if case .closeDelimited? = fault { try await channel.close() }
        } catch {
            // The client went away, or the server is stopping: nothing more to answer.
            guard !Task.isCancelled else { return }
            try? await channel.close()
        }
    }

    /// Writes the body as the fault allows; false when the connection must be cut short.
    private func writeBody(_ body: ByteBuffer) async throws -> Bool {
        var cutoff = body.readableBytes
        var chunkSize = 256 << 10
        var bytesPerSecond: Int?
        switch fault {
        case .dropAfter(let bytes)?, .stall(let bytes, _)?, .chunkedDrop(let bytes)?, .closeDelimited(let bytes?)?:
            cutoff = min(bytes, cutoff)
        case .throttle(let rate)?:
            bytesPerSecond = max(rate, 1)
            chunkSize = max(rate / 20, 1)
        default:
            break
        }
        var sent = 0
        while sent < cutoff {
            let count = min(chunkSize, cutoff - sent)
            let chunk = body.getSlice(at: body.readerIndex + sent, length: count)!
            try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(chunk)))
            sent += count
            server.state.withLock { $0.bodyBytesSent[path, default: 0] += count }
            if let bytesPerSecond {
                try await Task.sleep(for: .seconds(Double(count) / Double(bytesPerSecond)))
            }
        }
        guard cutoff < body.readableBytes else { return true }
        if case .stall(_, let seconds)? = fault {
            try await Task.sleep(for: .seconds(seconds))
        }
        return false
    }
}
