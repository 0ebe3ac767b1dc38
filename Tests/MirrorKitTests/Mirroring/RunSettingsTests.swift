import Foundation
import Testing
@testable import MirrorKit

@Suite("Settings resolved once: the config file, the flags over it, the defaults")
struct RunSettingsTests {
    @Test func aFlagWinsOverTheFileAndTheDefaultsFillTheRest() throws {
        var file = MirrorConfiguration()
        file.concurrency = 3
        file.maxWait = "60"
        file.mode = .newFile
        file.metricsFile = "~/mirror.prom"
        var flags = MirrorConfiguration()
        flags.concurrency = 9
        flags.metadata = true
        let settings = try RunSettings(file: file, flags: flags)
        #expect(settings.concurrency == 9)
        #expect(settings.maxWait == .seconds(60))
        #expect(settings.mode == .newFile)
        #expect(settings.metadata)
        #expect(settings.metricsFile == NSString(string: "~/mirror.prom").expandingTildeInPath)
        #expect(settings.retry.maxAttempts == RunSettings.Defaults.retries)
        #expect(settings.apiBase == RunSettings.Defaults.apiBase)
        #expect(settings.progress == .auto && settings.logFormat == .text)
        #expect(settings.deadline == nil)
    }

    @Test func theDefaultsStandInOnePlace() throws {
        let settings = try RunSettings()
        // What a library user gets without RunSettings is what the command line gets.
        let plain = MirrorDriver.Settings()
        #expect(plain.concurrency == settings.concurrency && settings.concurrency == RunSettings.Defaults.concurrency)
        #expect(plain.mode == settings.mode)
        #expect(plain.retry.maxAttempts == settings.retry.maxAttempts)
        #expect(settings.crawl("cats").sort == RunSettings.Defaults.sort)
        #expect(ImgurClient.Politeness().maxWait == settings.maxWait)
        #expect(DownloadScheduler.Configuration().maxConcurrent == settings.concurrency)
    }

    /// `--retries` bounds the API's calls as it does files' downloads (README: one policy).
    @Test func retriesBoundAPICallsToo() throws {
        var flags = MirrorConfiguration()
        flags.retries = 2
        #expect(try RunSettings(flags: flags).politeness.retry.maxAttempts == 2)
        #expect(try RunSettings(flags: MirrorConfiguration()).politeness.retry.maxAttempts == RunSettings.Defaults.retries)
    }

