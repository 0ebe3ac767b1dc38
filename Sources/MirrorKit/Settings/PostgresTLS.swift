import FoundationEssentials
import Glibc

/// TLS to the PostgreSQL state as libpq users write it: `sslmode`, `sslrootcert`, `sslcert` and
/// `sslkey` in the URL, else `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT` and `PGSSLKEY`, else
/// libpq's defaults (`prefer`, and the files in `~/.postgresql/` when they exist).
package struct PostgresTLS: Sendable, Equatable {
    package enum Mode: String, Sendable, CaseIterable {
        /// No TLS.
        case disable
        /// TLS when the server offers it, unverified; else none.
        case prefer
        /// TLS or no connection; the server's certificate checked only with a root certificate.
        case require
        /// TLS, the server's certificate signed by the root certificate.
        case verifyCA = "verify-ca"
        /// That, and the certificate names the host connected to.
        case verifyFull = "verify-full"
    }

    /// Where the certificates to trust come from.
    package enum Roots: Sendable, Equatable {
        /// A PEM file of CA certificates.
        case file(String)
        /// The system's trusted roots (`sslrootcert=system`).
        case system
    }

    package var mode: Mode
    /// Nil when the server's certificate is not checked.
    package var roots: Roots?
    /// A client certificate (PEM), for servers that ask for one, and its key.
    package var certificate: String?
    package var key: String?

    /// The URL options this reads.
    static let options = ["sslmode", "sslrootcert", "sslcert", "sslkey"]

    /// Whether the server's certificate must be valid, and its name too.
    package var verifiesCertificate: Bool { roots != nil }
    package var verifiesHostName: Bool { mode == .verifyFull }

    init(options: [String: String], environment: [String: String]) throws(MirrorError) {
        // As libpq: an empty sslmode in the URL is an error (a script's unset variable must not
        // quietly mean the default); an empty file option, or an empty variable, means the default.
        if options["sslmode"]?.isEmpty == true { throw .configuration("sslmode is empty") }
        func setting(_ option: String, _ variable: String) -> String? {
            (options[option] ?? environment[variable]).flatMap { $0.isEmpty ? nil : $0 }
        }
        let modeText = setting("sslmode", "PGSSLMODE")
        if let modeText, Mode(rawValue: modeText) == nil {
            throw .configuration("sslmode '\(modeText)' is not one of \(Mode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        mode = modeText.flatMap(Mode.init(rawValue:)) ?? .prefer
        let folder = HomeDirectory.expandingTilde(in: "~/.postgresql/", environment: environment)
        let home = folder.hasPrefix("~") ? nil : folder
        func readable(_ path: String, _ what: String) throws(MirrorError) -> String {
            guard access(path, R_OK) == 0 else {
                throw .configuration("\(what) \(path) cannot be read: \(String(cString: strerror(errno)))")
            }
            return path
        }

        let rootText = setting("sslrootcert", "PGSSLROOTCERT")
        if rootText == "system" {
            // As libpq 16: the system's roots vouch for any name, so only the host's name makes them mean anything.
            if modeText != nil, mode != .verifyFull {
                throw .configuration("sslrootcert=system needs sslmode=verify-full (the system's roots vouch for anyone's certificate), not \(mode.rawValue)")
            }
            mode = .verifyFull
            roots = .system
        } else if let rootText {
            roots = mode == .disable || mode == .prefer ? nil : .file(try readable(rootText, "sslrootcert"))
        } else if let home, mode != .disable, mode != .prefer, access(home + "root.crt", R_OK) == 0 {
            roots = .file(home + "root.crt")
        }
        if (mode == .verifyCA || mode == .verifyFull) && roots == nil {
            throw .configuration(
                "sslmode=\(mode.rawValue) needs the CA certificates to trust: give sslrootcert=FILE (or put them in ~/.postgresql/root.crt), or sslrootcert=system for the system's")
        }
        // As libpq, `require` with a root certificate checks the server's certificate against it
        // (``verifiesCertificate``), though it stays `require` in what is printed.

        let certificateText = setting("sslcert", "PGSSLCERT")
        let keyText = setting("sslkey", "PGSSLKEY")
        switch (certificateText, keyText) {
        case (let certificate?, let key?):
            self.certificate = try readable(certificate, "sslcert")
            self.key = try Self.privateKey(try readable(key, "sslkey"))
        case (nil, nil):
            if let home, mode != .disable, access(home + "postgresql.crt", R_OK) == 0, access(home + "postgresql.key", R_OK) == 0 {
                (certificate, key) = (home + "postgresql.crt", try Self.privateKey(home + "postgresql.key"))
            }
        default:
            throw .configuration("sslcert and sslkey go together: give both, the client certificate and its key")
        }
    }

    /// `path`, when it is a regular file of this user's (or root's) that no one else may use, as
    /// libpq demands of a private key: 0600 or less, or 0640 or less when root owns it.
    private static func privateKey(_ path: String) throws(MirrorError) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .configuration("sslkey \(path) cannot be read: \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .configuration("sslkey \(path) is not a file") }
        guard info.st_uid == getuid() || info.st_uid == 0 else {
            throw .configuration("sslkey \(path) belongs to another user: it must be this user's or root's")
        }
        let others = info.st_mode & (S_IRWXG | S_IRWXO)
        let allowed = info.st_uid == 0 ? mode_t(S_IRGRP) : 0
        guard others & ~allowed == 0 else {
            throw .configuration(
                "sslkey \(path) is open to others (mode \(String(info.st_mode & 0o777, radix: 8))): give it 0600 (0640 when root owns it)")
        }
        return path
    }
}
