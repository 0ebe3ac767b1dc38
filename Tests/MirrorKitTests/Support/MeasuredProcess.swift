import Foundation

/// Runs the real `mirror` executable under GNU time, for the most memory it held.
///
/// The peak a parent reads from `wait4` is not the child's alone: Linux keeps, across `execve`,
/// the high-water mark of the memory the process had before it, which for a child spawned by the
/// test process is the test process's own (hundreds of MB while other tests run). GNU time forks
/// from its own small image before it runs `mirror`, so the peak it reports is mirror's, give or
/// take GNU time's megabyte.
enum MeasuredProcess {
    struct Run {
        var status: Int32
        var stderr: String
        /// The child's peak resident set size (`ru_maxrss`), in bytes.
        var peakResidentBytes: Int
    }

    static let time = "/usr/bin/time"

    static func run(_ arguments: [String]) async throws -> Run {
        try await TestSupport.withTemporaryDirectory { dir in
            let errPath = dir.appendingPathComponent("stderr").path
            let usagePath = dir.appendingPathComponent("usage").path
            _ = FileManager.default.createFile(atPath: errPath, contents: nil)
            let error = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
            defer { try? error.close() }
            let child = ChildProcess(
                executable: time, arguments: ["-f", "%M", "-o", usagePath, MirrorProcess.executable.path] + arguments,
                standardError: error.fileDescriptor)
            let status = try await child.run()
            // GNU time writes "Command exited with non-zero status N" first when it is so.
            let usage = String(decoding: TestSupport.bytes(at: usagePath) ?? [], as: UTF8.self)
            let kibibytes = usage.split(separator: "\n").last.flatMap { Int($0) } ?? 0
            return Run(
                status: status,
                stderr: String(decoding: TestSupport.bytes(at: errPath) ?? [], as: UTF8.self),
                peakResidentBytes: kibibytes * 1024)
        }
    }
}
