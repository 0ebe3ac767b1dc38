import FoundationEssentials
import Logging
import Synchronization

extension JobRunner {
    /// The name a commit's file got (nil: skip-if-exists found it taken, and the file went), and
    /// the file open under it: the download's own descriptor, or the copy's when the name is on
    /// another file system.
    private struct NameGiven: Sendable {
        var name: String?
        var file: OpenFile
    }

    /// One file's commit, passed by reference: a job holds the frames of its commit through the
    /// wait for its row's transaction (most of the window does at once), and values passed by
    /// value take a copy in each (`commit` was 8 KiB a job when it held them all).
    private final class FileCommit: Sendable {
        let file: FetchedFile
        let job: MirrorJob
        let held: MirroredFile?
        let missing: Bool
        /// The partial's name in the partials' folder.
        let partName: String
        /// Carried by the named file until its state row is written: a kill in between leaves
        /// what the next run needs to record it without a request (see ``adoptUnrecorded(_:)``).
        let record: PartialRecord
        /// The name given, once it is.
        let named = Mutex<NameGiven?>(nil)

        init(_ file: FetchedFile, of job: MirrorJob, besides held: MirroredFile?, restoring missing: Bool, partName: String) {
            self.file = file
            self.job = job
            self.held = held
            self.missing = missing
            self.partName = partName
            record = PartialRecord(url: job.url, etag: file.etag, lastModified: file.lastModified, totalLength: file.length)
        }
    }

    /// Names the fetched file and records it: beside `held` (a new version) when there is one.
    @inline(never)
    func commit(_ file: FetchedFile, of job: MirrorJob, besides held: MirroredFile?, restoring missing: Bool) async -> Outcome {
        let partName: String
        if let named = file.partName {
            partName = named
        } else {
            do throws(DigestError) {
                partName = try partials.partName(for: job.url)
            } catch {
                return .halted(.digest(error.description))
            }
        }
        return await carryOut(FileCommit(file, of: job, besides: held, restoring: missing, partName: partName))
    }

    @inline(never)
    private func carryOut(_ commit: FileCommit) async -> Outcome {
        if let leases, let fence = commit.job.fence, !(await leases.mayTouch(commit.job.url)) {
            // Stopped past its lease and let go: the partial's name may be another worker's now.
            guard !Task.isCancelled else { return .interrupted }
            fence.markLost()
            return .handedOver
        }
        let giveName = nameGiver(commit)
        let synced: (opened: OpenFile, named: NameGiven?)
        do {
            synced = try await syncAndName(commit, giveName)
        } catch {
            return halting(error, commit.job)
        }
        let recorded: MirroredFile?
        do {
            recorded = try await writeRow(commit, synced, giveName)
        } catch {
            return unrecorded(commit, error)
        }
        guard let name = recorded?.path, let namedFile = commit.named.withLock({ $0?.file }) else { return .alreadyPresent }
        return await announceCommitted(commit, as: name, namedFile)
    }

    /// Makes the partial durable, and names it at once (on the same thread: one hop to the
    /// blocking queue and back per file, not two) unless fenced: then the name waits for the
    /// claim's transaction.
    @inline(never)
    private func syncAndName(
        _ commit: FileCommit, _ giveName: @escaping @Sendable (OpenFile) throws(MirrorError) -> NameGiven
    ) async throws(MirrorError) -> (opened: OpenFile, named: NameGiven?) {
        // What the blocking call needs, not the runner: a copy of the runner retains each of its
        // references, for every file.
        let (directory, partials, isFenced) = (directory, partials, commit.job.fence != nil)
        let (unrecordableFileSaid, logger) = (unrecordableFileSaid, logger)
        return try await BlockingIO.run { () throws(MirrorError) in
            let opened = try directory.synced(commit.partName, in: partials.folder) { descriptor in
                guard !PartialStore.attachForCommit(commit.record, toFile: descriptor) else { return }
                Self.sayOnceFileHasNoRecord(commit.job.relativePath, once: unrecordableFileSaid, logger: logger)
            }
            guard !isFenced else { return (opened, nil) }
            return (opened, try giveName(opened))
        }
    }

    /// Gives the synced partial its name. The server's date goes on with the name, before the
    /// row: once the row is written the file is the state's, and a kill before the rest of the
    /// commit leaves nobody to date it. (Like wget -N and gallery-dl: the file carries the
    /// server's date, not the download's.)
    private func nameGiver(_ commit: FileCommit) -> @Sendable (OpenFile) throws(MirrorError) -> NameGiven {
        let (directory, partials) = (directory, partials)
        let mode = commit.held == nil ? mode : .newFile
        let lastModified = commit.file.lastModified.flatMap { HTTPDate.parse($0) }
        return { opened throws(MirrorError) in
            var file = opened
            var reopening: FileSystemError?
            let name = try directory.name(commit.partName, from: partials.folder, as: commit.job.relativePath, mode: mode) { folder, name, copied in
                guard copied else { return }
                do throws(FileSystemError) {
                    file = OpenFile(try folder.openFile(name, .read))
                } catch {
                    reopening = error
                }
            }
            if let reopening { throw .fileSystem(reopening) }
            if name != nil, let lastModified { Directory.setModificationDate(lastModified, ofFile: file.descriptor) }
            return NameGiven(name: name, file: file)
        }
    }

