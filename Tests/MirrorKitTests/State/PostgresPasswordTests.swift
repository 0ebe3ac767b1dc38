import Foundation
import Synchronization
import Testing
@testable import MirrorKit
@testable import MirrorPostgreSQL

/// The PostgreSQL password goes to a server that asks for it in clear only when TLS has proved
/// who the server is: SCRAM works over any connection, cleartext only over verified TLS.
@Suite("PostgreSQL: no password in clear to an unverified server", .timeLimit(.minutes(2)))
struct PostgresPasswordTests {
    private static let installed = PostgresServer.isAvailable
    private static let password = ["PGPASSWORD": PostgresServer.password]

    private static func open(_ url: String) async throws -> PostgresState {
        try await PostgresServer.openState(url, environment: password)
    }

    private static func failure(_ url: String) async -> String {
        await PostgresServer.openingFailure(url, environment: password)
    }

    @Test(.enabled(if: installed, "PostgreSQL is not installed (scripts/setup installs it)"))
    func scramWorksWithoutTLSAndCleartextIsRefused() async throws {
        try await PostgresServer.with(passwordMethod: "scram-sha-256") { postgres in
            let state = try await Self.open("postgresql://\(PostgresServer.user)@127.0.0.1:\(postgres.port)/postgres?sslmode=disable")
            #expect(try await state.rows("SELECT 1").count == 1)
            await state.close()
        }
        try await PostgresServer.with(passwordMethod: "password") { postgres in
            for mode in ["disable", "prefer"] {
                let refused = await Self.failure("postgresql://\(PostgresServer.user)@127.0.0.1:\(postgres.port)/postgres?sslmode=\(mode)")
                #expect(refused.contains("the server asked for the password in clear"), "\(mode): \(refused)")
                #expect(!refused.contains("\n") && !refused.contains(PostgresServer.password), "\(refused)")
            }
        }
    }

    @Test(.enabled(if: installed, "PostgreSQL is not installed (scripts/setup installs it)"))
    func overTLSCleartextIsRefusedUnverifiedAndAcceptedVerified() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let authority = try TestCertificates(in: dir)
            let server = try authority.issue("server", commonName: "db", alternativeNames: ["IP:127.0.0.1"])
            try await PostgresServer.with(tls: .init(certificate: server.certificate, key: server.key), passwordMethod: "password") { postgres in
                let base = "postgresql://\(PostgresServer.user)@127.0.0.1:\(postgres.port)/postgres"
                let unverified = await Self.failure("\(base)?sslmode=require")
                #expect(unverified.contains("the server asked for the password in clear"), "\(unverified)")
                let verified = try await Self.open("\(base)?sslmode=verify-full&sslrootcert=\(authority.authority)")
                await verified.close()
            }
            // SCRAM through the guard's own TLS: encrypted, and the server sees it so.
            try await PostgresServer.with(tls: .init(certificate: server.certificate, key: server.key), passwordMethod: "scram-sha-256") { postgres in
                let state = try await Self.open("postgresql://\(PostgresServer.user)@127.0.0.1:\(postgres.port)/postgres?sslmode=require")
                let rows = try await state.rows("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                #expect(try rows.first?.decode(Bool.self) == true)
                await state.close()
            }
        }
    }

    /// A hostile server, answering every connection with a request for the password in clear:
    /// whatever mirror sends it is kept, and the password must not be among it.
    @Test(arguments: [3, 5])
    func aHostileServerAskingForThePasswordInClearOrAsMD5NeverGetsIt(code: UInt8) async throws {
        let (listener, port) = try Loopback.bind(listening: true)
        let received = Mutex<[UInt8]>([])
        let done = Atomic<Bool>(false)
        Thread.detachNewThread {
            defer { close(listener) }
            while !done.load(ordering: .acquiring) {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { continue }
                var patience = timeval(tv_sec: 0, tv_usec: 500_000)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
                var buffer = [UInt8](repeating: 0, count: 4096)
                var first = true
                while true {
                    let count = read(connection, &buffer, buffer.count)
                    guard count > 0 else { break }
                    received.withLock { $0 += buffer[..<count] }
                    if first {
                        // An SSLRequest gets "no"; the startup message, a cleartext password request.
                        let answer: [UInt8] = count == 8 && buffer[4..<8] == [0x04, 0xD2, 0x16, 0x2F]
                            ? [UInt8(ascii: "N")]
                            : code == 3 ? [UInt8(ascii: "R"), 0, 0, 0, 8, 0, 0, 0, 3] : [UInt8(ascii: "R"), 0, 0, 0, 12, 0, 0, 0, 5, 1, 2, 3, 4]
                        _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                        first = count == 8
                    }
                }
                close(connection)
            }
        }
        defer {
            done.store(true, ordering: .releasing)
            shutdown(listener, Int32(SHUT_RDWR))
        }
        for mode in ["disable", "prefer"] {
            let refused = await Self.failure("postgresql://\(PostgresServer.user)@127.0.0.1:\(port)/postgres?sslmode=\(mode)")
            #expect(refused.contains("the server asked for the password \(code == 3 ? "in clear" : "as MD5")"), "\(mode): \(refused)")
        }
        let bytes = received.withLock { $0 }
        #expect(bytes.count > 8, "the server was reached")
        #expect(bytes.firstRange(of: Array(PostgresServer.password.utf8)) == nil)
        // No password message ('p') at all: nothing derived from the password either.
        #expect(!bytes.contains(UInt8(ascii: "p")) || bytes.firstRange(of: [UInt8(ascii: "p"), 0, 0, 0]) == nil)
    }
}
