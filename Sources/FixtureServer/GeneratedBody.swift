import NIOCore
import NIOHTTP1

/// A body made as it is sent: a head, one piece repeated, a tail. A test can serve a gigabyte
/// without the server holding it, and learn from the byte counter how much the client read.
struct GeneratedBody: Sendable {
    var head: [UInt8]
    var filler: [UInt8]
    var repeats: Int
    var tail: [UInt8]
    var contentType: String

    var length: Int { head.count + filler.count * repeats + tail.count }
}

extension FixtureServer {
    /// Serves at `path` a body of about `size` bytes (`filler` is repeated whole): `head`, then
    /// `filler` as often as fits, then `tail`, made as it is sent.
    public func addGeneratedBody(
        path: String, head: String, filler: String, tail: String, size: Int, contentType: String = "application/xml"
    ) {
        let body = GeneratedBody(
            head: Array(head.utf8), filler: Array(filler.utf8),
            repeats: max(0, (size - head.utf8.count - tail.utf8.count) / max(1, filler.utf8.count)),
            tail: Array(tail.utf8), contentType: contentType)
        state.withLock { $0.generatedBodies[path] = body }
    }
}

extension ResponseWriter {
    /// Sends a generated body with its Content-Length, a chunk at a time, each write awaited until
    /// it reaches the socket: a client that stops reading stops the generating.
    func send(_ body: GeneratedBody) async {
        var headers = HTTPHeaders([("Content-Type", body.contentType), ("Content-Length", String(body.length))])
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
        // About 256 KiB of whole fillers, written as often as the body repeats them.
        let perChunk = max(1, (256 << 10) / max(1, body.filler.count))
        let chunk = ByteBuffer(bytes: Array([[UInt8]](repeating: body.filler, count: perChunk).joined()))
        do {
            try await channel.writeAndFlush(HTTPServerResponsePart.head(head))
            if sendsBody {
                try await write(ByteBuffer(bytes: body.head))
                var left = body.repeats
                while left > 0 {
                    let count = min(left, perChunk)
                    try await write(count == perChunk ? chunk : chunk.getSlice(at: chunk.readerIndex, length: count * body.filler.count)!)
                    left -= count
                }
                try await write(ByteBuffer(bytes: body.tail))
            }
            try await channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        } catch {
            // The client went away (as one refusing the body does), or the server is stopping.
            guard !Task.isCancelled else { return }
            try? await channel.close()
        }
    }

    private func write(_ buffer: ByteBuffer) async throws {
        try Task.checkCancellation()
        try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)))
        server.state.withLock { $0.bodyBytesSent[path, default: 0] += buffer.readableBytes }
    }
}
