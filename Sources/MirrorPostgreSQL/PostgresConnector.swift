import Logging
import MirrorKit

/// Opens a PostgreSQL state and the coordinator of the workers that share it.
package struct PostgresConnector: SharedDatabaseConnector {
    package init() {}

    package func open(
        _ location: PostgresLocation, leaseDuration: Duration, budgetGroup: String?, readOnly: Bool, logger: Logger
    ) async throws(MirrorError) -> SharedDatabase {
        let state = try await PostgresState(location, readOnly: readOnly, budgetGroup: budgetGroup, logger: logger)
        return SharedDatabase(
            state: state, coordinator: PostgresCoordinator(state: state, leaseDuration: leaseDuration),
            close: { await state.close() })
    }
}
