import FixtureServer
import Testing
import Foundation

/// Runs the real `mirror` executable, as cron would.
enum MirrorProcess {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        /// How long the process ran.
        var elapsed: Duration
    }

    /// The `mirror` binary built beside this test bundle.
    static let executable: URL = {
        // Every way a test starts mirror comes here first: from then on the children inherit a
        // config home with no config in it, so a developer's ~/.config/mirror/config.json cannot
        // change what a test sees (a test that wants one passes XDG_CONFIG_HOME itself).
        setenv("XDG_CONFIG_HOME", FileManager.default.temporaryDirectory.appendingPathComponent("mirror-tests-config-home").path, 1)
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("mirror")
    }()

    /// Runs `mirror` on a thread of its own: waiting for a child process must not hold one of
    /// the few threads the in-process fixture server needs to answer it.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], standardInput: [UInt8]? = nil, workingDirectory: String? = nil,
        binary: URL = executable
    ) async throws -> Run {
        try await TestSupport.withTemporaryDirectory { dir in
            let outPath = dir.appendingPathComponent("stdout").path
            let errPath = dir.appendingPathComponent("stderr").path
            _ = FileManager.default.createFile(atPath: outPath, contents: nil)
            _ = FileManager.default.createFile(atPath: errPath, contents: nil)
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
            let error = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
            var input: FileHandle?
            if let standardInput {
                let inPath = dir.appendingPathComponent("stdin").path
                try TestSupport.write(standardInput, to: inPath)
                input = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
            }
            defer { [output, error, input].forEach { try? $0?.close() } }
            let child = ChildProcess(
                executable: binary.path, arguments: arguments,
                environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
                standardInput: input?.fileDescriptor, standardOutput: output.fileDescriptor, standardError: error.fileDescriptor,
                workingDirectory: workingDirectory)
            let started = ContinuousClock.now
            let status = try await child.run()
            return Run(
                status: status,
                stdout: String(decoding: TestSupport.bytes(at: outPath) ?? [], as: UTF8.self),
                stderr: String(decoding: TestSupport.bytes(at: errPath) ?? [], as: UTF8.self),
                elapsed: ContinuousClock.now - started)
        }
    }

    /// Starts `mirror` in the background, its standard output and error into the file `log`
    /// (made anew).
    static func start(_ arguments: [String], log: URL) throws -> ChildProcess.Started {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        return try ChildProcess(
            executable: executable.path, arguments: arguments, standardOutput: handle.fileDescriptor,
            standardError: handle.fileDescriptor
        ).start()
    }

    /// `source` mirrored into `out` from the fixture `server`, with the client id in `idFile`.
    static func fixtureArguments(_ source: String, out: String, server: FixtureServer, idFile: String) -> [String] {
        [source, "--out", out] + fixtureOptions(server: server, idFile: idFile)
    }

    /// The options that point a tag run at the fixture `server`.
    static func fixtureOptions(server: FixtureServer, idFile: String) -> [String] {
        ["--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL]
    }

    /// Serves `text` (with `BASE` replaced by the server's address) as a feed and each of `files`
    /// (path, size) as media, mirrors it with `--metadata` into a new directory, and hands `check`
    /// the run, the directory and the server.
    static func mirrorFeed(
        _ text: String, files: [(String, Int)], arguments: [String] = [], prepare: (FixtureServer) -> Void = { _ in },
        _ check: (Run, String, FixtureServer) async throws -> Void
    ) async throws {
        try await TestSupport.withServer { server in
            for (path, size) in files { server.addMedia(path: path, size: size) }
            prepare(server)
            server.setFeed(path: "/feeds/feed.xml", text: text.replacingOccurrences(of: "BASE", with: server.baseURL))
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let run = try await run(["feed", "\(server.baseURL)/feeds/feed.xml", "--out", out, "--metadata"] + arguments)
                try await check(run, out, server)
            }
        }
    }

    /// The fixture tag `bigfile`'s one file: 64 MiB.
    static let bigFile = "/B1gF1le.jpg"

    /// A run of the fixture tag `bigfile` archived with `--warc`, its file served at 24 MiB/s (a
    /// few seconds, time to watch or kill it): `body` gets the server, a temporary directory, the
    /// mirror's and the archive's paths in it, and the run's arguments.
    static func withArchivedBigFile(
        _ body: (_ server: FixtureServer, _ dir: URL, _ out: String, _ warc: String, _ arguments: [String]) async throws -> Void
    ) async throws {
        try await TestSupport.withServer { server in
            server.inject(.throttle(bytesPerSecond: 24 << 20), path: bigFile)
            try await withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let warc = dir.appendingPathComponent("warc").path
                try await body(server, dir, out, warc, fixtureArguments("bigfile", out: out, server: server, idFile: idFile) + ["--warc", warc])
            }
        }
    }

    /// A temporary directory holding a client id file; `body` gets both.
    static func withClientID<T>(_ body: (URL, String) async throws -> T) async throws -> T {
        try await TestSupport.withTemporaryDirectory { dir in
            let idFile = dir.appendingPathComponent("client-id").path
            try TestSupport.write(Array("fixtureid\n".utf8), to: idFile)
            return try await body(dir, idFile)
        }
    }

    /// Polls until the one partial download under `out` holds at least `bytes`.
    static func waitForPartial(in out: String, atLeast bytes: Int64) async throws {
        let partials = URL(fileURLWithPath: out).appendingPathComponent(".mirror/partials")
        for _ in 0..<400 {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: partials.path)) ?? []
            let length = names.filter { $0.hasSuffix(".part") }.compactMap { name -> Int64? in
                let attributes = try? FileManager.default.attributesOfItem(atPath: partials.appendingPathComponent(name).path)
                return (attributes?[.size] as? NSNumber)?.int64Value
            }.max() ?? 0
            if length >= bytes { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("the partial never reached \(bytes) bytes")
    }
}
