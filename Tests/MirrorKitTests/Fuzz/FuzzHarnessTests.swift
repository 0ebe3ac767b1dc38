import Foundation
import Testing

/// The fuzz harness catches what it is there to catch: targets made to crash, to hang and to
/// leak are each reported as such. Without these, a harness that noticed nothing would pass
/// every real target too.
@Suite("The fuzz harness reports a crash, a hang and a leak", .serialized, .timeLimit(.minutes(2)))
struct FuzzHarnessTests {
    static let controls = [
        control("control-crash") { input in
            if input.first == UInt8(ascii: "b") { fatalError("the crash this target is for") }
            return nil
        },
        control("control-hang") { input in
            // Spins on the CPU, as a parser caught in a loop does.
            while input.first == UInt8(ascii: "b") { _ = Fuzzer.threadCPUTime() }
            return nil
        },
        control("control-leak") { _ in
            // 256 KiB an input, touched so that it is resident, and never freed.
            let lost = UnsafeMutableRawPointer.allocate(byteCount: 256 << 10, alignment: 16)
            lost.initializeMemory(as: UInt8.self, repeating: 1, count: 256 << 10)
            return nil
        },
    ]

    /// A target whose corpus is "a": every mutation of it is another input; those that start
    /// with "b" are the ones the crash and hang controls fail on.
    private static func control(_ name: String, check: @escaping @Sendable ([UInt8]) -> String?) -> FuzzTarget {
        FuzzTarget(
            name: name, smokeInputs: 400, corpus: [Array("a".utf8)],
            mutator: FuzzMutator(dictionary: [Array("b".utf8)], maxLength: 64),
            generate: { _ in FuzzCase(input: Array("b".utf8), expect: { nil }) },
            check: check)
    }

    @Test func aCrashIsReportedWithTheInput() async throws {
        let (findings, directory) = try await FuzzChild.run("control-crash")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(findings.crash.contains("fuzz control-crash: crashed on input #"), "\(findings.crash)")
        #expect(!findings.endedCleanly)
        #expect((try? Data(contentsOf: URL(fileURLWithPath: directory + "/input"))).map { $0.first } == UInt8(ascii: "b"))
    }

    @Test func aHangIsReportedOnceTheInputHasSpentItsCPU() async throws {
        let (findings, directory) = try await FuzzChild.run("control-hang", environment: ["MIRROR_FUZZ_HANG_SECONDS": "1"])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(findings.crash.contains("fuzz control-hang: hung on input #"), "\(findings.crash)")
        #expect(!findings.endedCleanly)
    }

    @Test func aLeakIsReportedAsGrowth() async throws {
        let (findings, directory) = try await FuzzChild.run("control-leak")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(findings.crash.isEmpty)
        #expect(findings.failures.contains { $0.contains("fuzz control-leak: RSS grew by") }, "\(findings.failures)")
    }
}
