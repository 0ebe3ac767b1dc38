import FoundationEssentials

/// What `new-file` mode adds: the mirror's copy of an item is asked after again, and a changed
/// file is kept beside the old one, but the same bytes are never saved twice.
extension JobRunner {
    /// What the mirror holds of `job`'s item (its newest version, when the file is still there
    /// or the user keeps deleted files deleted, else the job's own download a killed run left
    /// unrecorded; in `new-file` mode, newer versions a killed run left unrecorded beside it),
    /// whether its URL is known removed upstream, whether the newest version recorded is gone
    /// from the disk (deleted by hand: fetching it again restores it, unless deleted files are
    /// kept deleted), and, when nothing is held, whether something else has the job's name.
    func heldCopy(for job: MirrorJob) async throws(MirrorError) -> (held: MirroredFile?, removed: Bool, missing: Bool, nameTaken: Bool) {
        let (latest, removed) = try await state.fate(of: job.item, url: job.url)
        guard let latest else {
            let (adopted, taken) = try await adoptUnrecorded(job)
            return (adopted, removed, false, taken)
        }
        let present = try directory.fileExists(latest.path)
        if !present, keepDeleted { return (latest, removed, true, false) }
        if mode == .newFile {
            if let newest = try await adoptUnrecordedVersions(of: job, besides: latest) { return (newest, removed, false, true) }
            // Whether the name is taken is a skip-if-exists question.
            return present ? (latest, removed, false, true) : (nil, removed, true, false)
        }
        if present { return (latest, removed, false, true) }
        let (adopted, taken) = try await adoptUnrecorded(job)
        return (adopted, removed, true, taken)
    }

    /// Where the newest version of `job`'s item was, when it is gone (deleted by hand) while an
    /// older version of the item has `job`'s name: a new-file run kept both, a skip-if-exists run
    /// now restores the newest where it was, rather than take the name for somebody else's file
    /// and leave the mirror shrunk. Nil otherwise.
    func missingNewestBesideAnOlderVersion(of job: MirrorJob) async throws(MirrorError) -> String? {
        guard !keepDeleted, let latest = try await state.fate(of: job.item, url: job.url).latest,
              latest.path != job.relativePath, try !directory.fileExists(latest.path),
              try await rowsByPath(of: job)[job.relativePath] != nil
        else { return nil }
        return latest.path
    }

    /// The file at `job`'s name when it is this job's own download, named and not recorded (a kill
    /// came between the two): recorded now, rather than fetched again and saved beside itself.
    /// Also whether anything has the name.
    func adoptUnrecorded(_ job: MirrorJob) async throws(MirrorError) -> (file: MirroredFile?, nameTaken: Bool) {
        guard let occupant = try directory.occupant(of: job.relativePath) else { return (nil, false) }
        guard let (size, record, url) = ownDownload(occupant, of: job) else { return (nil, true) }
        let found = Unrecorded(path: job.relativePath, size: size, record: record, url: url)
        if try await isRecorded(found, among: rowsByPath(of: job)) {
            await finishCommit(of: found, job)
            return (nil, true)
        }
        return (try await adopt(found, of: job), true)
    }

    /// A file carrying the record of `job`'s download: named, and not recorded unless a kill
    /// came between its row and the record's removal.
    struct Unrecorded: Sendable {
        var path: String
        var size: Int64
        var record: CommitRecord
        /// Which of the job's URLs the record is of: its own, or the mirror it was fetched from.
        var url: String
    }

    /// The new versions of `job`'s file that runs killed before recording them saved beside
    /// `latest`: recorded now, the last as the newest, rather than fetched again and saved a
    /// second time under the next free name. Nil when there are none.
    ///
    /// A new version takes the first free name of the run `name.ext`, `name(1).ext`…: below
    /// `latest`'s when a version was deleted by hand, `latest`'s own when the newest was. Names
    /// freed after the kill (another file deleted) leave gaps below it. So every name up to
    /// `latest`'s is looked at (past ``freeNamesSkippedToTheNewest`` free ones in a row, the
    /// search goes on from `latest`'s), and past it the names up to
    /// ``freeNamesEndingTheSearch`` free ones in a row. The state is asked about a name only
    /// when its file carries this URL's record: a plain new-file run costs no query more than
    /// before, and no group of rows is written early.
    func adoptUnrecordedVersions(of job: MirrorJob, besides latest: MirroredFile) async throws(MirrorError) -> MirroredFile? {
        let latestNumber = MirrorDirectory.versionNumber(of: latest.path, among: job.relativePath) ?? 0
        var found: [Unrecorded] = []
        var freeInARow = 0
        var freeBelow = 0
        var number = 0
        // A newest numbered Int.max (a feed's odd name) ends the search there, not in an overflow.
        while number < Int.max {
            let path = number == 0 ? job.relativePath : MirrorDirectory.numbered(job.relativePath, number)
            guard let occupant = try directory.occupant(of: path) else {
                // Free names at or below the newest's say nothing of what is past it.
                if number > latestNumber {
                    freeInARow += 1
                    if freeInARow >= Self.freeNamesEndingTheSearch { break }
                } else {
                    freeBelow += 1
                    if freeBelow >= Self.freeNamesSkippedToTheNewest, number < latestNumber {
                        // A newest far up the run (`name(20240131).ext`: a name the file had of
                        // its own) is not reached one name at a time.
                        number = latestNumber
                        freeBelow = 0
                        continue
                    }
                }
                number += 1
                continue
            }
            (freeInARow, freeBelow) = (0, 0)
            if let (size, record, url) = ownDownload(occupant, of: job) { found.append(Unrecorded(path: path, size: size, record: record, url: url)) }
            number += 1
        }
        guard !found.isEmpty else { return nil }
        let rows = try await rowsByPath(of: job)
        var newest: MirroredFile?
        for file in found {
            if try await isRecorded(file, among: rows) {
                await finishCommit(of: file, job)
            } else {
                newest = try await adopt(file, of: job)
            }
        }
        return newest
    }

