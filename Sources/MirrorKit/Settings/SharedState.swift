extension Sharing {
    /// Workers sharing the mirror through one PostgreSQL database.
    package init(state: PostgresState, coordinator: PostgresCoordinator, maxPerHost: Int) {
        self.init(state: state as any MirrorStore, coordinator: coordinator as any WorkCoordinator, maxPerHost: maxPerHost)
    }
}
