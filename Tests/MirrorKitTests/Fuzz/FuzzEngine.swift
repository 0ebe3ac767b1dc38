import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// SplitMix64: small, fast, and the same on every machine, so that a seed names a run exactly.
struct FuzzRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The generator of input `index` of `target` in the run named by `seed`. Each input has its
    /// own, so one input can be replayed without making the ones before it.
    static func forInput(_ index: Int, of target: String, seed: UInt64) -> FuzzRandom {
        // FNV-1a, not Hasher: Hasher is seeded afresh in every process.
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in target.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        var mixer = FuzzRandom(seed: seed ^ hash ^ (UInt64(index) &* 0xD1B5_4A32_D192_ED03))
        return FuzzRandom(seed: mixer.next())
    }

    mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(max(bound, 1)))
    }

    mutating func oneIn(_ odds: Int) -> Bool {
        below(odds) == 0
    }
}

/// How much to fuzz, read from the environment. Unset, it is CI's smoke run: each target's own
/// small count, and a fixed seed, so that CI runs the same inputs every time.
struct FuzzSettings: Sendable {
    /// Inputs per target (`MIRROR_FUZZ_INPUTS`); nil for each target's smoke count.
    var inputs: Int?
    /// `MIRROR_FUZZ_SEED`, decimal or 0x-hex.
    var seed: UInt64
    /// `MIRROR_FUZZ_REPLAY`: run only this input of each target, as a failure report names it.
    var replay: Int?
    /// CPU time one input may take. CPU, not wall time: on a shared, loaded machine a thread can
    /// wait seconds for a core, and that is no fault of the parser.
    var maxInputCPU: Duration = .seconds(2)
    /// CPU time after which an input that has not returned is declared hung (the watchdog ends
    /// the process; ``maxInputCPU`` is checked only once an input returns). `MIRROR_FUZZ_HANG_SECONDS`.
    var hangAfter: Duration = .seconds(30)
    /// RSS growth between the end of the warm-up and the end of the run that counts as a leak
    /// (see ``Fuzzer/run(_:settings:reportingTo:)``). Without a leak the targets grew by at most
    /// 1 MiB over 50,000 inputs in a release build and 4 MiB over 20,000 in a debug one (the
    /// allocator's fragmentation, caches filling up); an xmlTextReader left unfreed grows 22 KiB
    /// an input. 16 MiB is four times the worst growth seen, and catches a leak of 7 KiB an input
    /// in a smoke run, 84 bytes an input in a run of 200,000.
    var maxRSSGrowth = 16 << 20

    static let smokeSeed: UInt64 = 0x6D69_7272_6F72  // "mirror"

    static let current: FuzzSettings = {
        let environment = ProcessInfo.processInfo.environment
        func number(_ name: String) -> UInt64? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            if text.lowercased().hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) }
            return UInt64(text)
        }
        return FuzzSettings(
            inputs: number("MIRROR_FUZZ_INPUTS").map { Int(clamping: $0) },
            seed: number("MIRROR_FUZZ_SEED") ?? smokeSeed,
            replay: number("MIRROR_FUZZ_REPLAY").map { Int(clamping: $0) },
            hangAfter: .seconds(number("MIRROR_FUZZ_HANG_SECONDS").map { Int(clamping: $0) } ?? 30))
    }()

    /// The fuzz tests' time limit: a smoke run takes seconds of CPU, but at a lower priority
    /// beside the rest of the suite it may wait a while for it; a long run as long as it was asked.
    static var timeLimitMinutes: Int {
        let asked = ProcessInfo.processInfo.environment["MIRROR_FUZZ_MINUTES"].flatMap { Int($0) }
        return asked ?? (current.inputs == nil ? 5 : 60)
    }
}

/// One parser under test: where its inputs come from and what must hold for each.
struct FuzzTarget: Sendable {
    let name: String
    /// Inputs in a smoke run: together the targets take about 15 s in a debug build.
    let smokeInputs: Int
    let corpus: [[UInt8]]
    let mutator: FuzzMutator
    /// Makes a well-formed input from scratch, with what parsing it must give, for a quarter of
    /// the inputs; nil to only mutate.
    var generate: (@Sendable (inout FuzzRandom) -> FuzzCase)?
    /// What is wrong with how the parser treated `input`, or nil: the properties every input has.
    let check: @Sendable (_ input: [UInt8]) -> String?
}

/// A generated input and its oracle: what is wrong with the parser's answer for it, or nil.
struct FuzzCase: Sendable {
    var input: [UInt8]
    var expect: @Sendable () -> String?
}

/// What one target's run did.
struct FuzzReport: Sendable, CustomStringConvertible {
    var target: String
    var seed: UInt64
    var corpusEntries = 0
    var inputs = 0
    var slowestIndex = 0
    var slowestCPU: Duration = .zero
    /// CPU time spent in the checks, the parser's share of `elapsed`.
    var checkCPU: Duration = .zero
    var rssAfterWarmUp = 0
    var rssAtEnd = 0
    /// RSS after each further eighth of the inputs: a leak climbs steadily, a cache levels off.
    var rssSamples: [Int] = []
    var peakRSS: Int { (rssSamples + [rssAfterWarmUp, rssAtEnd]).max() ?? 0 }
    var elapsed: Duration = .zero
    /// The first few failures, each naming its input; `failureCount` counts them all.
    var failures: [String] = []
    var failureCount = 0

    /// From the warm-up to the later of the last sample and the end, whichever is higher: the end
    /// alone can read low once the run's own bookkeeping is let go.
    var rssGrowth: Int { max(rssAtEnd, rssSamples.last ?? 0) - rssAfterWarmUp }

