import Glibc
import MirrorKit
import PostgresNIO
import Synchronization

/// Stands between postgres-nio and a server whose identity nothing verifies (no TLS, or TLS
/// without a trusted root), so that no one answering at that address (a spoofed or hostile
/// server) can ask for the password in clear and get it.
///
/// postgres-nio sends the password to whichever server asks for it, cleartext included; libpq's
/// answer is `require_auth`, postgres-nio has none. So the connections go through a relay on a
/// Unix socket in a private folder: it makes the TCP connection (and the TLS, where the sslmode
/// asks for it), reads the server's authentication requests before postgres-nio sees them, and
/// closes the connection when one asks for the password in clear, or as MD5 (whose answer a
/// server in the middle can relay to the real one). SCRAM, which proves the password without
/// giving away anything reusable, passes. Once authenticated, bytes go through as they are.
final class CleartextPasswordGuard: Sendable {
    /// What postgres-nio connects to.
    let socketPath: String
    private let folder: String
    private let listener: any Channel
    private let refusal = Refusal()

    /// Why a connection was refused, if one was: the line the run ends with.
    var refused: String? { refusal.reason }

    /// A relay to `host`:`port`; `tls` nil for none, else the TLS to use (`required`: refuse a
    /// server that declines it, else go on without).
    init(host: String, port: Int, tls: (configuration: TLSConfiguration, required: Bool)?) async throws {
        var template = Array("/tmp/mirror-postgresql-XXXXXX".utf8CString)
        // mkdtemp makes the folder 0700: no other user can reach the socket.
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw MirrorError.stateDatabase(path: "/tmp", problem: "no folder for the connection's relay: \(String(cString: strerror(errno)))")
        }
        folder = String(cString: made)
        socketPath = folder + "/relay"
        let context = try tls.map { try NIOSSLContext(configuration: $0.configuration) }
        let required = tls?.required ?? false
        let refusal = self.refusal
        do {
            listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelOption(ChannelOptions.autoRead, value: false)
                .childChannelInitializer { client in
                    Self.connect(client, host: host, port: port, tls: context, tlsRequired: required, refusal: refusal)
                }
                .bind(unixDomainSocketPath: socketPath).get()
        } catch {
            rmdir(folder)
            throw error
        }
    }

    func close() async {
        try? await listener.close()
        unlink(socketPath)
        rmdir(folder)
    }

    /// Connects `client` (postgres-nio's side) to the server, and lets it be read once the
    /// server's side (its TLS included) is ready.
    private static func connect(
        _ client: any Channel, host: String, port: Int, tls: NIOSSLContext?, tlsRequired: Bool, refusal: Refusal
    ) -> EventLoopFuture<Void> {
        ClientBootstrap(group: client.eventLoop).connect(host: host, port: port).flatMap { server in
            negotiateTLS(on: server, tls, required: tlsRequired).flatMapThrowing {
                try server.pipeline.syncOperations.addHandler(AuthenticationInspector(refusal: refusal))
                try server.pipeline.syncOperations.addHandler(Relay(partner: client))
                try client.pipeline.syncOperations.addHandler(Relay(partner: server))
                try client.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
            }.flatMapErrorThrowing { error in
                server.close(promise: nil)
                throw error
            }
        }.flatMapErrorThrowing { error in
            // postgres-nio hears only that the socket closed: the run says why.
            switch error {
            case PostgresRelayRefusal.tlsDeclined: refusal.record("the server does not offer TLS, and the sslmode requires it")
            default: refusal.record("cannot connect to \(host):\(port): \(error)")
            }
            throw error
        }
    }

    /// Asks the server for TLS (an SSLRequest), reads its one-byte answer, and sets TLS up when it
    /// says yes; a no is an error when TLS is required.
    private static func negotiateTLS(on server: any Channel, _ tls: NIOSSLContext?, required: Bool) -> EventLoopFuture<Void> {
        guard let tls else { return server.eventLoop.makeSucceededVoidFuture() }
        let answer = server.eventLoop.makePromise(of: UInt8.self)
        do {
            try server.pipeline.syncOperations.addHandler(OneByteReader(answer: answer))
        } catch {
            return server.eventLoop.makeFailedFuture(error)
        }
        var request = server.allocator.buffer(capacity: 8)
        request.writeInteger(Int32(8))
        request.writeInteger(Int32(80_877_103))
        server.writeAndFlush(request, promise: nil)
        return answer.futureResult.flatMapThrowing { byte in
            if byte == UInt8(ascii: "S") {
                try server.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: nil), position: .first)
            } else if required {
                throw PostgresRelayRefusal.tlsDeclined
            }
        }
    }
}