    /// Free names in a row, past the newest version's, after which no version is looked for:
    /// a gap of one or two is a file deleted since, more is the end of the versions.
    static let freeNamesEndingTheSearch = 3

    /// Free names in a row, below the newest version's, after which the search goes on from the
    /// newest's. A version is named the first free name, so every name below it was taken then:
    /// what is given up is a version below a gap this long that files deleted since the kill
    /// opened.
    static let freeNamesSkippedToTheNewest = 64

    /// The recorded versions of `job`'s item, by path.
    private func rowsByPath(of job: MirrorJob) async throws(MirrorError) -> [String: MirroredFile] {
        Dictionary(try await state.versions(of: job.item).map { ($0.path, $0) }, uniquingKeysWith: { $1 })
    }

    /// Whether `file` is the version recorded under its name, its record left on by a kill that
    /// came after its row: the same size, and the URL and validators the record has, or, when a
    /// later answer changed the row's, the same MD5. A row of another file under the name (a
    /// version deleted by hand, whose name a new one took) is not it. When nothing tells them
    /// apart (no MD5 recorded, a file that cannot be read), the file is taken for the recorded
    /// one: at worst a new version is fetched again, never an old one made the newest.
    private func isRecorded(_ file: Unrecorded, among rows: [String: MirroredFile]) async throws(MirrorError) -> Bool {
        guard let row = rows[file.path], row.bytes == file.size else { return false }
        if file.record.isFor(row.url), row.etag == file.record.etag, row.lastModified == file.record.lastModified { return true }
        guard let recordedMD5 = row.md5 else { return true }
        let (directory, path) = (directory, file.path)
        guard let md5 = try await BlockingIO.run({ () throws(MirrorError) in try directory.md5(of: path) }) else { return true }
        return md5 == recordedMD5
    }

    /// Finishes the commit of a recorded version that still carries its record: a kill came after
    /// its row and before the record was taken off, and so before the hook was told of it (the
    /// commit tells it last). The record goes, and the file gets what the commit gives it after
    /// the row. Only once this run took the record off: a record that stays (a file this user may
    /// not change) would have the hook told again at every run, and one gone meanwhile was taken
    /// off by whoever finished the commit. A dry run changes nothing.
    func finishCommit(of file: Unrecorded, _ job: MirrorJob) async {
        guard plan == nil, directory.removeAttribute(PartialStore.attribute, of: file.path) else { return }
        logger.info("\(file.path) was recorded by a run that stopped before finishing with it; finished now")
        await dateAndAnnounce(file, of: job)
    }

    /// What the commit does once the record is off, for a file whose commit a kill cut short:
    /// the server's date on it (a build before the date went on with the name did it only here),
    /// and the hook told of it, once.
    private func dateAndAnnounce(_ file: Unrecorded, of job: MirrorJob) async {
        if let date = file.record.lastModified.flatMap({ HTTPDate.parse($0) }) { directory.setModificationDate(date, of: file.path) }
        await announce(file.path, url: file.url, item: job.item, bytes: file.size)
    }

    /// The occupant's size, record and URL when it is `job`'s own download, named and not
    /// recorded: it carries the record of one of `job`'s URLs (its own, or a mirror the file was
    /// fetched from when that failed), and has the length that record says.
    private func ownDownload(_ occupant: (size: Int64?, record: CommitRecord?), of job: MirrorJob) -> (Int64, CommitRecord, String)? {
        guard let size = occupant.size, let record = occupant.record, let url = job.sources.first(where: record.isFor),
              size > 0, record.length.map({ $0 == size }) ?? true
        else { return nil }
        return (size, record, url)
    }

    /// Records `found` as `job`'s newest version, from the record it carries.
    private func adopt(_ found: Unrecorded, of job: MirrorJob) async throws(MirrorError) -> MirroredFile {
        let (path, size, record) = (found.path, found.size, found.record)
        let file = MirroredFile(
            path: path, item: job.item, source: source, url: found.url, etag: record.etag,
            lastModified: record.lastModified, bytes: size, md5: nil, version: job.release?.version,
            updated: job.release?.updated)
        try await state.record(file)
        // A dry run records into its copy of the state, and changes nothing on the disk.
        guard plan == nil else { return file }
        directory.removeAttribute(PartialStore.attribute, of: path)
        logger.info("\(path) was saved by a run that stopped before recording it; recorded now")
        // The hook is told once: the commit tells it only after the row.
        await dateAndAnnounce(found, of: job)
        return file
    }

