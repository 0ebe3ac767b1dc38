import FoundationEssentials
import Glibc
import Synchronization

/// A file a dry run would fetch: what `--dry-run` prints, one line each.
package struct PlannedFile: Sendable, Equatable {
    package var url: String
    /// Where it would land, relative to the mirror directory.
    package var path: String
    /// Its size, when the API or feed states one.
    package var bytes: Int64?
    /// The mirror held it and it was deleted from the disk: it would be fetched again.
    package var missing: Bool
    /// The source that listed it (`tag cats`).
    package var source: String?
}

/// A run that reads the listing and writes nothing: no file in the mirror, no state, no cursor.
///
/// The sources, the driver and the job runner run as they would, against a copy of the state in a
/// scratch folder outside the mirror (so a tag's cursor, its pending images and the files recorded
/// say what a real run would find); where a real run would fetch a file, the runner tells
/// ``plan`` instead. The scratch folder goes when the run ends.
package final class DryRun: Sendable {
    /// Hears each file a real run would fetch.
    let plan: @Sendable (PlannedFile) -> Void
    /// The mirror as the run sees it: its files where they are, its state in ``scratch``.
    package let directory: MirrorDirectory
    /// Where the copy of the state (and anything the run would keep in `.mirror`) goes.
    let scratch: URL

    /// The scratch folder's path, for a caller that must remove it on an abrupt exit.
    package var scratchPath: String { scratch.path }

    /// Snapshots the state of the mirror at `root` (which need not exist) into a new scratch
    /// folder. Refused while a run holds the mirror's lock: its state is changing.
    package init(root: URL, plan: @escaping @Sendable (PlannedFile) -> Void) throws(MirrorError) {
        self.plan = plan
        var template = Array(FileManager.default.temporaryDirectory.appendingPathComponent("mirror-dry-run-XXXXXX").path.utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw .fileSystem(FileSystemError(path: FileManager.default.temporaryDirectory.path, errno: errno))
        }
        scratch = URL(fileURLWithPath: String(cString: made))
        do {
            directory = try Self.snapshot(root: root.standardizedFileURL, into: scratch)
        } catch {
            try? FileManager.default.removeItem(at: scratch)
            throw error
        }
    }

    deinit {
        try? FileManager.default.removeItem(at: scratch)
    }

    private static func snapshot(root: URL, into scratch: URL) throws(MirrorError) -> MirrorDirectory {
        let directory: MirrorDirectory
        var heldLock: String?
        do throws(FileSystemError) {
            let scratchFolder = try Directory.open(existing: scratch.path)
            var info = stat()
            guard lstat(root.path, &info) == 0 || errno != ENOENT else {
                // No mirror yet: every file is to be fetched, and nothing is made to show it.
                return MirrorDirectory(root: root, rootFolder: try scratchFolder.folder("empty"), stateFolder: scratchFolder)
            }
            let rootFolder = try Directory.open(existing: root.path)
            try rootFolder.checkNamesAreSafe()
            if rootFolder.status(of: ".mirror") != nil {
                let state = try rootFolder.folderForReading(".mirror")
                if try !copyState(from: state, to: scratchFolder) { heldLock = state.path(of: "lock") }
            }
            directory = MirrorDirectory(root: root, rootFolder: rootFolder, stateFolder: scratchFolder)
        } catch {
            throw .fileSystem(error)
        }
        if let heldLock { throw .locked(path: heldLock) }
        return directory
    }

    /// Copies the state database and its write-ahead log while holding the run lock shared, so
    /// that no run writes them meanwhile. A run that starts during the copy (a fraction of a
    /// second for most mirrors) finds the lock taken and exits 75, as beside any run. False when
    /// a run holds the lock.
    private static func copyState(from state: Directory, to scratch: Directory) throws(FileSystemError) -> Bool {
        var lock: Int32 = -1
        defer { if lock >= 0 { close(lock) } }
        if state.contains("lock") {
            lock = try state.openFile("lock", .read)
            guard flock(lock, LOCK_SH | LOCK_NB) == 0 else {
                let code = errno
                if code == EWOULDBLOCK { return false }
                throw FileSystemError(path: state.path(of: "lock"), errno: code)
            }
        }
        for name in [StateDatabase.fileName, StateDatabase.fileName + "-wal"] where state.contains(name) {
            try copy(name, from: state, to: scratch)
        }
        return true
    }

    private static func copy(_ name: String, from source: Directory, to target: Directory) throws(FileSystemError) {
        let input = try source.openFile(name, .read)
        defer { close(input) }
        let output = try target.openFile(name, .write(create: true, exclusive: true))
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileSystemError(path: source.path(of: name), errno: errno)
            }
            if count == 0 { return }
            try Directory.writeAll(Array(buffer[..<count]), to: output, at: offset, path: target.path(of: name))
            offset += Int64(count)
        }
    }
}
