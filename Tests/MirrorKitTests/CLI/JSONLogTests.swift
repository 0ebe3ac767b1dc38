import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

@Suite("JSON logs on standard error", .timeLimit(.minutes(2)))
struct JSONLogTests {
    /// Every line of `stderr` as a JSON object, numbers written as text; records an issue for any
    /// line that is not one.
    private func objects(_ stderr: String) -> [[String: String]] {
        stderr.split(separator: "\n").compactMap { line in
            guard let raw = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                Issue.record("not a JSON object: \(line)")
                return nil
            }
            let object = raw.compactMapValues { value -> String? in
                switch value {
                case let text as String: text
                case let number as NSNumber: number.stringValue
                default: nil
                }
            }
            for key in ["time", "level", "message"] where object[key] == nil { Issue.record("no \(key): \(line)") }
            if let time = object["time"], (try? Date(time, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) == nil {
                Issue.record("time is not ISO 8601: \(time)")
            }
            return object
        }
    }

    @Test func everyLineIsAnObjectWithFieldsAndTheClientIDAppearsNowhere() async throws {
        try await TestSupport.withServer { server in
            let clientID = "s3cr3tClientID42"
            server.setAcceptedClientID(clientID)
            server.inject(.respond(status: 500), path: "/Gh7iJ9k.png")
            try await TestSupport.withTemporaryDirectory { dir in
                let idFile = dir.appendingPathComponent("id").path
                try TestSupport.write(Array(clientID.utf8), to: idFile)
                let run = try await MirrorProcess.run([
                    "cats", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile,
                    "--api-base", server.baseURL, "--media-base", server.baseURL, "--retries", "1",
                    "--log-format", "json", "--verbose",
                ])
                #expect(run.status == 1, "\(run.stderr)")
                #expect(!(run.stdout + run.stderr).contains(clientID))
                let lines = objects(run.stderr)
                #expect(lines.count > 20)
                let failure = try #require(lines.first { $0["level"] == "error" && $0["url"]?.hasSuffix("/Gh7iJ9k.png") == true })
                #expect(failure["status"] == "500")
                // Counts are numbers, not strings.
                #expect(run.stderr.contains(#""status":500"#))
                #expect(failure["message"]?.contains("HTTP 500") == true)
                let saved = try #require(lines.first { $0["message"] == "saved full/aB3dE5f.jpg" })
                #expect(saved["file"] == "full/aB3dE5f.jpg")
                #expect(saved["url"] == "\(server.baseURL)/aB3dE5f.jpg")
                #expect(Int(saved["bytes"] ?? "") == server.content(of: "/aB3dE5f.jpg")?.count)
                // The run's end, as an event a log shipper can alert on.
                let end = try #require(lines.last)
                #expect(end["exit_status"] == "1" && end["failed"] == "1" && end["source"] == "tag cats", "\(end)")
                // The summary still goes to standard output, for people and scripts alike.
                #expect(run.stdout.hasPrefix("cats: 28 files: 25 downloaded") && run.stdout.contains("1 failed"), "\(run.stdout)")
            }
        }
    }

    @Test func aBadConfigIsAJSONLineToo() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let config = dir.appendingPathComponent("config.json").path
            try TestSupport.write(Array(#"{"concurency": 4}"#.utf8), to: config)
            let run = try await MirrorProcess.run([
                "cats", "--out", dir.appendingPathComponent("out").path, "--config", config, "--log-format", "json",
            ])
            #expect(run.status == 78)
            let lines = objects(run.stderr)
            #expect(lines.count == 1)
            #expect(lines.first?["level"] == "error")
            #expect(lines.first?["message"] == "config file \(config): unknown key 'concurency'")
        }
    }

    @Test func textThatCouldSteerATerminalIsEscapedInsideTheStrings() async throws {
        try await TestSupport.withServer { server in
            let feed = """
                <?xml version="1.0"?>
                <rss version="2.0"><channel><title>t</title>
                <item><title>Evil\u{202E}txt.exe\u{9B}2J\nmirror: forged</title><guid>g1</guid>
                <enclosure url="%zz://\u{202E}x" type="audio/mpeg"/></item>
                </channel></rss>
                """
            server.inject(.respond(status: 200, headers: ["Content-Type": "application/rss+xml"], body: feed), path: "/feeds/hostile.rss")
            try await TestSupport.withTemporaryDirectory { dir in
                let run = try await MirrorProcess.run([
                    "feed", "\(server.baseURL)/feeds/hostile.rss", "--out", dir.appendingPathComponent("out").path,
                    "--log-format", "json",
                ])
                #expect(run.status == 1, "\(run.stderr)")
                #expect(!run.stderr.unicodeScalars.contains { $0 != "\n" && DisplayControl.contains($0) })
                let messages = objects(run.stderr).compactMap { $0["message"] }
                // Decoded, the message is exactly what was logged: the raw characters are back.
                #expect(messages.contains { $0.contains("Evil\u{202E}txt.exe\u{9B}2J\nmirror: forged") }, "\(messages)")
            }
        }
    }
}
