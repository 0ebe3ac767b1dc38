import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A real HTTP/1.1 server on loopback that acts out the Imgur API, Imgur's media CDN and download
/// feeds, with faults on demand and counters the tests can read.
///
/// Tests, the README demo and the benchmarks use it instead of the real services.
public final class FixtureServer: Sendable {
    let state: Mutex<ServerState>
    let catalog: FixtureCatalog
    /// Responses being written, so `stop()` can end them before the event loops go away.
    private let responses = Mutex<[UInt64: Task<Void, Never>]>([:])
    private let responseCounter = Mutex<UInt64>(0)
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    /// `http://127.0.0.1:PORT`, no trailing slash.
    public let baseURL: String
    public let port: Int

    /// Starts serving the fixtures in `fixtures` on `host`, on `port` (0 picks a free one).
    public static func start(
        fixtures: URL, host: String = "127.0.0.1", port: Int = 0, threads: Int = 1
    ) async throws -> FixtureServer {
        let catalog = try FixtureCatalog(directory: fixtures)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let state = Mutex(ServerState(media: catalog.media, removedIDs: catalog.removedIDs))
        let box = ResponderBox()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(RequestHandler(responder: box))
                }
            }
        let channel = try await bootstrap.bind(host: host, port: port).get()
        let server = FixtureServer(
            state: state, catalog: catalog, group: group, channel: channel,
            port: channel.localAddress?.port ?? port, host: host)
        box.server.withLock { $0 = server }
        return server
    }

    private init(
        state: consuming Mutex<ServerState>, catalog: FixtureCatalog, group: MultiThreadedEventLoopGroup,
        channel: any Channel, port: Int, host: String
    ) {
        self.state = state
        self.catalog = catalog
        self.group = group
        self.channel = channel
        self.port = port
        baseURL = "http://\(host):\(port)"
    }

    /// Stops listening and closes every connection.
    public func stop() async throws {
        try? await channel.close()
        let running = responses.withLock { responses in
            defer { responses.removeAll() }
            return Array(responses.values)
        }
        for task in running {
            task.cancel()
            await task.value
        }
        try await group.shutdownGracefully()
    }

    /// Answers `head` in a task of its own, tracked until it ends.
    func launchResponse(to head: HTTPRequestHead, on channel: any Channel) {
        let key = responseCounter.withLock { counter in
            counter += 1
            return counter
        }
        responses.withLock { responses in
            responses[key] = Task {
                await self.respond(to: head, on: channel)
                _ = self.responses.withLock { $0.removeValue(forKey: key) }
            }
        }
    }

    // MARK: - Media

    /// Serves `size` deterministic bytes at `path` from now on.
    public func addMedia(path: String, size: Int, contentType: String = "application/octet-stream") {
        state.withLock { $0.media[path] = MediaResource(size: size, contentType: contentType) }
    }

    /// Serves at `path` the very bytes served at `original` (a download mirror's copy).
    public func addMirror(path: String, of original: String) {
        state.withLock { state in
            guard var resource = state.media[original] else { return }
            resource.sameAs = original
            state.media[path] = resource
        }
    }

    /// Changes the bytes (and so the ETag and Last-Modified) served at `path`, and at its mirrors.
    public func changeContent(path: String) {
        state.withLock { state in
            let origin = state.media[path]?.sameAs ?? path
            state.media[origin]?.version += 1
        }
    }

    /// Serves at `path` the bytes (and validators) it served before the last ``changeContent(path:)``.
    public func revertContent(path: String) {
        state.withLock { state in
            let origin = state.media[path]?.sameAs ?? path
            if let version = state.media[origin]?.version, version > 0 { state.media[origin]?.version = version - 1 }
        }
    }

    /// Serves `text` as the feed at `path` from now on (`{{base}}` is this server's URL).
    public func setFeed(path: String, text: String) {
        setFeed(path: path, bytes: Array(text.utf8))
    }

    /// Serves `bytes` as they are at `path` (a feed in another encoding than UTF-8, or damaged).
    public func setFeed(path: String, bytes: [UInt8]) {
        state.withLock { $0.feeds[path] = bytes }
    }

    /// Makes the media of image `id` answer with a redirect to /removed.png.
    public func markRemoved(id: String) {
        state.withLock { _ = $0.removedIDs.insert(id) }
    }

    /// The bytes served at `path` now, or nil if nothing is served there.
    public func content(of path: String) -> [UInt8]? {
        state.withLock { $0.content(for: path) }.map { Array($0.body.readableBytesView) }
    }

    /// The ETag served at `path` now.
    public func etag(of path: String) -> String? {
        state.withLock { $0.content(for: path)?.etag }
    }

    /// The Last-Modified `path` is served with, byte for byte.
    public func lastModified(of path: String) -> String? {
        state.withLock { $0.content(for: path)?.lastModified }
    }

    /// Every media path served, sorted.
    public var mediaPaths: [String] {
        state.withLock { $0.media.keys.sorted() }
    }

    // MARK: - Faults and counters

    /// Sends every media file no faster than `bytesPerSecond` on each connection (nil: at full speed).
    public func throttleMedia(bytesPerSecond: Int?) {
        state.withLock { $0.mediaThrottle = bytesPerSecond }
    }

    /// Acts out `fault` on the next `times` requests for `path`; only on requests without a Range
    /// header when `sparingRangedRequests` (a fault that strikes a fresh download wherever the
    /// client stands, so a test can count on the resume that follows being served whole).
    public func inject(_ fault: Fault, path: String, times: Int = 1, sparingRangedRequests: Bool = false) {
        let queued = QueuedFault(fault: fault, sparesRangedRequests: sparingRangedRequests)
        state.withLock { $0.faults[path, default: []].append(contentsOf: repeatElement(queued, count: times)) }
    }

    /// Drops faults not yet acted out.
    public func clearFaults() {
        state.withLock { $0.faults.removeAll() }
    }

    /// API calls answered so far (any status).
    public var apiRequestCount: Int {
        state.withLock { $0.log.count { $0.path.hasPrefix("/3/") } }
    }

    /// Requests received for `path` (query ignored).
    public func requestCount(path: String) -> Int {
        state.withLock { $0.requestCounts[path, default: 0] }
    }

    /// Body bytes written to the network for `path`.
    public func bodyBytesSent(path: String) -> Int {
        state.withLock { $0.bodyBytesSent[path, default: 0] }
    }

    /// Body bytes written for every path.
    public var totalBodyBytesSent: Int {
        state.withLock { $0.bodyBytesSent.values.reduce(0, +) }
    }

    /// Every request so far, oldest first.
    public var requests: [RecordedRequest] {
        state.withLock { $0.log }
    }

    /// Sets the API budget reported in the X-RateLimit-* headers and enforced with 429s; the user
    /// budget refills to `userLimit` (default: as before, 500 at first) `userReset` seconds from now,
    /// and every hour after; with `refills` false it refills only when this is called again, so a
    /// test decides when an "hour" has passed.
    public func setRateLimit(
        userRemaining: Int, userReset: Int = 3600, clientRemaining: Int = 12_500, userLimit: Int? = nil,
        refills: Bool = true
    ) {
        state.withLock {
            if let userLimit { $0.rateLimit.userLimit = userLimit }
            $0.rateLimit.refills = refills
            $0.rateLimit.userRemaining = userRemaining
            $0.rateLimit.userResetAt = Date().addingTimeInterval(Double(userReset))
            $0.rateLimit.clientRemaining = clientRemaining
        }
    }

    /// The client IDs the API accepts; nil (the default) accepts any non-empty one.
    public func setAcceptedClientID(_ id: String?) {
        state.withLock { $0.acceptedClientID = id }
    }

    /// Feeds and media answer 401 unless asked with this Basic login, as a private or paid feed
    /// does; nil (the default) for none. The API keeps its Client-ID.
    public func requireBasicLogin(user: String, password: String) {
        let token = Data("\(user):\(password)".utf8).base64EncodedString()
        state.withLock { $0.requiredAuthorization = "Basic \(token)" }
    }
}

/// Lets the channel initializer reach the server, which exists only once the channel is bound.
final class ResponderBox: Sendable {
    let server = Mutex<FixtureServer?>(nil)
}

/// Collects one request and hands it to the server's router off the event loop.
final class RequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    private let responder: ResponderBox
    private var head: HTTPRequestHead?

    init(responder: ResponderBox) {
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head, let server = responder.server.withLock({ $0 }) else { return }
            self.head = nil
            let channel = context.channel
            server.launchResponse(to: head, on: channel)
        }
    }
}
