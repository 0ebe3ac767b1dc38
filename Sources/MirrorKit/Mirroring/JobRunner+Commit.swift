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

    /// Names the fetched file and records it: beside `held` (a new version) when there is one.
    func commit(_ file: FetchedFile, of job: MirrorJob, besides held: MirroredFile?, restoring missing: Bool) async -> Outcome {
        let lastModified = file.lastModified.flatMap { HTTPDate.parse($0) }
        // The commit moves the partial away (or, when the name is taken, deletes it).
        let (directory, partials) = (directory, partials)
        let mode = held == nil ? mode : .newFile
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
        // Carried by the named file until its state row is written: a kill in between leaves
        // what the next run needs to record it without a request (see ``adoptUnrecorded(_:)``).
        let record = PartialRecord(url: job.url, etag: file.etag, lastModified: file.lastModified, totalLength: file.length)
        if let leases, let fence = job.fence, !(await leases.mayTouch(job.url)) {
            // Stopped past its lease and let go: the partial's name may be another worker's now.
            guard !Task.isCancelled else { return .interrupted }
            fence.markLost()
            return .handedOver
        }
        let (source, relativePath, isFenced) = (source, job.relativePath, job.fence != nil)
        // The server's date goes on with the name, before the row: once the row is written the
        // file is the state's, and a kill before the rest of the commit leaves nobody to date it.
        // (Like wget -N and gallery-dl: the file carries the server's date, not the download's.)
        let giveName: @Sendable (OpenFile) throws(MirrorError) -> NameGiven = { opened throws(MirrorError) in
            var file = opened
            var reopening: FileSystemError?
            let name = try directory.name(partName, from: partials.folder, as: relativePath, mode: mode) { folder, name, copied in
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
        let opened: OpenFile
        let namedWithTheSync: NameGiven?
        do {
            // Unfenced, the name follows the sync on the same thread: one hop to the blocking
            // queue and back per file, not two. Fenced, it waits for the claim's transaction.
            (opened, namedWithTheSync) = try await BlockingIO.run { () throws(MirrorError) in
                let opened = try directory.synced(partName, in: partials.folder) { descriptor in
                    guard !PartialStore.attachForCommit(record, toFile: descriptor) else { return }
                    sayOnceFileHasNoRecord(relativePath)
                }
                guard !isFenced else { return (opened, nil) }
                return (opened, try giveName(opened))
            }
        } catch {
            return halting(error, job)
        }
        let named = Mutex<NameGiven?>(nil)
        let recorded: MirroredFile?
        do {
            recorded = try await state.recordNamed(fencedBy: job.fence) { () async throws(MirrorError) -> MirroredFile? in
                // Fenced, the claim's row is locked meanwhile and the heartbeat renewing it
                // waits: long copies run on a queue apart (``BlockingIO/runApart(_:)``).
                let given: NameGiven
                if let namedWithTheSync {
                    given = namedWithTheSync
                } else {
                    given = try await BlockingIO.run { () throws(MirrorError) in try giveName(opened) }
                }
                guard let name = given.name else { return nil }
                named.withLock { $0 = given }
                return MirroredFile(
                    path: name, item: job.item, source: source, url: job.url, etag: file.etag, lastModified: file.lastModified,
                    bytes: file.length, md5: file.md5, version: job.release?.version, updated: job.release?.updated)
            }
        } catch {
            guard let given = named.withLock({ $0 }), let name = given.name else {
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
            let attached = PartialStore.attach(record, toFile: given.file.descriptor)
            do {
                try directory.uncommit(name, backTo: partials.folder, as: partName)
                // A partial's date says when it was last worked on (the partials' budget drops
                // the oldest first), not the server's date it got with its name. (Copied back
                // from another file system, it is a new file, dated now already.)
                Directory.setModificationDateToNow(ofFile: given.file.descriptor)
                // Too long for an attribute: in the file beside it.
                if !attached { try? partials.save(record) }
            } catch let failure {
                logger.error("\(name) is mirrored but not recorded (\(failure)); a new-file run may save it twice")
            }
            return .halted(error)
        }
        guard let name = recorded?.path, let namedFile = named.withLock({ $0?.file }) else { return .alreadyPresent }
        partials.detachRecord(for: job.url, fromFile: namedFile.descriptor)
        // Made only when the line is logged: a quiet run's files are most of its files.
        let fields = { () -> Logger.Metadata in ["url": "\(file.url)", "file": "\(name)", "bytes": "\(file.length)"] }
        if let held {
            logger.info("saved \(name), a new version beside \(held.path)", metadata: fields())
        } else {
            logger.info("saved \(name)", metadata: fields())
        }
        await announce(name, url: file.url, item: job.item, bytes: file.length)
        return .downloaded(bytes: file.bytesReceived, newVersion: held != nil, restored: missing)
    }

    /// A file named without its record (no extended attributes where the mirror is, or a record
    /// too long for one: a URL of kilobytes) is found by nothing if a kill comes before its row: the
    /// next run takes it for somebody else's file. Said once a run, not for every file of such a mirror.
    private func sayOnceFileHasNoRecord(_ relativePath: String) {
        guard unrecordableFileSaid.isFirst() else { return }
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
