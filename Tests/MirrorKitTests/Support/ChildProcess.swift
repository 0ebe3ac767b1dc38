import Foundation
import Synchronization

/// A child process started with `posix_spawn` and waited for on a thread of its own.
///
/// Foundation's `Process.run()` on Linux reads `/proc/self/fd` to close descriptors in the child
/// and at times crashes there (a bad pointer in `memcpy`, swift-corelibs-foundation #5472), more
/// often the more children a test run starts: the suites that start hundreds use this instead.
/// Descriptors other than 0, 1 and 2 are closed in the child, as Process does.
struct ChildProcess {
    var executable: String
    var arguments: [String]
    var environment: [String: String]?
    /// The descriptors the child gets as its standard input, output and error; nil for /dev/null.
    var standardInput: Int32?
    var standardOutput: Int32?
    var standardError: Int32?
    /// Where the child starts; nil for the test's own working directory.
    var workingDirectory: String?

    /// How a child ended.
    enum Termination: Equatable {
        case exited(Int32)
        case signalled(Int32)
        /// waitpid failed with this errno: the child's end is unknown (a test must not pass on it).
        case lost(Int32)

        /// The exit status, or 128 + the signal, as a shell reports it; -1 when lost.
        var code: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let signal): 128 + signal
            case .lost: -1
            }
        }

        init(waitStatus status: Int32) {
            self = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signalled(status & 0x7F)
        }
    }

    /// A child started and not yet waited for.
    struct Started: Sendable {
        let pid: pid_t
        /// Set, under its lock, just before the child is reaped: its pid may be another
        /// process's afterwards, and no signal may go to it.
        private let reaped = Flag()

        final class Flag: Sendable {
            let state = Mutex(false)
        }

        init(pid: pid_t) {
            self.pid = pid
        }

        /// Sends `signal` to the child, unless it has been reaped.
        func signal(_ signal: Int32) {
            reaped.state.withLock { reaped in
                if !reaped { _ = Glibc.kill(pid, signal) }
            }
        }

        /// Waits for the child on a thread of its own; cancelling the waiter kills it (and its
        /// children): a hung child fails its test instead of hanging the run.
        func wait() async -> Termination {
            let waited = Mutex<CheckedContinuation<Termination, Never>?>(nil)
            let pid = pid
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    waited.withLock { $0 = continuation }
                    Thread { [reaped] in
                        let termination = Self.waitBlocking(pid, reaped: reaped)
                        waited.withLock { $0.take() }?.resume(returning: termination)
                    }.start()
                }
            } onCancel: {
                reaped.state.withLock { reaped in
                    if !reaped { ChildProcess.kill(pid) }
                }
            }
        }

        /// The child has not ended (a zombie, ended and not waited for, has).
        var isRunning: Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")")
            else { return false }
            return stat[stat.index(close, offsetBy: 2)] != "Z"
        }

        func terminate() { signal(SIGTERM) }

        /// Waits for the child on the calling thread (for code that is not async).
        func waitBlocking() -> Termination { Self.waitBlocking(pid, reaped: reaped) }

        /// Waits until the child has ended without reaping it (WNOWAIT), marks it reaped, then reaps it.
        private static func waitBlocking(_ pid: pid_t, reaped: Flag) -> Termination {
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 {
                guard errno == EINTR else { return .lost(errno) }
            }
            return reaped.state.withLock { reaped -> Termination in
                reaped = true
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 {
                    guard errno == EINTR else { return .lost(errno) }
                }
                return Termination(waitStatus: status)
            }
        }
    }

    /// Starts the child.
    func start() throws -> Started {
        Started(pid: try spawn())
    }

    /// Runs the child to its end: its exit status, or 128 + the signal that ended it.
    func run() async throws -> Int32 {
        await (try start()).wait().code
    }

    /// Runs the child to its end on the calling thread.
    func runBlocking() throws -> Int32 {
        try start().waitBlocking().code
    }

    private func spawn() throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (source, target) in [(standardInput, Int32(0)), (standardOutput, 1), (standardError, 2)] {
            if let source {
                posix_spawn_file_actions_adddup2(&actions, source, target)
            } else {
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            }
        }
        _ = Self.closeFrom?(&actions, 3)
        if let workingDirectory {
            guard let changeDirectory = Self.changeDirectory else { throw POSIXError(.ENOSYS) }
            let status = changeDirectory(&actions, workingDirectory)
            guard status == 0 else { throw POSIXError(POSIXErrorCode(rawValue: status) ?? .EINVAL) }
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            env.forEach { free($0) }
        }
        // The child starts as a shell would start it: no signal blocked, none ignored. (The
        // thread spawning it, one of Dispatch's or Swift's, blocks most of them.)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        var result = posix_spawn(&pid, executable, &actions, &attributes, argv, env)
        // A binary a test has just copied is busy while a child another test forked in the
        // meantime still holds the copy's descriptor, until that child execs: moments.
        for _ in 0..<50 where result == ETXTBSY {
            usleep(20_000)
            result = posix_spawn(&pid, executable, &actions, &attributes, argv, env)
        }
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL) }
        return pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare: looked up by name.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let closeFrom: CloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: CloseFrom.self) }

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later), looked up the same way.
    private typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private static let changeDirectory: ChangeDirectory? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")
        .map { unsafeBitCast($0, to: ChangeDirectory.self) }

    /// Kills `pid` and its children first (mirror under `/usr/bin/time` is a grandchild of the test).
    static func kill(_ pid: Int32) {
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        for child in children.split(separator: " ").compactMap({ Int32($0) }) { Glibc.kill(child, SIGKILL) }
        Glibc.kill(pid, SIGKILL)
    }
}
