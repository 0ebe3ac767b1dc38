import FoundationEssentials

/// A PostgreSQL database named by a URL, `postgresql://user[:password]@host[:port]/database`, as
/// `--state` and the config's `state` take it. The password may instead come from `PGPASSWORD`;
/// it never appears in what mirror prints (``description`` leaves it out).
package struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: Int
    package var user: String
    package var password: String?
    package var database: String
    /// How the connection is encrypted and the server checked: libpq's `sslmode`, `sslrootcert`,
    /// `sslcert` and `sslkey`, from the URL or `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY`.
    package var tls: PostgresTLS

    /// Whether `text` names a PostgreSQL database rather than the default SQLite state.
    package static func isPostgres(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    /// Parses `text`; the error names what is wrong, without the password.
    package init(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(MirrorError) {
        guard Self.isPostgres(text), let components = URLComponents(string: text) else {
            throw .configuration("state '\(Self.redacted(text))' is not a postgresql://user@host/database URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw .configuration("state '\(Self.redacted(text))' names no host")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw .configuration("state '\(Self.redacted(text))' names no database (postgresql://user@host/database)")
        }
        guard let user = components.user ?? environment["PGUSER"], !user.isEmpty else {
            throw .configuration("state '\(Self.redacted(text))' names no user (postgresql://user@host/database)")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw .configuration("state '\(Self.redacted(text))' has port \(port), not 1 to 65535")
        }
        var options: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard PostgresTLS.options.contains(item.name) else {
                throw .configuration("state '\(Self.redacted(text))': the option '\(item.name)' is not supported (\(PostgresTLS.options.joined(separator: ", ")) are)")
            }
            options[item.name] = item.value ?? ""
        }
        do throws(MirrorError) {
            tls = try PostgresTLS(options: options, environment: environment)
        } catch {
            throw .configuration("state '\(Self.redacted(text))': \(error.description)")
        }
        self.host = host
        port = components.port ?? 5432
        self.user = user.percentDecoded ?? user
        password = (components.password?.percentDecoded) ?? environment["PGPASSWORD"]
        self.database = database.percentDecoded ?? database
    }

    package var description: String {
        "postgresql://\(user)@\(host):\(port)/\(database)" + (tls.mode == .prefer ? "" : "?sslmode=\(tls.mode.rawValue)")
    }

    /// `text` with any password in it replaced by `***`: the userinfo's (up to the last `@`, so
    /// that a password holding `/`, `?` or `@` is hidden whole), and the values of its query but
    /// the TLS options' (libpq takes `?password=` too, which mirror refuses by name).
    static func redacted(_ text: String) -> String {
        var head = ""
        var rest = Substring(text)
        if let scheme = text.firstRange(of: "://"), let at = text.lastIndex(of: "@"), scheme.upperBound < at {
            let credentials = text[scheme.upperBound..<at]
            if let colon = credentials.firstIndex(of: ":") {
                head = String(text[..<colon]) + ":***@"
                rest = text[text.index(after: at)...]
            }
        }
        guard let question = rest.firstIndex(of: "?") else { return head + rest }
        let items = rest[rest.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map { item in
            guard let equals = item.firstIndex(of: "="), !PostgresTLS.options.contains(String(item[..<equals])) else { return String(item) }
            return String(item[..<equals]) + "=***"
        }
        return head + rest[...question] + items.joined(separator: "&")
    }
}
