import Foundation
@testable import MirrorKit
@testable import MirrorPostgreSQL

/// A real PostgreSQL server of its own for a test: Debian's postgresql, `initdb` into a temporary
/// directory and the postmaster on a free loopback port, stopped (and its files removed) by
/// ``stop()``. Tests that need it are skipped with a message where PostgreSQL is not installed
/// (`scripts/setup` installs it; CI runs that).
final class PostgresServer: Sendable {
    static let binaries: URL? = {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return versions.compactMap(Int.init).sorted().reversed()
            .map { root.appendingPathComponent("\($0)/bin") }
            .first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("initdb").path) }
    }()

    static var isAvailable: Bool { binaries != nil }
    static let user = "mirror"

    let port: Int
    private let work: URL
    private let process: ChildProcess.Started

    /// A URL for `--state`, naming database `postgres`.
    var url: String { "postgresql://\(Self.user)@127.0.0.1:\(port)/postgres" }

    /// TLS for a server: its certificate and key, and the CA whose client certificates it
    /// demands (nil: it asks for none).
    struct TLS {
        var certificate: String
        var key: String
        var clientAuthority: String?
    }

    /// The password of ``user`` when the server asks for one (``init(tls:passwordMethod:)``).
    static let password = "pg-Pa55word"

    /// `passwordMethod`: pg_hba's method for connections over TCP (`scram-sha-256`, `md5`, or
    /// `password`, which asks for it in clear); nil trusts them.
    init(tls: TLS? = nil, passwordMethod: String? = nil) throws {
        guard let binaries = Self.binaries else { throw EventuallyTimeout(description: "PostgreSQL is not installed") }
        work = FileManager.default.temporaryDirectory.appendingPathComponent("postgres-\(UUID().uuidString)")
        let data = work.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: work.path)
        if getuid() == 0 { try Self.run("/usr/bin/chown", ["postgres:postgres", work.path]) }
        var passwordArguments: [String] = []
        if passwordMethod != nil {
            let file = work.appendingPathComponent("password")
            try Data(Self.password.utf8).write(to: file)
            passwordArguments = ["--pwfile", file.path]
        }
        let initdb = Self.asServer(binaries.appendingPathComponent("initdb").path, [
            "-D", data.path, "-A", "trust", "-U", Self.user, "--no-sync", "-E", "UTF8", "--locale", "C",
        ] + passwordArguments)
        try Self.run(initdb.executable, initdb.arguments)
        var settings: [String] = []
        if let tls {
            // The server reads its key only when the key is its own and no one else's.
            var copies: [String] = []
            for (name, file) in [("server.crt", tls.certificate), ("server.key", tls.key)] + (tls.clientAuthority.map { [("client-ca.crt", $0)] } ?? []) {
                let copy = work.appendingPathComponent(name).path
                try FileManager.default.copyItem(atPath: file, toPath: copy)
                chmod(copy, 0o600)
                if getuid() == 0 { try Self.run("/usr/bin/chown", ["postgres:postgres", copy]) }
                copies.append(copy)
            }
            settings += ["-c", "ssl=on", "-c", "ssl_cert_file=\(copies[0])", "-c", "ssl_key_file=\(copies[1])"]
            if copies.count > 2 {
                settings += ["-c", "ssl_ca_file=\(copies[2])"]
                let rules = "local all all trust\nhostssl all all 127.0.0.1/32 trust clientcert=verify-ca\n"
                let hba = data.appendingPathComponent("pg_hba.conf")
                try Data(rules.utf8).write(to: hba)
                if getuid() == 0 { try Self.run("/usr/bin/chown", ["postgres:postgres", hba.path]) }
            }
        }
        if let passwordMethod {
            let rules = "local all all trust\nhost all all 127.0.0.1/32 \(passwordMethod)\n"
            let hba = data.appendingPathComponent("pg_hba.conf")
            try Data(rules.utf8).write(to: hba)
            if getuid() == 0 { try Self.run("/usr/bin/chown", ["postgres:postgres", hba.path]) }
        }
        var attempt = 0
        while true {
            attempt += 1
            let port = try NginxServer.freePort()
            let postgres = Self.asServer(binaries.appendingPathComponent("postgres").path, [
                "-D", data.path, "-p", "\(port)", "-k", work.path, "-c", "listen_addresses=127.0.0.1",
                "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=100",
            ] + settings)
            let log = try FileHandle(forWritingTo: Self.createFile(work.appendingPathComponent("log")))
            let process = try ChildProcess(
                executable: postgres.executable, arguments: postgres.arguments,
                standardOutput: log.fileDescriptor, standardError: log.fileDescriptor
            ).start()
            try? log.close()
            // Listening is not ready: until recovery ends, connections are refused "starting up".
            if try NginxServer.waitForPort(port, while: process), Self.waitUntilReady(port: port, binaries: binaries) {
                self.port = port
                self.process = process
                return
            }
            _ = process.waitBlocking()
            guard attempt < 3 else {
                let text = (try? String(contentsOf: work.appendingPathComponent("log"), encoding: .utf8)) ?? ""
                throw EventuallyTimeout(description: "PostgreSQL did not start: \(text.suffix(800))")
            }
        }
    }

    /// Stops the server at once (its data is thrown away) and removes its files.
    func stop() async {
        process.signal(SIGQUIT)
        _ = await process.wait()
        try? FileManager.default.removeItem(at: work)
    }

    /// Runs `body` with a server of its own, stopped after, whatever `body` does.
    static func with<T>(tls: TLS? = nil, passwordMethod: String? = nil, _ body: (PostgresServer) async throws -> T) async throws -> T {
        let server = try await TestSupport.apart { try PostgresServer(tls: tls, passwordMethod: passwordMethod) }
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    private static func waitUntilReady(port: Int, binaries: URL) -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let ready = try? ChildProcess(
                executable: binaries.appendingPathComponent("pg_isready").path,
                arguments: ["-q", "-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", "postgres"]
            ).runBlocking()
            if ready == 0 { return true }
            usleep(50_000)
        }
        return false
    }

    /// `binary arguments` as the server's user: PostgreSQL refuses to run as root, so as root it
    /// runs as Debian's postgres user.
    private static func asServer(_ binary: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
        guard getuid() == 0 else { return (binary, arguments) }
        return ("/usr/bin/setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", binary] + arguments)
    }

    private static func createFile(_ url: URL) -> URL {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        if getuid() == 0 { chmod(url.path, 0o666) }
        return url
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let status = try ChildProcess(executable: executable, arguments: arguments).runBlocking()
        guard status == 0 else {
            throw EventuallyTimeout(description: "\(executable) \(arguments.joined(separator: " ")) exited \(status)")
        }
    }
}

extension PostgresServer {
    /// A home without ~/.postgresql: the defaults of the machine running the tests stay out.
    static let noHome = ["HOME": "/nonexistent-mirror-home"]

    /// The state at `url`, with `environment` (PGPASSWORD, PGSSL…) over a home without defaults.
    static func openState(_ url: String, environment: [String: String] = [:]) async throws -> PostgresState {
        try await PostgresState(
            try PostgresLocation(url, environment: environment.merging(noHome) { given, _ in given }), logger: TestSupport.logger)
    }

    /// The one-line error of opening `url`, or "connected".
    static func openingFailure(_ url: String, environment: [String: String] = [:]) async -> String {
        do {
            let state = try await openState(url, environment: environment)
            await state.close()
            return "connected"
        } catch {
            return "\(error)"
        }
    }
}

