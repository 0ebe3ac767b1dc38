import CZlib
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// The run's WARC output (`--warc DIR`): every HTTP exchange of the run, appended as WARC/1.1
/// records, each its own gzip member, to `mirror-<UTC time>-<serial>.warc.gz` files in the
/// directory (`mirror-<UTC time>-<host>-<pid>-<serial>.warc.gz` for a worker sharing a state),
/// rotated past a size, each with its CDXJ index beside it once closed.
///
/// A file is written as `….warc.gz.open`, under an exclusive `flock`, and given its name once
/// synced and closed; files once closed are never written again. A `.open` file no live process
/// holds (a killed run's) is cut back to its last whole record and closed when an archive next
/// opens the directory, so no reader meets a torn record.
///
/// Records are written on a queue of the archive's own, in the order they were handed over, and
/// digested there (the transfers' thread only counts a body's bytes); a body larger than
/// ``ExchangeCapture/inMemoryLimit`` is read back from the file it was downloaded into. Handing
/// records over never waits (the transfers' thread does it); a new exchange waits to begin
/// (``waitForRoom()``) while 16 wait to be written, so a disk slower than the network holds the
/// run back, rather than memory and descriptors growing with the tag. A body of ``streamsFrom``
/// bytes or more is archived as it arrives instead, into a file of its own (``WARCStream``).
package final class WARCArchive: Sendable {
    let directory: Directory
    private let maxFileSize: Int64
    /// Responses whose head declares a body this long or longer are streamed (``WARCStream``).
    let streamsFrom: Int64
    /// The streams begun and not yet closed or given up, which ``close()`` waits for.
    let streams = DispatchGroup()
    /// The serial of the next file's name, shared by the file being written and streams' files.
    private let serial = Atomic<Int>(0)
    /// Where records are written (internal: a test holds it to be the slow disk).
    let queue = DispatchQueue(label: "mirror.warc")
    /// The file being written: touched on the queue only (the lock is never contended; it makes
    /// the state safe to share).
    private let state: Mutex<State>
    /// The first thing that could not be archived, from any thread: kept apart from the file, so
    /// that saying it never waits for a large record being written.
    private let failure = Mutex<FileSystemError?>(nil)
    /// Work handed over and not yet done, in order, and whether the queue has been asked to do it:
    /// one wake of the queue's thread serves all the records that came meanwhile.
    private let pending = Mutex<(work: [@Sendable () -> Void], scheduled: Bool)>(([], false))
    private let info = Mutex<[(String, String)]>([])
    /// Exchanges handed over and not yet written (each holds its body, in memory or as a
    /// descriptor), and the tasks waiting for fewer than ``inFlightLimit``.
    private let backlog = Mutex<(count: Int, waiting: [CheckedContinuation<Void, Never>])>((0, []))
    private let inFlightLimit: Int
    /// The names of `.open` files a killed run left, cut back and closed when the archive opened.
    package let recovered: [String]

    private struct State: ~Copyable {
        var file: OpenFile?
        let gzip = GzipMemberWriter()
        var payloads = RecentPayloads()
        /// Reused for every record: the block's and the payload's SHA-1, and the buffer a body in a
        /// file is read through.
        let blockDigest: MD5Context
        let payloadDigest: MD5Context
        let buffer = ReadBuffer()
    }

    /// 1 MiB of scratch memory, freed with the archive.
    private final class ReadBuffer {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        deinit { bytes.deallocate() }
    }

    static let notModifiedProfile = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"

    private struct OpenFile {
        var fd: Int32
        var name: String
        var end: Int64
        var index: CDXJIndex
    }

    /// Names the files of one worker among several (a shared state): its host and process.
    private let worker: String?

    /// Opens (making it if need be) the archive directory at `path`, closing what killed runs
    /// left. `worker` (`host-pid`) goes into the files' names when several workers share it.
    package init(
        path: String, maxFileSize: Int64, worker: String? = nil, inFlightLimit: Int = 16, streamsFrom: Int64 = 64 << 20
    ) throws(FileSystemError) {
        self.inFlightLimit = inFlightLimit
        self.streamsFrom = streamsFrom
        directory = try Directory.open(creating: path)
        self.maxFileSize = maxFileSize
        self.worker = worker.map { $0.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" } }.map { String($0) }
        do throws(DigestError) {
            state = Mutex(State(blockDigest: try MD5Context(.sha1), payloadDigest: try MD5Context(.sha1)))
        } catch {
            throw FileSystemError(path: path, problem: .system(EIO))
        }
        recovered = try Self.closeLeftovers(in: directory, worker: self.worker)
    }

    /// What the warcinfo record at the start of every file says of the run (its sources, say).
    package func describe(_ fields: [(String, String)]) {
        info.withLock { $0 = fields }
    }

    /// Appends `records` (a request and its response), dated `date`, in one go.
    func append(_ records: [WARCRecord], date: timespec) {
        backlog.withLock { $0.count += 1 }
        enqueue { [self] in
            defer { written() }
            guard failure.withLock({ $0 == nil }) else { return }
            state.withLock { state in
                do throws(FileSystemError) {
                    for record in records { try write(record, date: date, state: &state) }
                } catch {
                    fail(error)
                }
            }
        }
    }

    /// A `resource` record of the whole of a file that arrived in several ranges, read from the
    /// descriptor `file` (which the archive closes), once verified.
    func appendResource(url: String, file fd: Int32, length: Int64, contentType: String?) {
        var record = WARCRecord(type: "resource", fields: [("WARC-Target-URI", url)], head: [], body: .file(BodyFile(fd: fd, length: length)))
        record.contentType = contentType ?? "application/octet-stream"
        append([record], date: WARCRecord.now())
    }

    /// Whether something could not be archived: the run's archive is not whole.
    var hasFailed: Bool { failure.withLock { $0 != nil } }

    /// Something that was to go into the archive could not be kept: the run's archive is not whole.
    func fail(_ error: FileSystemError) {
        failure.withLock { failure in
            if failure == nil { failure = error }
        }
    }

    /// Returns once fewer than the limit of exchanges wait to be written. Never waits forever:
    /// the queue works through what it holds, written or, once the archive has failed, dropped.
    func waitForRoom() async {
        let ready = backlog.withLock { $0.count < inFlightLimit }
        if ready { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = backlog.withLock { backlog in
                if backlog.count < inFlightLimit { return true }
                backlog.waiting.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// An exchange is written (or dropped): once there is room, every waiting task goes on. A
    /// task let go reserves nothing (its transfer may fail before it has records to hand over),
    /// so none is kept back on the count of those let go before it: the count of exchanges
    /// actually waiting decides the next time.
    private func written() {
        let ready = backlog.withLock { backlog -> [CheckedContinuation<Void, Never>] in
            backlog.count -= 1
            guard backlog.count < inFlightLimit else { return [] }
            defer { backlog.waiting = [] }
            return backlog.waiting
        }
        for continuation in ready { continuation.resume() }
    }

    private func enqueue(_ work: @escaping @Sendable () -> Void) {
        let wake = pending.withLock { pending in
            pending.work.append(work)
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        if wake { queue.async { [self] in drain() } }
    }

    /// Does the work handed over, until there is none; runs on the queue.
    private func drain() {
        while true {
            var work = pending.withLock { pending in
                let work = pending.work
                pending.work = []
                if work.isEmpty { pending.scheduled = false }
                return work
            }
            if work.isEmpty { return }
            // Each item is let go once done: what its records hold (a body, a descriptor) goes
            // with it, not with the batch.
            work.reverse()
            while let item = work.popLast() { item() }
            // The batch's records reach the file together, before the queue waits for more.
            state.withLock { state in
                guard state.file != nil else { return }
                do throws(FileSystemError) {
                    try state.gzip.flush()
                } catch {
                    fail(error)
                }
            }
        }
    }

    /// Writes what is queued, closes the file being written, and says whether anything failed.
    package func close() throws(FileSystemError) {
        queue.sync {
            drain()
            state.withLock { state in
                do throws(FileSystemError) {
                    try closeFile(&state)
                } catch {
                    fail(error)
                }
            }
        }
        // The streams of transfers that ended unwritten (cancelled, cut short) are let go on
        // their own queues: none may leave its `.open` file behind the run. Their transfers have
        // ended (the engine is shut down first), so this is a wait for a removal or two; bounded
        // all the same, since a file left is closed by the next run.
        if streams.wait(timeout: .now() + .seconds(30)) == .timedOut {
            fail(FileSystemError(path: directory.path, problem: .system(EBUSY)))
        }
        if let failure = failure.withLock({ $0 }) { throw failure }
    }

    // MARK: - Files

    private func write(_ record: WARCRecord, date: timespec, state: inout State) throws(FileSystemError) {
        let date = WARCRecord.date(date)
        var unwritten: WARCRecord? = record
        if case .streamed(let stream, let crc) = record.body {
            unwritten = try writeStreamed(record, stream, crc: crc, date: date, state: &state)
        }
        if let record = unwritten {
            if state.file == nil { try openFile(&state) }
            let (record, hashedCRC) = try Self.digested(record, state: &state)
            try writeMember(state.payloads.deduplicated(record, date: date), date: date, hashedCRC: hashedCRC, state: &state)
        }
        if let file = state.file, file.end >= maxFileSize { try closeFile(&state) }
    }

    /// A streamed response: closed in its own file (nil returned); or, its payload archived
    /// before, given up for the `revisit` returned, to be written in this one; or, its stream
    /// having failed (its file could not be made, a write failed), the record with its body read
    /// back from the transfer's file, as any other. Bytes not those that arrived fail it.
    private func writeStreamed(_ record: WARCRecord, _ stream: WARCStream, crc: UInt32, date: String, state: inout State) throws(FileSystemError) -> WARCRecord? {
        var record = record
        do throws(FileSystemError) {
            let digests = try stream.finish(crc: crc)
            record.fields += [("WARC-Payload-Digest", digests.payload), ("WARC-Block-Digest", digests.block)]
        } catch {
            stream.discard()
            guard error.problem != .changedMeanwhile, let body = stream.bodyFile(crc: crc) else { throw error }
            record.body = .file(body)
            return record
        }
        let kept = state.payloads.deduplicated(record, date: date)
        guard kept.type == record.type else {
            stream.discard()
            return kept
        }
        do throws(FileSystemError) {
            try stream.close(record, date: date)
        } catch {
            // Its file not whole (the header or the last block could not be written): the record
            // is written here instead, its digests taken and its payload already remembered.
            guard !stream.isWhole, let body = stream.bodyFile(crc: crc) else { throw error }
            stream.discard()
            record.body = .file(body)
            if state.file == nil { try openFile(&state) }
            try writeMember(record, date: date, state: &state)
        }
        return nil
    }

    /// `hashedCRC`: the CRC-32 of a file body's bytes as they were digested, for a body whose
    /// bytes as they arrived are not known (a resource).
    private func writeMember(_ record: WARCRecord, date: String, hashedCRC: UInt32? = nil, state: inout State) throws(FileSystemError) {
        // Only the name is taken out: a copy of the file's state would hold its index, which the
        // add below would then copy whole, at every record.
        guard let name = state.file?.name else { return }
        let member = state.gzip
        let start = member.end
        member.begin(compresses: Self.compresses(record))
        do throws(FileSystemError) {
            try member.add(record.header(date: date))
            try member.add(record.head)
            switch record.body {
            case .bytes(let bytes):
                try member.add(bytes)
            case .file(let body):
                try Self.copy(body, expecting: body.crc ?? hashedCRC, into: member, through: state.buffer.bytes, path: directory.path(of: name))
            case .streamed:
                preconditionFailure("a streamed body is written by its stream")
            }
            try member.add(Array("\r\n\r\n".utf8))
            try member.finish()
        } catch {
            // What was written of the record goes, so the file still ends with a whole one.
            member.abandonMember()
            throw error
        }
        state.file?.end = member.end
        state.file?.index.add(Self.indexed(record, date: date), offset: start, length: member.end - start, file: name)
    }

    /// Whether a record's member is worth compressing: heads, and text (JSON, XML, HTML), not
    /// media, whose bytes are compressed already.
    private static func compresses(_ record: WARCRecord) -> Bool {
        guard record.body.length > 0 else { return true }
        return compresses(type: record.type == "resource" ? record.contentType : record.http.contentType)
    }

    /// Whether a body of the media type `type` is worth compressing: text (JSON, XML, HTML).
    static func compresses(type: String?) -> Bool {
        let type = type?.lowercased() ?? ""
        return type.hasPrefix("text/") || type.hasSuffix("json") || type.hasSuffix("xml") || type.hasSuffix("javascript")
    }

    /// What the index says of `record`.
    static func indexed(_ record: WARCRecord, date: String) -> CDXJIndex.IndexedRecord {
        let field = { (name: String) in record.fields.first { $0.name == name }?.value }
        return CDXJIndex.IndexedRecord(
            type: record.type, targetURI: field("WARC-Target-URI"), date: date, payloadDigest: field("WARC-Payload-Digest"),
            http: record.http, contentType: record.contentType)
    }

    /// `record` with its digests: WARC-Block-Digest and, but for a request, WARC-Payload-Digest
    /// (SHA-1 in base32). A body in a file is read once for both, and checked as it is copied
    /// against the CRC-32 of its bytes as they arrived, or, where that is not known (a resource),
    /// against the CRC-32 of the bytes digested, returned here.
    private static func digested(_ record: WARCRecord, state: inout State) throws(FileSystemError) -> (WARCRecord, hashedCRC: UInt32?) {
        guard record.type != "warcinfo", !record.fields.contains(where: { $0.name == "WARC-Block-Digest" }) else { return (record, nil) }
        var hashedCRC: uLong?
        if case .file(let body) = record.body, body.crc == nil { hashedCRC = crc32(0, nil, 0) }
        let uri = record.fields.first { $0.name == "WARC-Target-URI" }?.value ?? "(a record)"
        let (block, payload) = (state.blockDigest, state.payloadDigest)
        let take = { (bytes: UnsafeRawBufferPointer) throws(FileSystemError) in
            let ok = bytes.count >= 64 << 10 ? TwoDigests(payload: payload, block: block, bytes: bytes).takeSideBySide() : {
                do throws(DigestError) {
                    try payload.update(bytes)
                    try block.update(bytes)
                    return true
                } catch {
                    return false
                }
            }()
            if !ok { throw FileSystemError(path: uri, problem: .system(EIO)) }
            if let crc = hashedCRC { hashedCRC = crc32(crc, bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(bytes.count)) }
        }
        var record = record
        do throws(DigestError) {
            try block.restart()
            try payload.restart()
            try block.update(record.head)
        } catch {
            throw FileSystemError(path: uri, problem: .system(EIO))
        }
        switch record.body {
        case .bytes(let bytes):
            let result: Result<Void, FileSystemError> = bytes.withUnsafeBytes { bytes in Result { () throws(FileSystemError) in try take(bytes) } }
            try result.get()
        case .file(let body):
            try read(body, through: state.buffer.bytes, path: uri, take)
        case .streamed:
            preconditionFailure("a streamed body is digested by its stream")
        }
        do throws(DigestError) {
            if record.type != "request" { record.fields.append(("WARC-Payload-Digest", WARCRecord.digestLabel(sha1: try payload.finalize()))) }
            record.fields.append(("WARC-Block-Digest", WARCRecord.digestLabel(sha1: try block.finalize())))
        } catch {
            throw FileSystemError(path: uri, problem: .system(EIO))
        }
        return (record, hashedCRC.map { UInt32(truncatingIfNeeded: $0) })
    }

    /// Copies a body's bytes from its file into the member; a body whose bytes are not those
    /// that arrived (written over since) fails, and its record with it.
    private static func copy(
        _ body: BodyFile, expecting expected: UInt32?, into member: GzipMemberWriter, through buffer: UnsafeMutableRawBufferPointer, path: String
    ) throws(FileSystemError) {
        // The member's CRC-32 as gzip keeps it: what came before, and then the body as it
        // arrived, must be what the member now holds (no second pass over the bytes).
        let before = member.crc
        try read(body, through: buffer, path: path) { bytes throws(FileSystemError) in try member.add(bytes) }
        if let expected, member.crc != UInt32(truncatingIfNeeded: crc32_combine(uLong(before), uLong(expected), off_t(body.length))) {
            throw FileSystemError(path: path, problem: .changedMeanwhile)
        }
    }

    /// Hands `each` the body's bytes, read from its file through `buffer`; a file shorter than the
    /// body is one cut since.
    private static func read(
        _ body: BodyFile, through buffer: UnsafeMutableRawBufferPointer, path: String,
        _ each: (UnsafeRawBufferPointer) throws(FileSystemError) -> Void
    ) throws(FileSystemError) {
        var done: Int64 = 0
        while done < body.length {
            let want = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(min(Int64(buffer.count), body.length - done))])
            let count = try Directory.readAll(into: want, from: body.fd, at: body.offset + done, path: path)
            guard count == want.count else { throw FileSystemError(path: path, problem: .changedMeanwhile) }
            try each(UnsafeRawBufferPointer(want))
            done += Int64(count)
        }
    }

    private func openFile(_ state: inout State) throws(FileSystemError) {
        let (fd, name) = try createFile()
        state.file = OpenFile(fd: fd, name: name, end: 0, index: CDXJIndex(spillingInto: directory))
        state.gzip.attach(to: fd, at: 0, path: directory.path(of: name + ".open"))
        do throws(FileSystemError) {
            try writeMember(warcinfo(named: name), date: WARCRecord.date(WARCRecord.now()), state: &state)
        } catch {
            // Not a file to name: it stays `.open` and empty, which the next run removes.
            state.file = nil
            Glibc.close(fd)
            throw error
        }
    }

    /// A new file, `name.open`, under the next free name, locked as written.
    func createFile() throws(FileSystemError) -> (fd: Int32, name: String) {
        let stamp = Self.fileStamp(WARCRecord.now())
        while true {
            let number = serial.add(1, ordering: .relaxed).oldValue
            let name = "mirror-\(stamp)-" + (worker.map { "\($0)-" } ?? "") + "\(Self.padded(number)).warc.gz"
            if directory.contains(name) { continue }
            let fd: Int32
            do {
                fd = try directory.openFile(name + ".open", .write(create: true, exclusive: true))
            } catch where error.problem == .system(EEXIST) {
                continue
            }
            // Held while the file is written: a run that finds the file unlocked knows its writer
            // is gone. One that locked the new file in the moment before this could have removed
            // it: the name must still be this file's.
            guard flock(fd, LOCK_EX | LOCK_NB) == 0, Self.isStill(fd, named: name + ".open", in: directory) else {
                Glibc.close(fd)
                continue
            }
            return (fd, name)
        }
    }

    /// The warcinfo record that begins the file `name`.
    func warcinfo(named name: String) -> WARCRecord {
        var fields = [
            "software: mirror/\(MirrorVersion.number)",
            "format: WARC File Format 1.1",
            "conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        ]
        fields += info.withLock { $0 }.map { "\($0.0): \($0.1)" }
        fields.append(
            "mirror-redaction: the value of every Authorization field of a request, and every password mirror was given "
                + "(as typed, percent-encoded, or in a Basic token) anywhere in a head or an API answer or feed, is written as \"\(ExchangeCapture.redacted)\"")
        var info = WARCRecord(
            type: "warcinfo", fields: [("WARC-Filename", name)], head: Array((fields.joined(separator: "\r\n") + "\r\n").utf8),
            body: .bytes([]))
        info.contentType = "application/warc-fields"
        return info
    }

    /// Whether `name` in `directory` is the file open as `fd` (not removed, nor another file by now).
    private static func isStill(_ fd: Int32, named name: String, in directory: Directory) -> Bool {
        var open = stat()
        var named = stat()
        guard fstat(fd, &open) == 0, fstatat(directory.descriptor, name, &named, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    /// Writes what waits, syncs the file being written, names it and writes its index. Whatever
    /// fails, the file ends with its last whole record; if it cannot be named it stays `.open`,
    /// for the next run to close.
    private func closeFile(_ state: inout State) throws(FileSystemError) {
        guard var file = state.file else { return }
        state.file = nil
        defer { Glibc.close(file.fd) }
        var flushFailure: FileSystemError?
        do throws(FileSystemError) {
            try state.gzip.flush()
        } catch {
            flushFailure = error
        }
        if state.gzip.damaged {
            // A write failed part way (a full disk): the file is what its whole members say, read
            // as a killed run's file is.
            (file.index, file.end, _) = CDXJIndex.of(file: file.fd, named: file.name, spillingInto: directory)
        }
        if file.end == 0 {
            // Not even its warcinfo reached it: no file to name (a reader would find it torn).
            directory.remove(file.name + ".open")
            if let flushFailure { throw flushFailure }
            return
        }
        guard ftruncate(file.fd, off_t(file.end)) == 0, fsync(file.fd) == 0 else {
            throw FileSystemError.last(path: directory.path(of: file.name + ".open"))
        }
        try Self.giveName(file.name, in: directory)
        // After the name: a name refused leaves no other file's index overwritten. A kill between
        // the two leaves a file without an index, which `warc pack` makes again from the file.
        try directory.replaceContents(of: Self.indexName(of: file.name), writing: file.index.write)
        // Closed as well as it could be; the records that did not reach it are the failure (and
        // at a rotation, no next file is begun).
        if let flushFailure { throw flushFailure }
    }

    /// The CDXJ index beside a WARC file: `mirror-….cdxj` for `mirror-….warc.gz`.
    static func indexName(of name: String) -> String {
        String(name.dropLast(".warc.gz".count)) + ".cdxj"
    }

    /// `name.open` becomes `name`, never over a file of that name; the directory is synced.
    static func giveName(_ name: String, in directory: Directory) throws(FileSystemError) {
        guard try directory.move(name + ".open", to: directory, as: name) else {
            throw FileSystemError(path: directory.path(of: name), problem: .system(EEXIST))
        }
        try directory.sync()
    }

    /// Cuts each `.open` file whose writer is gone back to its last whole record and closes it;
    /// one without a record past its warcinfo is removed. A writer is gone when no process holds the file's lock and, for a
    /// worker's file (named for its host and process), when it is of this host and its process is
    /// no more: a lock over NFS is not to be trusted, and a worker of another host, paused, may
    /// still be writing. Such files are left for a run on their own host.
    private static func closeLeftovers(in directory: Directory, worker: String?) throws(FileSystemError) -> [String] {
        var closed: [String] = []
        for name in directory.names() where name.hasSuffix(".warc.gz.open") {
            guard Self.writerIsGone(of: name, thisHost: worker.map { String($0[..<($0.lastIndex(of: "-") ?? $0.endIndex)]) }) else { continue }
            let fd: Int32
            do {
                fd = try directory.openFile(name, .write(create: false))
            } catch where error.problem == .system(ENOENT) {
                continue  // closed by its writer, or another run, since the listing
            }
            defer { Glibc.close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0, isStill(fd, named: name, in: directory) else { continue }
            let finalName = String(name.dropLast(".open".count))
            let (index, whole, records) = CDXJIndex.of(file: fd, named: finalName, spillingInto: directory)
            // Empty, or its warcinfo alone (a large body's stream the kill cut): it archives
            // nothing, and goes.
            if records <= 1 {
                directory.remove(name)
                directory.remove(indexName(of: finalName))
                continue
            }
            guard ftruncate(fd, off_t(whole)) == 0, fsync(fd) == 0 else { throw FileSystemError.last(path: directory.path(of: name)) }
            try giveName(finalName, in: directory)
            try directory.replaceContents(of: indexName(of: finalName), writing: index.write)
            closed.append(finalName)
        }
        return closed
    }

    /// Whether the process that wrote `name` can be taken to be gone (see ``closeLeftovers``):
    /// always for a file of a run without workers (`mirror-<time>-<serial>`); for a worker's
    /// (`mirror-<time>-<host>-<pid>-<serial>`), only if `thisHost` is its host and the pid is dead.
    private static func writerIsGone(of name: String, thisHost: String?) -> Bool {
        let parts = name.dropLast(".warc.gz.open".count).split(separator: "-")
        guard parts.count >= 5, let pid = Int32(parts[parts.count - 2]) else { return true }
        let host = parts[2..<(parts.count - 2)].joined(separator: "-")
        guard let thisHost, host == thisHost else { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    /// `yyyyMMddHHmmssSSS`, UTC, as wget's and Heritrix's WARC names have it.
    private static func fileStamp(_ time: timespec) -> String {
        let date = WARCRecord.date(time).filter(\.isNumber)
        return String(date.prefix(17))
    }

    private static func padded(_ serial: Int) -> String {
        let digits = String(serial)
        return String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }
}

/// A large block's two digests, taken side by side on two threads: the second core is otherwise
/// idle while the archive catches up with the transfers.
///
/// `@unchecked Sendable`: `concurrentPerform` returns only once both of its iterations have
/// ended; each iteration updates one of the two contexts and no other; the bytes are only read,
/// and their owner waits for both.
private struct TwoDigests: @unchecked Sendable {
    let payload: MD5Context
    let block: MD5Context
    let bytes: UnsafeRawBufferPointer

    /// False if either digest could not take the bytes.
    func takeSideBySide() -> Bool {
        let failed = Atomic<Bool>(false)
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            do throws(DigestError) {
                try (part == 0 ? payload : block).update(bytes)
            } catch {
                failed.store(true, ordering: .relaxed)
            }
        }
        return !failed.load(ordering: .relaxed)
    }
}