    var description: String {
        func mib(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
        let slowest = slowestIndex < 0 ? "corpus entry \(-1 - slowestIndex)" : "input #\(slowestIndex)"
        let perInput = inputs > 0 ? rssGrowth / inputs : 0
        return """
            fuzz \(target): \(inputs) inputs and \(corpusEntries) corpus entries, seed 0x\(String(seed, radix: 16)), \
            \(failureCount) failures, \(String(format: "%.1f", elapsed.inSeconds)) s \
            (\(String(format: "%.1f", checkCPU.inSeconds)) s of CPU in the checks); \
            slowest \(slowest) \(String(format: "%.2f", slowestCPU.inSeconds * 1000)) ms of CPU; \
            RSS \(mib(rssAfterWarmUp)) MiB after warm-up, \(mib(rssAtEnd)) MiB at the end (\(perInput) B/input), \
            by eighths \(rssSamples.map(mib).joined(separator: " ")), peak \(mib(peakRSS))
            """
    }
}

enum Fuzzer {
    /// Runs `target` over its corpus, then over `settings.inputs` (or its smoke count) inputs.
    ///
    /// A crash ends the process (the fuzz tests run each target in a child process, so the test
    /// fails and the watchdog has written out the input); a hang is caught by the watchdog; an
    /// input slower than ``FuzzSettings/maxInputCPU`` and every property the target's check
    /// finds broken are failures in the report.
    ///
    /// Memory: RSS is read after `malloc_trim`, once the corpus and the first eighth of the
    /// inputs have run (libxml2's dictionaries, ICU's caches and the allocator's arenas have
    /// grown to their working size by then) and again at the end. The child process runs nothing
    /// else, so what grows in between is held by this target's code.
    static func run(_ target: FuzzTarget, settings: FuzzSettings = .current, reportingTo directory: String) -> FuzzReport {
        var report = FuzzReport(target: target.name, seed: settings.seed)
        let clock = ContinuousClock()
        let start = clock.now
        let watchdog = FuzzWatchdog.shared
        watchdog.arm(
            target: target.name, seed: settings.seed, hangAfter: settings.hangAfter, directory: directory,
            catchCrashes: settings.replay == nil)
        defer { watchdog.disarm() }

        func attempt(_ input: [UInt8], index: Int, expect: (@Sendable () -> String?)? = nil) {
            if settings.replay != nil { print("fuzz \(target.name): input #\(index) is \(preview(input, limit: 1 << 20))") }
            let (problem, cpu) = input.withUnsafeBytes { bytes in
                watchdog.begin(index: index, input: bytes)
                defer { watchdog.end() }
                let before = threadCPUTime()
                let problem = target.check(input) ?? expect?()
                return (problem, threadCPUTime() - before)
            }
            report.checkCPU += cpu
            if cpu > report.slowestCPU { (report.slowestCPU, report.slowestIndex) = (cpu, index) }
            if let problem { fail(problem, input, index) }
            if cpu > settings.maxInputCPU { fail("took \(cpu) of CPU", input, index) }
        }
        var kinds: Set<String> = []
        func fail(_ problem: String, _ input: [UInt8], _ index: Int) {
            report.failureCount += 1
            // The first of each kind (the problem's first words), five at most: one fault
            // usually fails many inputs, and a second fault must not hide behind the first.
            let kind = problem.split(separator: " ").prefix(3).joined(separator: " ")
            guard report.failures.count < 5, kinds.insert(kind).inserted else { return }
            let replay = index < 0 ? "corpus entry \(-1 - index)"
                : "input #\(index), MIRROR_FUZZ_SEED=0x\(String(settings.seed, radix: 16)) MIRROR_FUZZ_REPLAY=\(index)"
            report.failures.append("\(replay): \(problem); input: \(preview(input))")
        }

        if settings.replay == nil {
            for (offset, entry) in target.corpus.enumerated() { attempt(entry, index: -1 - offset) }
            report.corpusEntries = target.corpus.count
        }
        let count = settings.replay == nil ? settings.inputs ?? target.smokeInputs : 1
        let warmUp = count / 8
        report.rssAfterWarmUp = trimmedRSS()
        for position in 0..<count {
            let index = settings.replay ?? position
            if position == warmUp { report.rssAfterWarmUp = trimmedRSS() }
            if position > warmUp, position % max(count / 8, 1) == 0 { report.rssSamples.append(trimmedRSS()) }
            var random = FuzzRandom.forInput(index, of: target.name, seed: settings.seed)
            if let generate = target.generate, random.oneIn(4) {
                let generated = generate(&random)
                attempt(generated.input, index: index, expect: generated.expect)
            } else {
                attempt(target.mutator.mutate(target.corpus, using: &random), index: index)
            }
            report.inputs += 1
        }
        report.rssAtEnd = trimmedRSS()
        report.elapsed = clock.now - start
        return report
    }

    /// The first bytes of an input, printable, for a failure message.
    static func preview(_ input: [UInt8], limit: Int = 240) -> String {
        var text = String(decoding: input.prefix(limit), as: UTF8.self).debugDescription
        if input.count > limit { text += "… (\(input.count) bytes)" }
        return text
    }

    /// CPU time of the calling thread: the loop runs without suspending, so on one thread.
    static func threadCPUTime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }

    /// Resident memory after handing free pages back to the system, in bytes: without the trim,
    /// RSS keeps whatever the allocator once used and says little about what is still held.
    static func trimmedRSS() -> Int {
        _ = mallocTrim?(0)
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return kib * 1024
    }
}

/// glibc's `malloc_trim`, which the Glibc module does not import.
private let mallocTrim: (@convention(c) (Int) -> Int32)? = dlsym(nil, "malloc_trim")
    .map { unsafeBitCast($0, to: (@convention(c) (Int) -> Int32).self) }
