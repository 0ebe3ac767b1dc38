import Foundation
import Logging

enum LogSetup {
    /// Sets up swift-log for the process (once) and returns the logger commands use.
    static func bootstrap(quiet: Bool, verbose: Bool) -> Logger {
        // Quiet keeps only what went wrong: a retry that ended well is no news in cron mail.
        let level: Logger.Level = verbose ? .debug : (quiet ? .error : .warning)
        LoggingSystem.bootstrap { _ in LineLogHandler(logLevel: level) }
        var logger = Logger(label: "mirror")
        logger.logLevel = level
        return logger
    }
}

/// One plain line per message on standard error, `mirror: …`, as cron mail should read; levels
/// below warning (only shown with --verbose) carry their level. Messages quote URLs and names as
/// they came from the network: ``Console`` escapes them, line breaks included, so one message is
/// always one line.
struct LineLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let prefix = event.level >= .warning ? "mirror: " : "mirror: [\(event.level)] "
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let details = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: " ")
        Console.printError(prefix + "\(event.message)" + details)
    }
}
