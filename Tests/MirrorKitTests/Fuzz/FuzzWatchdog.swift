import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Names the input a fuzz run was on when it crashed or hung, and writes that input and the
/// report to files, so that the failure can be replayed (`MIRROR_FUZZ_SEED`, `MIRROR_FUZZ_REPLAY`)
/// and read: the parent test reads the report file; stderr gets a copy for whoever watches.
///
/// A crash is caught by a signal handler, which may not allocate or lock: everything it writes
/// is prepared beforehand, and it reads only atomics (pointers are kept as addresses, so the
/// type stays checked `Sendable`). A hang is caught by a thread that looks, every 200 ms, at the
/// CPU time the fuzzing thread has spent on the running input; it reports and ends the process,
/// because a parser stuck in a loop does not notice a cancelled task, and a test's time limit
/// can only cancel. CPU time, not wall time: the child runs niced, and on a loaded machine an
/// input may wait a minute for a core without being stuck.
final class FuzzWatchdog: Sendable {
    static let shared = FuzzWatchdog()

    /// The fuzzing thread's CPU nanoseconds when the running input began; 0 between inputs.
    private let startedAt = Atomic<Int64>(0)
    /// The CPU clock of the thread that armed the watchdog and runs the inputs.
    private let clock = Atomic<Int32>(CLOCK_THREAD_CPUTIME_ID)
    private let index = Atomic<Int>(0)
    private let inputAddress = Atomic<Int>(0)
    private let inputCount = Atomic<Int>(0)
    private let seed = Atomic<UInt64>(0)
    private let hangAfter = Atomic<Int64>(0)
    private let armed = Atomic<Bool>(false)
    /// NUL-terminated "fuzz <target>: " and the input file's path, made by `arm`.
    private let prefixAddress = Atomic<Int>(0)
    private let pathAddress = Atomic<Int>(0)
    private let inputFile = Atomic<Int32>(-1)
    private let reportFile = Atomic<Int32>(-1)
    /// 32 bytes to format a number in, allocated once.
    private let scratchAddress = Int(bitPattern: UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 1))

    /// Starts watching a run of `target`, which reports into `directory` (`input`, `report.txt`).
    /// Called on the thread that then runs the inputs: its CPU clock is the one watched.
    /// Crashes are caught only when `catchCrashes`: a replay leaves them to the Swift runtime,
    /// whose backtrace then says where.
    func arm(target: String, seed: UInt64, hangAfter: Duration, directory: String, catchCrashes: Bool = true) {
        let path = directory + "/input"
        let flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC
        inputFile.store(open(path, flags, 0o644), ordering: .releasing)
        reportFile.store(open(directory + "/report.txt", flags, 0o644), ordering: .releasing)
        pathAddress.store(Int(bitPattern: strdup(path)), ordering: .releasing)
        prefixAddress.store(Int(bitPattern: strdup("fuzz \(target): ")), ordering: .releasing)
        self.seed.store(seed, ordering: .releasing)
        self.hangAfter.store(Int64(hangAfter.inSeconds * 1e9), ordering: .releasing)
        var threadClock = clockid_t()
        if pthread_getcpuclockid(pthread_self(), &threadClock) == 0 { clock.store(threadClock, ordering: .releasing) }
        if catchCrashes { Self.installCrashHandlers() }
        _ = Self.watcher
        armed.store(true, ordering: .releasing)
    }

    /// Stops watching; the input file goes, since nothing crashed.
    func disarm() {
        armed.store(false, ordering: .releasing)
        for file in [inputFile.exchange(-1, ordering: .acquiringAndReleasing), reportFile.exchange(-1, ordering: .acquiringAndReleasing)]
        where file >= 0 {
            close(file)
        }
        if let path = UnsafePointer<CChar>(bitPattern: pathAddress.load(ordering: .acquiring)) { unlink(path) }
    }

    func begin(index: Int, input: UnsafeRawBufferPointer) {
        self.index.store(index, ordering: .relaxed)
        inputAddress.store(Int(bitPattern: input.baseAddress), ordering: .relaxed)
        inputCount.store(input.count, ordering: .relaxed)
        startedAt.store(max(Self.nanoseconds(on: clock.load(ordering: .relaxed)), 1), ordering: .releasing)
    }

    func end() {
        startedAt.store(0, ordering: .releasing)
    }

    // MARK: - Reporting, async-signal-safe

    /// Writes "fuzz <target>: <what>input #<n>, seed 0x<s>; its bytes are in <path>" to stderr
    /// and the report file, and the input to its file. Only `write(2)` and atomics: it runs in a
    /// signal handler.
    fileprivate func report(_ what: StaticString) {
        guard armed.load(ordering: .acquiring), startedAt.load(ordering: .acquiring) != 0 else { return }
        // Twice by hand rather than over an array: an array literal allocates.
        func emit(to output: Int32) {
            guard output >= 0 else { return }
            writeC(prefixAddress.load(ordering: .acquiring), to: output)
            writeStatic(what, to: output)
            let index = index.load(ordering: .relaxed)
            writeStatic(index < 0 ? "corpus entry " : "input #", to: output)
            writeNumber(UInt64(index < 0 ? -1 - index : index), radix: 10, to: output)
            writeStatic(", seed 0x", to: output)
            writeNumber(seed.load(ordering: .relaxed), radix: 16, to: output)
            writeStatic("; its bytes are in ", to: output)
            writeC(pathAddress.load(ordering: .acquiring), to: output)
            writeStatic("\n", to: output)
        }
        emit(to: 2)
        emit(to: reportFile.load(ordering: .acquiring))
        let file = inputFile.load(ordering: .acquiring)
        if file >= 0, let bytes = UnsafeRawPointer(bitPattern: inputAddress.load(ordering: .relaxed)) {
            _ = write(file, bytes, inputCount.load(ordering: .relaxed))
        }
    }

    private func writeStatic(_ text: StaticString, to output: Int32) {
        _ = write(output, text.utf8Start, text.utf8CodeUnitCount)
    }

    private func writeC(_ address: Int, to output: Int32) {
        guard let text = UnsafePointer<CChar>(bitPattern: address) else { return }
        _ = write(output, text, strlen(text))
    }

    private func writeNumber(_ value: UInt64, radix: UInt64, to output: Int32) {
        guard let buffer = UnsafeMutablePointer<UInt8>(bitPattern: scratchAddress) else { return }
        var value = value
        var start = 32
        repeat {
            start -= 1
            let digit = UInt8(value % radix)
            buffer[start] = digit < 10 ? 48 + digit : 87 + digit
            value /= radix
        } while value > 0
        _ = write(output, buffer + start, 32 - start)
    }

    // MARK: - Watching

    private static let watcher: Void = {
        Thread.detachNewThread {
            let watchdog = FuzzWatchdog.shared
            while true {
                usleep(200_000)
                let started = watchdog.startedAt.load(ordering: .acquiring)
                guard started != 0, watchdog.armed.load(ordering: .acquiring) else { continue }
                let spent = nanoseconds(on: watchdog.clock.load(ordering: .relaxed)) - started
                if spent > watchdog.hangAfter.load(ordering: .relaxed) {
                    watchdog.report("hung on ")
                    _exit(70)
                }
            }
        }
    }()

    private static let crashSignals = [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGABRT]

    /// The handler runs on a stack of its own, or a stack overflow (deep nesting is one of the
    /// mutations) would fault again in the handler and report nothing. The alternate stack
    /// belongs to the calling thread, which is the one that runs the inputs.
    private static func installCrashHandlers() {
        let size = 1 << 16
        var stack = stack_t()
        stack.ss_sp = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        stack.ss_size = size
        sigaltstack(&stack, nil)
        for signal in crashSignals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = fuzzCrashHandler
            action.sa_flags = Int32(bitPattern: UInt32(SA_ONSTACK) | UInt32(SA_RESETHAND) | UInt32(SA_NODEFER))
            sigemptyset(&action.sa_mask)
            sigaction(signal, &action, nil)
        }
    }

    fileprivate static func nanoseconds(on clock: clockid_t) -> Int64 {
        var now = timespec()
        clock_gettime(clock, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

/// Reports the input, then lets the signal take its default course: SA_RESETHAND has restored
/// it, and a fault raised again ends the process as the fault would have.
private func fuzzCrashHandler(_ signal: Int32) {
    FuzzWatchdog.shared.report("crashed on ")
    raise(signal)
}
