import FoundationEssentials
import Logging
import MirrorKit

enum LogSetup {
    /// Sets up swift-log for the process (once) and returns the logger commands use.
    static func bootstrap(quiet: Bool, verbose: Bool, format: LogFormat) -> Logger {
        // Quiet keeps only what went wrong: a retry that ended well is no news in cron mail.
        let level: Logger.Level = verbose ? .debug : (quiet ? .error : .warning)
        Console.use(format)
        LoggingSystem.bootstrap { _ in
            switch format {
            case .text: LineLogHandler(logLevel: level)
            case .json: JSONLogHandler(logLevel: level)
            }
        }
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

    /// A message is a sentence that says what its fields say: the fields are for JSON's readers.
    func log(event: LogEvent) {
        let prefix = event.level >= .warning ? "mirror: " : "mirror: [\(event.level)] "
        Console.printErrorLine((prefix + "\(event.message)").escapedForTerminal)
    }
}

/// One JSON object per message on standard error, for log shippers: `time` (ISO 8601 with
/// milliseconds, UTC), `level`, `message`, and the message's fields (`url`, `file`, `bytes`,
/// `status`, …) as top-level keys.
struct JSONLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.mapValues { "\($0)" }
        Console.printErrorLine(JSONLine.encode(level: "\(event.level)", message: "\(event.message)", fields: fields))
    }
}

/// A JSON object on one line, keys in a fixed order (time, level, message, then the fields
/// sorted). Strings are escaped by hand so that every character that could steer a terminal
/// (``escapedForTerminal``'s set, C1 and bidi controls included) is written as `\u` and the
/// object still decodes to exactly the text logged.
enum JSONLine {
    static func encode(level: String, message: String, fields: [String: String], time: Date = Date()) -> String {
        var pairs = [
            ("time", time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))),
            ("level", level),
            ("message", message),
        ]
        let reserved: Set = ["time", "level", "message"]
        pairs += fields.filter { !reserved.contains($0.key) }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return "{" + pairs.map { quote($0.0) + ":" + value($0.0, $0.1) }.joined(separator: ",") + "}"
    }

    /// A file a dry run would fetch: `{"url":…,"path":…,"bytes":…,"source":…}`, `bytes` where known.
    static func planned(_ file: PlannedFile) -> String {
        var pairs = [("url", quote(file.url)), ("path", quote(file.path))]
        if let bytes = file.bytes { pairs.append(("bytes", String(bytes))) }
        if file.missing { pairs.append(("missing", "true")) }
        if let source = file.source { pairs.append(("source", quote(source))) }
        return "{" + pairs.map { quote($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    /// `json` with every ``DisplayControl`` character (outside the JSON escapes it already has)
    /// written as a `\u` escape: valid JSON that decodes to the same text.
    static func escapingDisplayControls(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: DisplayControl.contains) else { return json }
        var result = ""
        for scalar in json.unicodeScalars {
            if DisplayControl.contains(scalar), scalar != "\n" {
                result += CFormat.string("\\u%04X", scalar.value)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Fields that are counts are written as JSON numbers, so a log shipper can sum and compare them.
    static let numericFields: Set = ["bytes", "received", "status", "exit_status", "files", "downloaded", "failed"]

    private static func value(_ key: String, _ text: String) -> String {
        guard numericFields.contains(key), let number = Int64(text) else { return quote(text) }
        return String(number)
    }

    static func quote(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if DisplayControl.contains(scalar) {
                    result += CFormat.string("\\u%04X", scalar.value)
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}