/// Why the guard closed a connection; written on an event loop, read by the run.
final class Refusal: Sendable {
    private let value = Mutex<String?>(nil)

    var reason: String? { value.withLock { $0 } }

    func record(_ reason: String) { value.withLock { $0 = reason } }
}

enum PostgresRelayRefusal: Error {
    case tlsDeclined
}

/// Reads the server's answer to an SSLRequest: `S` or `N`, one byte.
private final class OneByteReader: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private let answer: EventLoopPromise<UInt8>

    init(answer: EventLoopPromise<UInt8>) {
        self.answer = answer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard let byte: UInt8 = buffer.readInteger() else { return }
        // Gone before the answer is heard: what follows is TLS, or the server's messages.
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        answer.succeed(byte)
    }

    func channelInactive(context: ChannelHandlerContext) {
        answer.fail(ChannelError.ioOnClosedChannel)
    }
}

/// Reads the server's messages up to its AuthenticationOk, and closes the connection on a
/// request for the password in clear (AuthenticationCleartextPassword, code 3) before
/// postgres-nio could answer it. From AuthenticationOk on it only passes bytes on.
private final class AuthenticationInspector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let refusal: Refusal
    private var pending: ByteBuffer?
    private var authenticated = false

    init(refusal: Refusal) {
        self.refusal = refusal
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard !authenticated else {
            context.fireChannelRead(data)
            return
        }
        var buffer = pending.map { var joined = $0; var more = bytes; joined.writeBuffer(&more); return joined } ?? bytes
        var passed = context.channel.allocator.buffer(capacity: buffer.readableBytes)
        // Whole messages only: a type byte, a length that counts itself, the rest.
        while !authenticated, buffer.readableBytes >= 5,
              let type: UInt8 = buffer.getInteger(at: buffer.readerIndex),
              let length: Int32 = buffer.getInteger(at: buffer.readerIndex + 1), length >= 4,
              buffer.readableBytes >= 1 + Int(length) {
            if type == UInt8(ascii: "R"), length >= 8, let code: Int32 = buffer.getInteger(at: buffer.readerIndex + 5) {
                // 3: the password in clear; 5: MD5, whose answer a server in the middle can pass
                // on to the real one and log in with, or break offline.
                if code == 3 || code == 5 {
                    refusal.record(
                        "the server asked for the password \(code == 3 ? "in clear" : "as MD5"), over a connection on which nothing proves who the server is; refused (use SCRAM authentication, or sslmode=verify-full with sslrootcert)")
                    context.close(promise: nil)
                    return
                }
                if code == 0 { authenticated = true }
            }
            var message = buffer.readSlice(length: 1 + Int(length))!
            passed.writeBuffer(&message)
        }
        if authenticated { passed.writeBuffer(&buffer) }
        pending = buffer.readableBytes > 0 && !authenticated ? buffer : nil
        if passed.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(passed)) }
    }
}

/// Passes what one side reads to the other, and closes the other when one closes.
private final class Relay: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let partner: any Channel

    init(partner: any Channel) {
        self.partner = partner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner.writeAndFlush(unwrapInboundIn(data), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
