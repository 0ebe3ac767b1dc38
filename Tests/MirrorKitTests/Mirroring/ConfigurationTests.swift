import Foundation
import Testing
@testable import MirrorKit

@Suite("Configuration and client id files", .timeLimit(.minutes(1)))
struct ConfigurationTests {
    @discardableResult
    private func withFile<T>(_ text: String, _ body: (String) throws -> T) async throws -> T {
        try await TestSupport.withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("file").path
            try TestSupport.write(Array(text.utf8), to: path)
            return try body(path)
        }
    }

    @Test func theExampleConfigLoads() throws {
        let path = TestSupport.fixtures.deletingLastPathComponent().appendingPathComponent("config.example.json").path
        let configuration = try MirrorConfiguration.load(from: path)
        #expect(configuration.apiBase == "https://api.imgur.com")
        #expect(configuration.mode == .skipIfExists)
    }

    /// The hand-written decoder reads every spelling the command line takes, into the settings.
    @Test func theDefaultConfigIsTheUsersThenTheSystems() {
        let all: Set<String> = ["/x/mirror/config.json", "/home/a/.config/mirror/config.json", "/etc/mirror/config.json"]
        let find = { (environment: [String: String], present: Set<String>) in
            MirrorConfiguration.defaultPath(environment: environment, exists: { present.contains($0) })
        }
        #expect(find(["XDG_CONFIG_HOME": "/x", "HOME": "/home/a"], all) == "/x/mirror/config.json")
        #expect(find(["HOME": "/home/a"], all) == "/home/a/.config/mirror/config.json")
        // A relative XDG_CONFIG_HOME counts as unset; no user file leaves the system's.
        #expect(find(["XDG_CONFIG_HOME": "x", "HOME": "/home/a"], all) == "/home/a/.config/mirror/config.json")
        #expect(find(["XDG_CONFIG_HOME": "/x"], ["/etc/mirror/config.json"]) == "/etc/mirror/config.json")
        #expect(find([:], []) == nil)
    }

    @Test func theWARCKeysLoadAndASizeTooSmallIsRefused() async throws {
        try await withFile(#"{"warc": "~/archive", "warcMaxSize": "500M"}"#) { path in
            let settings = try RunSettings(file: MirrorConfiguration.load(from: path))
            #expect(settings.warc == HomeDirectory.expandingTilde(in: "~/archive") && settings.warc?.hasPrefix("/") == true)
            #expect(settings.warcMaxSize == 500 << 20)
        }
        try await withFile(#"{"warcMaxSize": "10k"}"#) { path in
            #expect(throws: MirrorError.self) { try RunSettings(file: MirrorConfiguration.load(from: path)) }
        }
        #expect(try RunSettings(file: MirrorConfiguration()).warcMaxSize == 1 << 30)
    }

    @Test func durationsAndModesLoadIntoTheSettings() async throws {
        try await withFile(#"{"maxWait": "5m", "maxDuration": 3000, "mode": "newFile", "sort": "top"}"#) { path in
            let settings = try RunSettings(file: MirrorConfiguration.load(from: path))
            #expect(settings.maxWait == .seconds(300))
            #expect(settings.deadline == .seconds(3000))
            #expect(settings.mode == .newFile)
            #expect(settings.crawl("cats").sort == .top)
        }
        for zero in [#"0"#, #""0s""#, #""0""#] {
            try await withFile(#"{"maxWait": \#(zero), "mode": "new-file"}"#) { path in
                let settings = try RunSettings(file: MirrorConfiguration.load(from: path))
                #expect(settings.maxWait == .zero, "\(zero)")
                #expect(settings.mode == .newFile)
            }
        }
        try await withFile(#"{"maxWait": true}"#) { path in
            let error = #expect(throws: MirrorError.self) { try MirrorConfiguration.load(from: path) }
            #expect(error?.description.contains("'maxWait' must be a duration such as \"50m\" or a number of seconds") == true, "\(String(describing: error))")
        }
    }

    @Test func theSharedStateKeysAreCheckedAndNamed() async throws {
        try await withFile(#"{"state":"postgresql://u:s3cret@db.example/mirror","leaseSeconds":10}"#) { path in
            let settings = try RunSettings(file: MirrorConfiguration.load(from: path))
            #expect(settings.postgres?.description == "postgresql://u@db.example:5432/mirror")
            #expect(settings.leaseDuration == .seconds(10))
            #expect(settings.clusterMaxPerHost == RunSettings.Defaults.clusterMaxPerHost)
        }
        try await withFile(#"{"state":"postgresql://u:s3cret@db.example"}"#) { path in
            let error = #expect(throws: MirrorError.self) { try MirrorConfiguration.load(from: path) }
            #expect(error?.description.contains("config file \(path): 'state' must be a postgresql://") == true, "\(String(describing: error))")
            #expect(error?.description.contains("s3cret") == false)
        }
        try await withFile(#"{"state":"postgresql://u@db.example/mirror","mode":"new-file"}"#) { path in
            let error = #expect(throws: MirrorError.self) { try RunSettings(file: MirrorConfiguration.load(from: path)) }
            #expect(error?.description.contains("mode new-file is for one machine") == true, "\(String(describing: error))")
        }
        try await withFile(#"{"leaseSeconds":1}"#) { path in
            #expect(throws: MirrorError.configuration("config file \(path): 'leaseSeconds' must be 2 to 3600")) {
                try MirrorConfiguration.load(from: path)
            }
        }
    }

    @Test func anUnknownKeyIsNamed() async throws {
        try await withFile(#"{"apiBase":"https://a.example","concurency":4}"#) { path in
            #expect(throws: MirrorError.configuration("config file \(path): unknown key 'concurency'")) {
                try MirrorConfiguration.load(from: path)
            }
        }
    }

    @Test func aValueOfTheWrongTypeIsNamed() async throws {
        try await withFile(#"{"pages":"three"}"#) { path in
            #expect(throws: MirrorError.configuration("config file \(path): expected Int at pages")) {
                try MirrorConfiguration.load(from: path)
            }
        }
    }

    @Test func aBadEnumValueAndABadURLAreRefused() async throws {
        try await withFile(#"{"sort":"sideways"}"#) { path in
            #expect(throws: MirrorError.self) { try MirrorConfiguration.load(from: path) }
        }
        try await withFile(#"{"mediaBase":"file:///tmp"}"#) { path in
            #expect(throws: MirrorError.configuration(
                "config file \(path): 'mediaBase' must be an http or https URL, got 'file:///tmp'")) {
                try MirrorConfiguration.load(from: path)
            }
        }
    }

    @Test func aMaxFileSizeIsASize() async throws {
        try await withFile(#"{"maxFileSize": "500M"}"#) { path in
            let configuration = try MirrorConfiguration.load(from: path)
            #expect(configuration.maxFileSize == "500M")
        }
        try await withFile(#"{"maxFileSize": "lots"}"#) { path in
            let error = #expect(throws: MirrorError.self) { try MirrorConfiguration.load(from: path) }
            #expect(error?.description == "config file \(path): 'maxFileSize' must be a size such as 4G or 500M, got 'lots'")
        }
    }

    @Test func notJSONAtAll() async throws {
        try await withFile("apiBase = 1") { path in
            #expect(throws: MirrorError.configuration("config file \(path): not valid JSON (line 1, column 1: expected a value, found 'a')")) {
                try MirrorConfiguration.load(from: path)
            }
        }
    }

    /// A mistake in a config file edited by hand is named where it is, as jq and python -m json.tool do.
    @Test(arguments: [
        ("{\n  \"concurrency\": 4\n  \"mode\": \"new-file\"\n}\n", "line 3, column 3: expected ',' or '}', found '\"'"),
        ("{\n  \"mode\": \"new-file,\n  \"concurrency\": 4\n}\n", "line 2, column 21: a string runs past the end of its line"),
        ("{\n  \"concurrency\": 4,\n  \"mode\": new-file\n}\n", "line 3, column 11: expected 'null'"),
        ("{\"concurrency\": 4}}", "line 1, column 19: text after the end of the document"),
        ("{\"sources\": {\"cats\": {\"sort\": \"top\"}", "line 1, column 37: the text ends inside an object"),
    ])
    func aSyntaxErrorIsNamedWhereItIs(text: String, place: String) async throws {
        try await withFile(text) { path in
            #expect(throws: MirrorError.configuration("config file \(path): not valid JSON (\(place))")) {
                try MirrorConfiguration.load(from: path)
            }
        }
    }

    @Test func readsAClientIDTrimmed() async throws {
        let id = try await withFile("  abc123def\n") { path in try ClientIDFile.read(path) }
        #expect(id == "abc123def")
    }

    @Test func anEmptyOrMissingClientIDFileIsAClearError() async throws {
        try await withFile("\n") { path in
            #expect(throws: MirrorError.clientIDFile(path: path, problem: "is empty")) { try ClientIDFile.read(path) }
        }
        #expect(throws: MirrorError.clientIDFile(path: "/nonexistent/id", problem: "does not exist")) {
            try ClientIDFile.read("/nonexistent/id")
        }
        try await withFile("Client-ID: abc\n") { path in
            #expect(throws: MirrorError.self) { try ClientIDFile.read(path) }
        }
    }

    @Test func aClientIDFileIsOneShortLineAndNeverWaitedOn() async throws {
        try await withFile(String(repeating: "a", count: 5000)) { path in
            #expect(throws: MirrorError.clientIDFile(path: path, problem: "is larger than 4 KiB; a Client-ID is one short line")) {
                try ClientIDFile.read(path)
            }
        }
        try await withFile("abc123\ndef456\n") { path in
            #expect(throws: MirrorError.clientIDFile(path: path, problem: "holds more than one line; a Client-ID is one line")) {
                try ClientIDFile.read(path)
            }
        }
        // A FIFO with no writer would hold the run forever: refused at once.
        try await TestSupport.withTemporaryDirectory { dir in
            let fifo = dir.appendingPathComponent("client-id").path
            #expect(mkfifo(fifo, 0o600) == 0)
            #expect(throws: MirrorError.clientIDFile(path: fifo, problem: "is not a regular file")) { try ClientIDFile.read(fifo) }
        }
    }

    @Test func aConfigFileOverAMebibyteIsRefused() async throws {
        try await withFile("{\"pages\": 1" + String(repeating: " ", count: 1 << 20) + "}") { path in
            #expect(throws: MirrorError.configuration("config file \(path): is larger than 1 MiB; no config file is that large")) {
                try MirrorConfiguration.load(from: path)
            }
        }
    }
}
