import Logging

/// A kill between a file's state row and the rest of its commit (its record taken off, the hook
/// told) leaves a recorded file carrying its record, which a skip-if-exists run never looks at
/// again: it asks the state, finds the row, and passes on. So a run leaves a mark in `.mirror`
/// while it goes, the last file row there was when it began; the next run that finds the mark
/// finishes the commits of the files recorded past it.
extension JobRunner {
    /// The mark a run leaves while it goes (the last file row when it began), taken away at its end.
    static let runMark = "run-began-after-row"

    /// Finishes what a run cut short recorded, if the last run was cut short, and leaves this run's
    /// mark. A lone run only: shared workers recover each other's claims, and a dry run writes
    /// nothing. `runnerOf` gives the runner of the source a file was recorded by (its hook).
    func beginRun(runnerOf: (String?) -> JobRunner) async {
        guard plan == nil, coordinator == nil, let database = state as? StateDatabase else { return }
        let folder = directory.stateFolder
        if let mark = folder.contents(of: Self.runMark, limit: 64),
           let row = Int64(String(decoding: mark, as: UTF8.self).trimming(.spacesAndNewlines)),
           !(await finishCommits(recordedAfter: row, in: database, runnerOf: runnerOf)) {
            // The mark stays as it is: it covers this run's files too, and the next run tries again.
            return
        }
        do {
            // Not synced: the mark is for a killed process, whose written pages the kernel keeps.
            let row = try await database.lastFileRow()
            try folder.replaceContents(of: Self.runMark, with: Array("\(row)\n".utf8), durable: false)
        } catch {
            logger.warning("cannot leave the mark a run cut short would need (\(error)); files it recorded last may keep their record")
        }
    }

    /// Takes this run's mark away: it ended, whatever its outcome, with no commit half done.
    func endRun() {
        guard plan == nil, coordinator == nil, state is StateDatabase else { return }
        directory.stateFolder.remove(Self.runMark)
    }

    /// The files recorded past `row` that still carry their record: their commits end as a
    /// commit would have (the record off, the server's date, the hook told once). False when
    /// the state could not be read.
    ///
    /// A look at each file recorded past the mark: after a first run of 200,000 files killed near
    /// its end, 200,000 `stat`s and `getxattr`s, once.
    private func finishCommits(
        recordedAfter row: Int64, in database: StateDatabase, runnerOf: (String?) -> JobRunner
    ) async -> Bool {
        var after = row
        while true {
            let page: [StateDatabase.RecordedRow]
            do {
                page = try await database.files(recordedAfter: after, limit: 500)
            } catch {
                logger.warning("cannot read what the last run recorded (\(error)); its last files may keep their record")
                return false
            }
            for recorded in page {
                // The file recorded, as the row has it: its size, and the record of its URL.
                guard let occupant = try? directory.occupant(of: recorded.path), let size = occupant.size, size == recorded.bytes,
                      let record = occupant.record, record.isFor(recorded.url), record.length.map({ $0 == size }) ?? true
                else { continue }
                let job = MirrorJob(url: recorded.url, relativePath: recorded.path, item: recorded.item)
                let file = Unrecorded(path: recorded.path, size: size, record: record, url: recorded.url)
                await runnerOf(recorded.source).finishCommit(of: file, job)
            }
            guard let last = page.last, page.count == 500 else { return true }
            after = last.row
        }
    }
}
