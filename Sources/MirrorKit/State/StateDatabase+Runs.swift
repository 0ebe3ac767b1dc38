import FoundationEssentials

/// One finished run: what it did and how it ended. Kept in the state database so that
/// `mirror status` can show the last run when none is active, and the metrics file can say when a
/// run last succeeded.
package struct RunRecord: Sendable, Codable, Equatable {
    /// A file the run could not mirror; the next run tries it again.
    package struct FailedFile: Sendable, Codable, Equatable {
        var url: String
        package var problem: String
    }

    package var source: String
    package var startedAt: Date
    package var endedAt: Date
    package var exitStatus: Int32
    /// The summary line the run printed.
    package var line: String
    var filesWanted: Int
    var filesDownloaded: Int
    var bytesDownloaded: Int64
    var filesPresent: Int
    var filesUnchanged: Int
    package var filesRemoved: Int
    package var filesDeferred: Int
    package var filesFailed: Int
    /// The first ``maxFailuresKept`` failures.
    package var failures: [FailedFile]
    /// What stopped the listing or feed early, if anything did.
    package var stoppedBy: String?
    var interrupted: Bool
    /// For the record of a run of several sources as a whole (kept for the metrics file's last
    /// success): its sources, each of which has a record of its own. Nil for a source's record.
    package var sources: [String]? = nil
    /// The first ``maxFailuresKept`` URLs this run found removed upstream (not asked for again);
    /// nil in records of older versions.
    package var removed: [String]? = nil

    static let maxFailuresKept = 100

    /// Bytes per second over the whole run.
    package var bytesPerSecond: Double {
        let seconds = endedAt.timeIntervalSince(startedAt)
        return seconds > 0 ? Double(bytesDownloaded) / seconds : 0
    }
}

extension StateDatabase {
    /// Runs kept: enough to see a pattern, few enough that the table never grows.
    package static let runsKept = 200

    package func recordRun(_ run: RunRecord) throws(MirrorError) {
        let json = (try? Self.runEncoder.encode(run)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        try inTransaction { () throws(SQLiteError) in
            try db.execute(
                "INSERT INTO runs (source, started_at, ended_at, exit_status, record) VALUES (?1, ?2, ?3, ?4, ?5)",
                [.text(run.source), .integer(Int64(run.startedAt.timeIntervalSince1970)),
                 .integer(Int64(run.endedAt.timeIntervalSince1970)),
                 .integer(Int64(run.exitStatus)), .text(json)])
            try db.execute(
                "DELETE FROM runs WHERE id <= (SELECT max(id) FROM runs) - ?1", [.integer(Int64(Self.runsKept))])
        }
    }

    /// The last run of each source that ran here, the most recent first.
    package func lastRuns() throws(MirrorError) -> [RunRecord] {
        try read("SELECT record FROM runs WHERE id IN (SELECT max(id) FROM runs GROUP BY source) ORDER BY id DESC") {
            row throws(SQLiteError) in try row.text("record")
        }.compactMap { try? Self.runDecoder.decode(RunRecord.self, from: Data($0.utf8)) }
    }

    /// The last run of `source`.
    package func lastRun(of source: String) throws(MirrorError) -> RunRecord? {
        guard let text = try read("SELECT record FROM runs WHERE source = ?1 ORDER BY id DESC LIMIT 1", [.text(source)], as: {
            row throws(SQLiteError) in try row.text("record")
        }).first
        else { return nil }
        return try? Self.runDecoder.decode(RunRecord.self, from: Data(text.utf8))
    }

    /// When a run of `source` last ended with status 0.
    package func lastSuccess(of source: String) throws(MirrorError) -> Date? {
        // max() of no rows is NULL: never succeeded.
        try read("SELECT max(ended_at) AS ended FROM runs WHERE source = ?1 AND exit_status = 0", [.text(source)]) {
            row throws(SQLiteError) in try row.optionalInteger("ended")
        }.first?.map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    package static let runEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    package static let runDecoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}