    /// The version of `item` whose bytes `file` has, if one has: the same strong ETag and size,
    /// else the same MD5 (hashed now where it was not known, and remembered).
    func sameBytes(_ file: FetchedFile, as item: String) async throws(MirrorError) -> MirroredFile? {
        let candidates = try await state.versions(of: item).reversed().filter { $0.bytes == file.length }
        guard !candidates.isEmpty else { return nil }
        if let etag = file.etag, !etag.hasPrefix("W/"), let same = candidates.first(where: { $0.etag == etag }) {
            return same
        }
        guard let md5 = try await fetchedMD5(file) else { return nil }
        for var candidate in candidates {
            if candidate.md5 == nil {
                let directory = directory
                let path = candidate.path
                candidate.md5 = try await BlockingIO.run { () throws(MirrorError) in try directory.md5(of: path) }
                if let known = candidate.md5 { try await state.setMD5(known, of: path) }
            }
            if candidate.md5 == md5 { return candidate }
        }
        return nil
    }

    /// The fetched file's MD5: hashed as it arrived, or read back from its partial.
    private func fetchedMD5(_ file: FetchedFile) async throws(MirrorError) -> String? {
        if let md5 = file.md5 { return md5 }
        let partials = partials
        let url = file.url
        return try await BlockingIO.run { () throws(MirrorError) -> String? in
            do throws(DigestError) {
                return try partials.md5(for: url)
            } catch {
                throw .digest(error.description)
            }
        }
    }

    /// Submits to `session` the items this runner's source mirrored before and this run has not
    /// asked for: in `new-file` mode every one, least recently confirmed first (so runs cut short
    /// by a deadline take turns), each getting a conditional GET and a changed file a new
    /// version; in `skip-if-exists` mode those whose file is gone from the disk, so the mirror
    /// never shrinks silently (unless deleted files are kept deleted). One `fstatat` per file,
    /// no request for those present. Files recorded before sources were, in `folders`, are taken
    /// for this source's.
    func revalidateTheRest(
        in session: JobSession, claiming folders: [String], restoring: @Sendable (String) -> Bool = { _ in true }
    ) async {
        guard let source else { return }
        switch mode {
        case .newFile: await revalidate(source, in: session, claiming: folders)
        // Shared workers leave it: a sweep no claim divides would have them fetch the same files.
        case .skipIfExists where !keepDeleted && coordinator == nil:
            await restoreMissing(source, in: session, claiming: folders, restoring: restoring)
        case .skipIfExists: return
        }
    }

    private func revalidate(_ source: String, in session: JobSession, claiming folders: [String]) async {
        await sweep(in: session) { position throws(MirrorError) in
            try await state.filesToRevalidate(source: source, claiming: folders, after: position, limit: sweepPageSize)
        } submitting: { file throws(MirrorError) in
            // A file confirmed by this sweep comes round again at the end: it is handled by then.
            guard !handled.contains(file.latest.item) else { return nil }
            if keepDeleted, try !directory.fileExists(file.latest.path) { return nil }
            // A new version is named after the file, not the newest version: name(2), not name(1)(1).
            let named = MirrorDirectory.baseName(of: file.latest.path, among: file.paths)
            return MirrorJob(url: file.latest.url, relativePath: named, item: file.latest.item)
        }
    }

    private func restoreMissing(
        _ source: String, in session: JobSession, claiming folders: [String], restoring: @Sendable (String) -> Bool
    ) async {
        await sweep(in: session) { position throws(MirrorError) in
            try await state.latestFiles(source: source, claiming: folders, after: position, limit: sweepPageSize)
        } submitting: { file throws(MirrorError) in
            guard !handled.contains(file.item), restoring(file.path), try !directory.fileExists(file.path) else { return nil }
            return MirrorJob(url: file.url, relativePath: file.path, item: file.item)
        }
    }

    /// Submits to `session`, as sweep jobs, what `job` makes of each file of the sweep `page` reads
    /// (nil: nothing for it). A failure halts the session.
    private func sweep<File>(
        in session: JobSession, _ page: (_ after: SweepPosition?) async throws(MirrorError) -> SweepPage<File>,
        submitting job: (File) throws(MirrorError) -> MirrorJob?
    ) async {
        do throws(MirrorError) {
            try await SweepPage.read(page) { files in
                for file in files where !session.isHalted && !Task.isCancelled {
                    let made: MirrorJob?
                    do throws(MirrorError) {
                        made = try job(file)
                    } catch {
                        session.halt(error)
                        return false
                    }
                    guard var made else { continue }
                    made.isSweep = true
                    await session.submit(made, forced: false)
                }
                return !session.isHalted && !Task.isCancelled
            }
        } catch {
            session.halt(error)
        }
    }
}
