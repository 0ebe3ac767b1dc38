import Logging

enum LogSetup {
    /// Sets up swift-log for the process (once) and returns the logger commands use.
    static func bootstrap(quiet: Bool, verbose: Bool) -> Logger {
        let level: Logger.Level = verbose ? .debug : .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "mirror")
        logger.logLevel = level
        return logger
    }
}
