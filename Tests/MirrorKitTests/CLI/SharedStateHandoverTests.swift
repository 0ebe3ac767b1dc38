import Foundation
import Testing

/// `mirror` carries no PostgreSQL client: a run or a status with a shared state
/// (`--state postgresql://…`) becomes `mirror-postgresql`, found beside it or where an
/// installation keeps helpers (`<prefix>/libexec/mirror/`).
@Suite("A shared state: mirror hands it over to mirror-postgresql")
struct SharedStateHandoverTests {
    static let helper = MirrorProcess.executable.deletingLastPathComponent().appendingPathComponent("mirror-postgresql")

    /// `mirror` copied to `prefix/bin/` (and the helper to `prefix/libexec/mirror/`), as an
    /// installation lays them out: the copy's path.
    private static func install(in prefix: URL, withHelper: Bool) throws -> URL {
        let bin = prefix.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: MirrorProcess.executable, to: bin.appendingPathComponent("mirror"))
        if withHelper {
            let libexec = prefix.appendingPathComponent("libexec/mirror")
            try FileManager.default.createDirectory(at: libexec, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: helper, to: libexec.appendingPathComponent("mirror-postgresql"))
        }
        return bin.appendingPathComponent("mirror")
    }

    @Test func withoutTheHelperARunEndsWithOneLineSayingWhereItLooked() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let alone = try Self.install(in: dir, withHelper: false)
            let out = dir.appendingPathComponent("out").path
            let state = "postgresql://worker:s3cret@127.0.0.1:1/mirror"
            let run = try await MirrorProcess.run(["cats", "--out", out, "--state", state], binary: alone)
            #expect(run.status == 69)
            let lines = run.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(run.stderr)")
            #expect(run.stderr.contains("mirror-postgresql, which is not installed"), "\(run.stderr)")
            #expect(run.stderr.contains(dir.appendingPathComponent("libexec/mirror/mirror-postgresql").path), "\(run.stderr)")
            #expect(!run.stderr.contains("s3cret"))
            // Nothing was set up before the hand-over failed.
            #expect(!FileManager.default.fileExists(atPath: out))

            let status = try await MirrorProcess.run(["status", out, "--state", state], binary: alone)
            #expect(status.status == 69)
            #expect(status.stderr.contains("mirror-postgresql, which is not installed"), "\(status.stderr)")
        }
    }

    @Test func theHelperIsFoundWhereAnInstallationKeepsItAndGetsTheSameArguments() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let mirror = try Self.install(in: dir, withHelper: true)
            let out = dir.appendingPathComponent("out")
            try FileManager.default.createDirectory(at: out.appendingPathComponent(".mirror"), withIntermediateDirectories: true)
            // Nothing listens on port 1: the helper's own error, naming the database, shows it ran
            // with the arguments given to mirror.
            let status = try await MirrorProcess.run(
                ["status", out.path, "--state", "postgresql://worker:s3cret@127.0.0.1:1/mirror"],
                binary: mirror)
            #expect(!status.stderr.contains("not installed"), "\(status.stderr)")
            // Its user too is shown as `***`: every userinfo mirror prints is.
            #expect(status.stderr.contains("postgresql://***@127.0.0.1:1/mirror"), "\(status.stderr)")
            #expect(!status.stderr.contains("s3cret"))
            #expect(status.status != 0)
        }
    }

    /// The hand-over comes before the input file is read: the helper reads standard input itself.
    @Test func aRunWithItsSourcesOnStandardInputIsHandedOverWhole() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let mirror = try Self.install(in: dir, withHelper: true)
            let run = try await MirrorProcess.run(
                ["-i", "-", "--out", dir.appendingPathComponent("out").path, "--state", "postgresql://worker@127.0.0.1:1/mirror",
                 "--client-id-file", "/dev/null"],
                standardInput: Array("cats\n".utf8), binary: mirror)
            // The helper read the tag from standard input and went on to the client id file.
            #expect(!run.stderr.contains("names no source"), "\(run.stderr)")
            #expect(run.stderr.contains("client id file /dev/null"), "\(run.stderr)")
            #expect(run.status == 78)
        }
    }
}
