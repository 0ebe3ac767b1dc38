import FoundationEssentials
import Glibc

/// An exclusive lock on a mirror directory, so two runs (say, cron firing while a slow run still
/// goes) never work on the same files. `flock(2)` locks die with the process, however it ends, so
/// a killed run never leaves a stale lock behind.
package final class RunLock: Sendable {
    private let descriptor: Int32
    let path: String

    /// Takes the lock or throws ``MirrorError/locked(path:)`` at once if another process holds it.
    /// The lock file is opened in `.mirror` and never through a link: a link planted as
    /// `.mirror/lock` would have the pid written into its target.
    package init(directory: MirrorDirectory) throws(MirrorError) {
        path = directory.stateFolder.path(of: "lock")
        let fd: Int32
        do {
            fd = try directory.stateFolder.openFile("lock", .write(create: true))
        } catch {
            throw .fileSystem(error)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            throw code == EWOULDBLOCK ? .locked(path: path) : .fileSystem(FileSystemError(path: path, errno: code))
        }
        descriptor = fd
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = try? Directory.writeAll(Array(pid.utf8), to: fd, at: 0, path: path)
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