    /// Writes the file's row (naming it first when fenced), in the transaction of the rows of
    /// the files around it.
    @inline(never)
    private func writeRow(
        _ commit: FileCommit, _ synced: (opened: OpenFile, named: NameGiven?),
        _ giveName: @escaping @Sendable (OpenFile) throws(MirrorError) -> NameGiven
    ) async throws(MirrorError) -> MirroredFile? {
        let source = source
        return try await state.recordNamed(fencedBy: commit.job.fence) { () async throws(MirrorError) -> MirroredFile? in
            // Fenced, the claim's row is locked meanwhile and the heartbeat renewing it
            // waits: long copies run on a queue apart (``BlockingIO/runApart(_:)``).
            let given: NameGiven
            if let named = synced.named {
                given = named
            } else {
                given = try await BlockingIO.run { () throws(MirrorError) in try giveName(synced.opened) }
            }
            guard let name = given.name else { return nil }
            commit.named.withLock { $0 = given }
            let (file, job) = (commit.file, commit.job)
            return MirroredFile(
                path: name, item: job.item, source: source, url: job.url, etag: file.etag, lastModified: file.lastModified,
                bytes: file.length, md5: file.md5, version: job.release?.version, updated: job.release?.updated)
        }
    }

    /// What a commit whose row failed leaves: a file named goes back to being a partial.
    @inline(never)
    private func unrecorded(_ commit: FileCommit, _ error: MirrorError) -> Outcome {
        let job = commit.job
        guard let given = commit.named.withLock({ $0 }), let name = given.name else {
            if case .claimTaken = error, let fence = job.fence {
                // The partial is left as it is: it may be the other worker's by now.
                fence.markLost()
                logger.warning("\(error); leaving \(job.url) to it", metadata: ["url": "\(job.url)"])
                return .handedOver
            }
            return halting(error, job)
        }
        // Unrecorded, the file would be fetched again under a second name by a new-file
        // run: it goes back to being a partial, whole, for the next run to commit.
        // The record a partial keeps, not the compact one a named file carries, put on before
        // the move so that no kill finds the partial without it: the next run commits it
        // whole, without fetching it again.
        let attached = PartialStore.attach(commit.record, toFile: given.file.descriptor)
        do {
            try directory.uncommit(name, backTo: partials.folder, as: commit.partName)
            // A partial's date says when it was last worked on (the partials' budget drops
            // the oldest first), not the server's date it got with its name. (Copied back
            // from another file system, it is a new file, dated now already.)
            Directory.setModificationDateToNow(ofFile: given.file.descriptor)
            // Too long for an attribute: in the file beside it.
            if !attached { try? partials.save(commit.record) }
        } catch let failure {
            logger.error("\(name) is mirrored but not recorded (\(failure)); a new-file run may save it twice")
        }
        return .halted(error)
    }

    /// A file named and recorded: its record comes off the file, and the log and hook hear of it.
    @inline(never)
    private func announceCommitted(_ commit: FileCommit, as name: String, _ namedFile: OpenFile) async -> Outcome {
        let (file, job, held) = (commit.file, commit.job, commit.held)
        partials.detachRecord(for: job.url, fromFile: namedFile.descriptor)
        // Made only when the line is logged: a quiet run's files are most of its files.
        let fields = { () -> Logger.Metadata in ["url": "\(file.url)", "file": "\(name)", "bytes": "\(file.length)"] }
        if let held {
            logger.info("saved \(name), a new version beside \(held.path)", metadata: fields())
        } else {
            logger.info("saved \(name)", metadata: fields())
        }
        await announce(name, url: file.url, item: job.item, bytes: file.length)
        return .downloaded(bytes: file.bytesReceived, newVersion: held != nil, restored: commit.missing)
    }

    /// A file named without its record (no extended attributes where the mirror is, or a record
    /// too long for one: a URL of kilobytes) is found by nothing if a kill comes before its row: the
    /// next run takes it for somebody else's file. Said once a run, not for every file of such a mirror.
    private static func sayOnceFileHasNoRecord(_ relativePath: String, once said: OnceFlag, logger: Logger) {
        guard said.isFirst() else { return }
        logger.warning("""
            \(relativePath): cannot attach the record a run killed before recording the file would need \
            (the file system keeps no extended attributes there, or the URL is too long for one): \
            such a file is unknown to the next run, which in new-file mode fetches it again
            """)
    }

    /// Tells the `--exec` hook of the file saved as `relativePath`; a failure of the hook is
    /// tallied for the run's end, not thrown.
    func announce(_ relativePath: String, url: String, item: String, bytes: Int64) async {
        guard let hook else { return }
        if let failure = await hook.saved(SavedFile(
            path: directory.root.appendingPathComponent(relativePath).path, mirror: directory.root.path,
            relativePath: relativePath, url: url, item: item, source: source, bytes: bytes)) {
            hookFailures.add(failure)
        }
    }
}
