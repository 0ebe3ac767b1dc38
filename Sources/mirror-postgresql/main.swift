import MirrorCommandLine
import MirrorPostgreSQL

// `mirror` with PostgreSQL's client linked in: what `mirror --state postgresql://…` becomes.
await CommandLineEntry.main(connector: PostgresConnector())
