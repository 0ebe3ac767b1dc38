import Foundation
import Testing
@testable import MirrorKit
@testable import MirrorPostgreSQL

/// The PostgreSQL state over TLS, as libpq's users write it (`sslmode`, `sslrootcert`, `sslcert`,
/// `sslkey`, and the `PGSSL…` environment), against a real server with `ssl=on` and certificates
/// made for each test.
@Suite("PostgreSQL over TLS: sslmode, sslrootcert and client certificates", .timeLimit(.minutes(2)))
struct PostgresTLSTests {
    private static let installed = PostgresServer.isAvailable

    /// Whether the connection the state holds is encrypted, by the server's own account.
    private static func isEncrypted(_ state: PostgresState) async throws -> Bool {
        let rows = try await state.rows("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        return try rows.first?.decode(Bool.self) ?? false
    }

    private static func open(_ url: String, environment: [String: String] = [:]) async throws -> PostgresState {
        try await PostgresServer.openState(url, environment: environment)
    }

    private static func failure(_ url: String) async -> String {
        await PostgresServer.openingFailure(url)
    }

    @Test(.enabled(if: installed, "PostgreSQL is not installed (scripts/setup installs it)"))
    func verifyFullTrustsTheRightAuthorityAndNameAndRefusesAWrongOneInOneLine() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let authority = try TestCertificates(in: dir)
            let stranger = try TestCertificates(in: dir, name: "other-ca")
            // A certificate for the name localhost alone, not for the address 127.0.0.1.
            let server = try authority.issue("server", commonName: "db", alternativeNames: ["DNS:localhost"])
            try await PostgresServer.with(tls: .init(certificate: server.certificate, key: server.key)) { postgres in
                let base = "postgresql://\(PostgresServer.user)@localhost:\(postgres.port)/postgres"
                let state = try await Self.open("\(base)?sslmode=verify-full&sslrootcert=\(authority.authority)")
                #expect(try await Self.isEncrypted(state))
                await state.close()

                let wrongAuthority = await Self.failure("\(base)?sslmode=verify-full&sslrootcert=\(stranger.authority)")
                #expect(wrongAuthority.contains("not signed by a certificate authority in \(stranger.authority)"), "\(wrongAuthority)")
                #expect(!wrongAuthority.contains("\n"), "\(wrongAuthority)")

                // Reached by its address, which the certificate does not name: verify-full refuses
                // it, verify-ca does not look.
                let byAddress = "postgresql://\(PostgresServer.user)@127.0.0.1:\(postgres.port)/postgres"
                let wrongName = await Self.failure("\(byAddress)?sslmode=verify-full&sslrootcert=\(authority.authority)")
                #expect(wrongName.contains("certificate is not for 127.0.0.1"), "\(wrongName)")
                #expect(!wrongName.contains("\n"), "\(wrongName)")
                #expect(await Self.failure("\(byAddress)?sslmode=verify-ca&sslrootcert=\(authority.authority)") == "connected")

                // libpq's `require` with a root certificate checks the certificate, as verify-ca.
                let required = await Self.failure("\(base)?sslmode=require&sslrootcert=\(stranger.authority)")
                #expect(required.contains("not signed by"), "\(required)")
                // From the environment, as libpq reads it; the URL's own options win.
                let environment = ["PGSSLMODE": "verify-full", "PGSSLROOTCERT": authority.authority]
                let fromEnvironment = try await Self.open(base, environment: environment)
                #expect(try await Self.isEncrypted(fromEnvironment))
                await fromEnvironment.close()
                let overridden = try await Self.open("\(base)?sslmode=disable", environment: environment)
                #expect(try await !Self.isEncrypted(overridden))
                await overridden.close()
            }
        }
    }

    @Test(.enabled(if: installed, "PostgreSQL is not installed (scripts/setup installs it)"))
    func requireRefusesAServerWithoutTLSAndPreferGoesOnWithoutIt() async throws {
        try await PostgresServer.with { postgres in
            let base = "postgresql://\(PostgresServer.user)@127.0.0.1:\(postgres.port)/postgres"
            let refused = await Self.failure("\(base)?sslmode=require")
            #expect(refused.contains("does not offer TLS"), "\(refused)")
            #expect(!refused.contains("\n"), "\(refused)")
            let preferred = try await Self.open(base)
            #expect(try await !Self.isEncrypted(preferred))
            await preferred.close()
        }
    }

    @Test(.enabled(if: installed, "PostgreSQL is not installed (scripts/setup installs it)"))
    func aClientCertificateIsShownToAServerThatDemandsOne() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let authority = try TestCertificates(in: dir)
            let server = try authority.issue("server", commonName: "db", alternativeNames: ["IP:127.0.0.1"])
            let client = try authority.issue("client", commonName: PostgresServer.user)
            let tls = PostgresServer.TLS(certificate: server.certificate, key: server.key, clientAuthority: authority.authority)
            try await PostgresServer.with(tls: tls) { postgres in
                let base = "postgresql://\(PostgresServer.user)@127.0.0.1:\(postgres.port)/postgres?sslmode=verify-full&sslrootcert=\(authority.authority)"
                let refused = await Self.failure(base)
                #expect(refused.contains("certificate"), "\(refused)")
                let state = try await Self.open("\(base)&sslcert=\(client.certificate)&sslkey=\(client.key)")
                #expect(try await Self.isEncrypted(state))
                await state.close()
            }
        }
    }

    @Test func settingsAreReadAsLibpqReadsThemAndBadOnesAreNamed() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-tls-\(UUID().uuidString).crt")
        try Data("not checked here".utf8).write(to: root)
        chmod(root.path, 0o644)
        defer { try? FileManager.default.removeItem(at: root) }
        let base = "postgresql://u:s3cret@db.example/mirror"
        let noHome = PostgresServer.noHome
        func tls(_ url: String, _ environment: [String: String] = [:]) throws -> PostgresTLS {
            try PostgresLocation(url, environment: environment.merging(noHome) { given, _ in given }).tls
        }
        #expect(try tls(base).mode == .prefer)
        #expect(try tls(base).roots == nil)
        let required = try tls("\(base)?sslmode=require&sslrootcert=\(root.path)")
        #expect(required.mode == .require && required.verifiesCertificate && !required.verifiesHostName)
        #expect(try tls("\(base)?sslmode=require").mode == .require)
        #expect(try tls("\(base)?sslrootcert=system").mode == .verifyFull)
        #expect(try tls(base, ["PGSSLMODE": "verify-full", "PGSSLROOTCERT": root.path]).roots == .file(root.path))
        #expect(try tls("\(base)?sslmode=disable", ["PGSSLMODE": "verify-full"]).mode == .disable)
        #expect(try PostgresLocation("\(base)?sslmode=verify-full&sslrootcert=\(root.path)", environment: noHome).description
            == "postgresql://u@db.example:5432/mirror?sslmode=verify-full")
        // A password holding `?`, `/` or `=` is hidden whole, whatever follows it.
        #expect(PostgresLocation.redacted("postgresql://u:pa?s3cret@h.example/db") == "postgresql://u:***@h.example/db")
        #expect(PostgresLocation.redacted("postgresql://u:p?a=s3cret@h.example/db?sslmode=require&password=s3cret")
            == "postgresql://u:***@h.example/db?sslmode=require&password=***")
        #expect(PostgresLocation.redacted("postgresql://u:p/s3cret@h.example/db") == "postgresql://u:***@h.example/db")
        for (url, expected) in [
            ("\(base)?sslmode=verify-full", "needs the CA certificates to trust"),
            ("\(base)?sslmode=verify-ca&sslrootcert=/nonexistent/root.crt", "sslrootcert /nonexistent/root.crt cannot be read"),
            ("\(base)?sslmode=always", "sslmode 'always' is not one of disable, prefer, require, verify-ca, verify-full"),
            ("\(base)?sslmode=require&sslrootcert=system", "sslrootcert=system needs sslmode=verify-full"),
            ("\(base)?sslcert=\(root.path)", "sslcert and sslkey go together"),
            ("\(base)?sslpassword=x", "the option 'sslpassword' is not supported"),
            // libpq's way of giving the password, refused by name, its value not repeated.
            ("\(base)?sslmode=require&password=s3cret", "?sslmode=require&password=***': the option 'password' is not supported"),
            ("\(base)?sslmode=", "sslmode is empty"),
            ("\(base)?sslcert=\(root.path)&sslkey=\(root.path)", "is open to others (mode 644)"),
        ] {
            let error = #expect(throws: MirrorError.self) { _ = try PostgresLocation(url, environment: noHome) }
            #expect(error?.description.contains(expected) == true, "\(String(describing: error))")
            #expect(error?.description.contains("s3cret") == false)
        }
    }
}
