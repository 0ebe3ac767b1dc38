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

    @Option(help: "Send every media file no faster than this many bytes per second on each connection, as a CDN that limits connections does.")
    var mediaThrottle: Int?

    @Option(help: ArgumentHelp(
        "A tag generated in the shape of a real one, as NAME=PAGESxPER_PAGE[:ALBUM_EVERY[:IMAGES_PER_ALBUM[:BYTES]]] (repeatable), e.g. cats=182x60:5:3: every ALBUM_EVERY-th entry an album whose images the page does not embed."))
    var generatedTag: [String] = []

    @Option(help: "An hourly API budget of this many calls that refills only on GET /_fixture/refill?calls=N (for scripts that play out several hours).")
    var apiBudget: Int?

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
        if let mediaThrottle {
            guard mediaThrottle > 0 else { throw ValidationError("--media-throttle takes a rate above 0") }
            server.throttleMedia(bytesPerSecond: mediaThrottle)
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
        for entry in generatedTag {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            let shape = parts.count == 2 ? parts[1].split(separator: ":").map(String.init) : []
            let size = shape.first?.split(separator: "x").compactMap { Int($0) } ?? []
            let numbers = shape.dropFirst().compactMap { Int($0) }
            guard parts.count == 2, !parts[0].isEmpty, size.count == 2, size.allSatisfy({ $0 > 0 }),
                  numbers.count == shape.count - 1, numbers.count <= 3, numbers.allSatisfy({ $0 >= 0 }),
                  numbers.count < 2 || numbers[1] > 0, numbers.count < 3 || numbers[2] > 0
            else { throw ValidationError("--generated-tag takes NAME=PAGESxPER_PAGE[:ALBUM_EVERY[:IMAGES[:BYTES]]], got '\(entry)'") }
            server.addGeneratedTag(
                parts[0], pages: size[0], perPage: size[1], albumEvery: numbers.first ?? 5,
                imagesPerAlbum: numbers.dropFirst().first ?? 3, imageSize: numbers.dropFirst(2).first ?? 4096)
        }
        if let apiBudget {
            server.setRateLimit(userRemaining: apiBudget, userReset: 1, userLimit: apiBudget, refills: false)
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
