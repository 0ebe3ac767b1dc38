import Foundation

/// An exclusive lock on a mirror directory, so two runs (say, cron firing while a slow run still
/// goes) never work on the same files. `flock(2)` locks die with the process, however it ends, so
/// a killed run never leaves a stale lock behind.
public final class RunLock: Sendable {
    private let descriptor: Int32
    public let path: String

    /// Takes the lock or throws ``MirrorError/locked(path:)`` at once if another process holds it.
    public init(directory: MirrorDirectory) throws(MirrorError) {
        path = directory.stateDirectory.appendingPathComponent("lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .fileSystem(path: path, errno: errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            throw code == EWOULDBLOCK ? .locked(path: path) : .fileSystem(path: path, errno: code)
        }
        descriptor = fd
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { write(fd, $0, strlen($0)) }
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
