/// How the rows of finished files are grouped into transactions: a group is written when it has
/// `limit` rows or when its first row has waited `latency`, whichever comes first.
///
/// A transaction is most of what a small file's row costs (the pages it changes are written to
/// the log again at every commit). The wait is short beside a file's download and is paid while
/// the run goes on; a kill loses at most a group's rows, never a file: each named file carries the
/// record its row is made from until the row is written, and the next run records it from there
/// without a request (see ``JobRunner/adoptUnrecorded(_:)``), a new version saved beside a held
/// one (`name(1).ext`) too (``JobRunner/adoptUnrecordedVersions(of:besides:)``).
package struct RecordGrouping: Sendable {
    package var limit: Int
    package var latency: Duration
    /// What `latency` is waited on: tests move it themselves.
    package var clock: any RunClock

    package init(limit: Int = 64, latency: Duration = .milliseconds(10), clock: any RunClock = SystemClock()) {
        precondition(limit > 0, "a group holds at least one row")
        self.limit = limit
        self.latency = latency
        self.clock = clock
    }
}

extension StateDatabase {
    /// Groups the rows of finished files as `grouping` says from now on.
    package func groupRecords(_ grouping: RecordGrouping) {
        recordGrouping = grouping
    }

    /// Records `file` as its item's newest version (replacing whatever was recorded for its path),
    /// and returns once the row is written: with the rows of the files that finish about the same
    /// time, in one transaction (see ``RecordGrouping``). Anything else asked of the database
    /// meanwhile writes the group first, so it sees the row.
    package func record(_ file: MirroredFile) async throws(MirrorError) {
        let failure: MirrorError? = await withCheckedContinuation { reply in
            waitingRecords.append(WaitingRecord(file: file, reply: reply))
            if waitingRecords.count >= recordGrouping.limit {
                writeWaitingRecords()
            } else if waitingRecords.count == 1 {
                let (group, grouping) = (recordGroupsWritten, recordGrouping)
                Task {
                    try? await grouping.clock.sleep(for: grouping.latency)
                    // Written already when it filled, or when something else was asked meanwhile.
                    if recordGroupsWritten == group { writeWaitingRecords() }
                }
            }
        }
        if let failure { throw failure }
    }

    /// Writes the rows waiting for their group, in one transaction, and tells each caller.
    func writeWaitingRecords() {
        guard !waitingRecords.isEmpty else { return }
        let group = waitingRecords
        waitingRecords = []
        recordGroupsWritten += 1
        let now = Self.now()
        if group.count > 1 {
            do throws(SQLiteError) {
                try db.transaction { () throws(SQLiteError) in
                    for record in group { try db.execute(Self.recordStatement, Self.recordArguments(record.file, now: now)) }
                }
                for record in group { record.reply.resume(returning: nil) }
                return
            } catch {
                // A row the database refuses (a constraint, a trigger) must not fail the others:
                // each is tried on its own, and only its caller hears of it.
            }
        }
        for record in group {
            do throws(SQLiteError) {
                try db.execute(Self.recordStatement, Self.recordArguments(record.file, now: now))
                record.reply.resume(returning: nil)
            } catch {
                record.reply.resume(returning: .stateDatabase(path: path, problem: "\(error)"))
            }
        }
    }
}

/// A finished file's row waiting for its group, and the caller waiting for the row. A class:
/// every lookup meanwhile looks through the group (see ``StateDatabase/fate(of:url:)``), and a
/// tuple of a file's twelve fields was copied, each field retained and released, at every look.
final class WaitingRecord: Sendable {
    let file: MirroredFile
    let reply: CheckedContinuation<MirrorError?, Never>

    init(file: MirroredFile, reply: CheckedContinuation<MirrorError?, Never>) {
        self.file = file
        self.reply = reply
    }
}
