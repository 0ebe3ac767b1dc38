import ArgumentParser
import FixtureServer
import Foundation

@main
struct FixtureServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fixture-server",
        abstract: "Serve the Imgur API, media CDN and feeds in Fixtures/ on loopback, for demos and benchmarks.")

    @Option(help: "The fixtures directory.")
    var fixtures = "Fixtures"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 0

    @Option(help: "Write the base URL to this file once listening (for scripts).")
    var urlFile: String?

    @Option(help: "Extra media to serve, as PATH=BYTES (repeatable), e.g. /big.bin=67108864.")
    var media: [String] = []

    @Option(help: ArgumentHelp(
        "A fault for the next requests to PATH, as PATH=FAULT[@TIMES] (repeatable). FAULT is drop-after:BYTES, ignore-range, status:CODE[:RETRY_AFTER], stall:BYTES:SECONDS or throttle:BYTES_PER_SECOND; TIMES defaults to 1, * for every request."))
    var fault: [String] = []

    @Option(help: "Event loop threads.")
    var threads = 1

    func run() async throws {
        let server = try await FixtureServer.start(
            fixtures: URL(fileURLWithPath: fixtures), port: port, threads: threads)
        for entry in media {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].hasPrefix("/"), let size = Int(parts[1]), size >= 0 else {
                throw ValidationError("--media takes PATH=BYTES, got '\(entry)'")
            }
            server.addMedia(path: String(parts[0]), size: size)
        }
        for entry in fault {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            let spec = parts.count == 2 ? parts[1].split(separator: "@", maxSplits: 1).map(String.init) : []
            let times = spec.count == 2 ? (spec[1] == "*" ? 1_000_000 : Int(spec[1])) : 1
            guard parts.count == 2, parts[0].hasPrefix("/"), let kind = spec.first.flatMap(Fault.init(argument:)),
                  let times, times > 0
            else { throw ValidationError("--fault takes PATH=FAULT[@TIMES], got '\(entry)'") }
            server.inject(kind, path: parts[0], times: times)
        }
        if let urlFile {
            try Data((server.baseURL + "\n").utf8).write(to: URL(fileURLWithPath: urlFile), options: .atomic)
        }
        FileHandle.standardOutput.write(Data((server.baseURL + "\n").utf8))
        while true {
            try await Task.sleep(for: .seconds(3600))
        }
    }
}
