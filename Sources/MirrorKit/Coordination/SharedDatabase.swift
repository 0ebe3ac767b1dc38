import Logging

/// The state and the coordinator of work that workers share through one database, as a
/// ``SharedDatabaseConnector`` opens them.
package struct SharedDatabase: Sendable {
    package var state: any MirrorStore
    package var coordinator: any WorkCoordinator
    /// Lets go of the database's connections; the last thing done with it.
    package var close: @Sendable () async -> Void

    package init(state: any MirrorStore, coordinator: any WorkCoordinator, close: @escaping @Sendable () async -> Void) {
        self.state = state
        self.coordinator = coordinator
        self.close = close
    }
}

/// Opens the database that workers share (`--state postgresql://…`).
///
/// MirrorKit holds no database client of its own: PostgreSQL's (with SwiftNIO and its TLS) is
/// linked only into the executable that uses it, `mirror-postgresql`, so the `mirror` most runs
/// use carries none of it in memory.
package protocol SharedDatabaseConnector: Sendable {
    /// Connects to `location` and brings its schema to the latest version; `readOnly` (for
    /// `mirror status`), changes nothing and refuses a database without the schema. The API
    /// budget read and saved is `budgetGroup`'s (nil: this host's).
    func open(
        _ location: PostgresLocation, leaseDuration: Duration, budgetGroup: String?, readOnly: Bool, logger: Logger
    ) async throws(MirrorError) -> SharedDatabase
}
