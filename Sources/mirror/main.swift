import MirrorCommandLine

// A shared state (--state postgresql://…) is handed over to mirror-postgresql.
await CommandLineEntry.main(connector: nil)