    @Test func aBadValueIsNamedAsItWasGiven() throws {
        var flags = MirrorConfiguration()
        flags.maxWait = "-1"
        #expect(throws: MirrorError.configuration("--max-wait must be a duration such as 5m, 90s or 300 (seconds), or 0 to never wait, got '-1'")) { try RunSettings(flags: flags) }
        flags = MirrorConfiguration()
        flags.maxApiRate = 0
        #expect(throws: MirrorError.configuration("--max-api-rate must be at least 0.001 (a call every 1,000 seconds)")) { try RunSettings(flags: flags) }
        // A rate so small that the wait between calls would overflow a duration is refused, not a crash.
        flags.maxApiRate = 1e-30
        #expect(throws: MirrorError.configuration("--max-api-rate must be at least 0.001 (a call every 1,000 seconds)")) { try RunSettings(flags: flags) }
        var file = MirrorConfiguration()
        file.maxWait = "-1"
        #expect(throws: MirrorError.configuration("config file c.json: 'maxWait' must be a duration such as 5m, 90s or 300 (seconds), or 0 to never wait, got '-1'")) {
            try file.validate(origin: .file("c.json"))
        }
        flags = MirrorConfiguration()
        flags.metricsFile = "/var/lib/textfile/"
        #expect(throws: MirrorError.configuration("--metrics-file must name a file, got '/var/lib/textfile/'")) {
            try RunSettings(flags: flags)
        }
    }

    @Test func theNewKeysLoadFromAConfigFile() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("c.json").path
            try TestSupport.write(Array(#"{"progress":"never","logFormat":"json","metadata":true,"metricsFile":"/tmp/m.prom"}"#.utf8), to: path)
            let settings = try RunSettings(file: try MirrorConfiguration.load(from: path))
            #expect(settings.progress == .never && settings.logFormat == .json && settings.metadata)
            #expect(settings.metricsFile == "/tmp/m.prom")
            try TestSupport.write(Array(#"{"logFormat":"xml"}"#.utf8), to: path)
            #expect(throws: MirrorError.self) { try MirrorConfiguration.load(from: path) }
        }
    }

    @Test func aFlagTurnsOffWhatTheFileTurnsOnAndAlwaysProgressDoesNotGoWithJSON() throws {
        var file = MirrorConfiguration()
        file.metadata = true
        var flags = MirrorConfiguration()
        flags.metadata = false
        #expect(try RunSettings(file: file, flags: flags).metadata == false)
        file = MirrorConfiguration()
        file.logFormat = .json
        flags = MirrorConfiguration()
        flags.progress = .always
        #expect(throws: MirrorError.self) { try RunSettings(file: file, flags: flags) }
        flags.logFormat = .json
        #expect(throws: MirrorError.self) { try flags.validate(origin: .flags) }
    }
}

@Suite("A source's own settings: the config's sources, under the flags")
struct SourceSettingsResolutionTests {
    @Test func aSourceTakesItsOwnOverTheFileAndTheFlagsOverBoth() throws {
        var file = MirrorConfiguration()
        file.sort = .top
        file.thumbnail = .medium
        file.exec = "/bin/true"
        var cats = MirrorConfiguration()
        cats.sort = .viral
        cats.thumbnail = .skipped
        cats.mode = .newFile
        cats.execShell = "echo saved"
        var feed = MirrorConfiguration()
        feed.filter = ["size<5M"]
        feed.since = "2026-01-01"
        file.sources = ["#cats": cats, "https://example.org/feed.atom": feed]
        var flags = MirrorConfiguration()
        flags.thumbnail = .large

        let settings = try RunSettings(file: file, flags: flags)
        let own = settings.forSource("tag cats")
        #expect(own.sort == .viral && own.mode == .newFile)
        #expect(own.thumbnail == .large, "a flag given wins over the source's own")
        #expect(own.hook?.command == ["/bin/sh", "-c", "echo saved"], "the source's execShell replaces the file's exec")
        let other = settings.forSource("tag dogs")
        #expect(other.sort == .top && other.mode == .skipIfExists && other.thumbnail == .large)
        #expect(settings.forSource("feed https://example.org/feed.atom").filter.since != nil)
        #expect(settings.forSource("feed https://example.org/other.atom").filter.isEmpty)
        #expect(settings.imgurDrivers().keys.sorted() == ["feed https://example.org/feed.atom", "tag cats"])
        #expect(settings.imgurDrivers()["tag cats"]?.mode == .newFile)
    }

    /// A login in one source's own media base serves that host's requests, as the run's does.
    @Test func aSourcesOwnMediaBaseLoginServesItsRequests() throws {
        var file = MirrorConfiguration()
        var cats = MirrorConfiguration()
        cats.mediaBase = "https://reader:s3cret@media.example"
        file.sources = ["cats": cats]
        let settings = try RunSettings(file: file, flags: MirrorConfiguration())
        #expect(settings.forSource("tag cats").mediaBase == "https://media.example")
        #expect(settings.engine.credentials.credentials(for: "https://media.example/abc.jpg") == URLCredentials(user: "reader", password: "s3cret"))
        #expect(settings.engine.credentials.credentials(for: "https://other.example/abc.jpg") == nil)
    }

    @Test func aSourceKeyThatNamesNothingOrABadValueIsRefusedBeforeTheRun() throws {
        var file = MirrorConfiguration()
        var bad = MirrorConfiguration()
        bad.since = "2026-02-01"
        bad.until = "2026-01-01"
        file.sources = ["cats": bad]
        let error = #expect(throws: MirrorError.self) { try RunSettings(file: file) }
        #expect(error?.description.contains("sources 'cats'") == true, "\(String(describing: error))")
        file.sources = ["not a source!": MirrorConfiguration()]
        let nothing = #expect(throws: MirrorError.self) { try RunSettings(file: file) }
        #expect(nothing?.description.contains("names no source") == true, "\(String(describing: nothing))")
        file.sources = ["cats": MirrorConfiguration(), "#cats": MirrorConfiguration()]
        let twice = #expect(throws: MirrorError.self) { try RunSettings(file: file) }
        #expect(twice?.description.contains("both name tag cats") == true, "\(String(describing: twice))")
    }

    @Test func aFeedFileIsNamedAsTheFeedCommandNamesIt() throws {
        var file = MirrorConfiguration()
        var own = MirrorConfiguration()
        own.filter = ["size<1M"]
        file.sources = ["/srv//feeds/./a/../x.atom": own]
        let settings = try RunSettings(file: file)
        #expect(!settings.forSource("feed /srv/feeds/x.atom").filter.isEmpty)
    }
}
