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
    let maxFileSize: Int64
    /// Responses whose head declares a body this long or longer are streamed (``WARCStream``).
    let streamsFrom: Int64
    /// The streams begun and not yet closed or given up, which ``close()`` waits for.
    let streams = DispatchGroup()
    /// The serial of the next file's name, shared by the file being written and streams' files.
    let serial = Atomic<Int>(0)
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
    let info = Mutex<[(String, String)]>([])
    /// Exchanges handed over and not yet written (each holds its body, in memory or as a
    /// descriptor), and the tasks waiting for fewer than ``inFlightLimit``.
    private let backlog = Mutex<(count: Int, waiting: [CheckedContinuation<Void, Never>])>((0, []))
    private let inFlightLimit: Int
    /// The names of `.open` files a killed run left, cut back and closed when the archive opened.
    package let recovered: [String]

    struct State: ~Copyable {
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
    final class ReadBuffer {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        deinit { bytes.deallocate() }
    }

    static let notModifiedProfile = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"

    struct OpenFile {
        var fd: Int32
        var name: String
        var end: Int64
        var index: CDXJIndex
    }

    /// Names the files of one worker among several (a shared state): its host and process.
    let worker: String?

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
                    try closeIfFull(&state)
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
}
