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
        for item in components.queryItems ?? [] where !(item.name == "sslmode" && item.value == "disable") {
            throw .configuration("state '\(Self.redacted(text))': the option '\(item.name)' is not supported (only sslmode=disable; use a local socket tunnel or a trusted network)")
        }
        self.host = host
        port = components.port ?? 5432
        self.user = user.percentDecoded ?? user
        password = (components.password?.percentDecoded) ?? environment["PGPASSWORD"]
        self.database = database.percentDecoded ?? database
    }

    package var description: String {
        "postgresql://\(user)@\(host):\(port)/\(database)"
    }

    /// `text` with any password in it replaced by `***`.
    static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@"), let scheme = text.firstRange(of: "://"), scheme.upperBound < at else { return text }
        let credentials = text[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}
