import FoundationEssentials
import Glibc
import Synchronization

/// The archive's files: made under the next free name and locked while written, named once
/// synced and closed, and, when a killed run left one `.open`, cut back to its last whole record.
extension WARCArchive {
    func openFile(_ state: inout State) throws(FileSystemError) {
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
            "mirror-redaction: the value of every Authorization field of a request is written as \"\(ExchangeCapture.redacted)\"; "
                + "every password mirror was given (as typed, percent-encoded, or in a Basic token) of \(ExchangeCapture.shortestSought) "
                + "characters or more is masked with '*', byte for byte, anywhere in a head (but a response's status line, "
                + "Content-Length and Content-Range) or an API answer or feed")
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
    func closeFile(_ state: inout State) throws(FileSystemError) {
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
    static func closeLeftovers(in directory: Directory, worker: String?) throws(FileSystemError) -> [String] {
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
